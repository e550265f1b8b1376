"""004 Figs. 1, 3, 4, 5 (Chen, Wang, Zhao, Papailiopoulos & Koutris 2018, arXiv:1806.03791):
epochs to a target accuracy against batch size for nets of equal weight count, the depth x batch
heat map, and the largest batch within an epoch budget with the Thm. 3 diversity bound drawn over
it.  The numbers come from :mod:`sigprop.studies.width_batch.analysis`."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .analysis import curves, diversity_bound, net_table, threshold

CMAP = plt.get_cmap("viridis")


def _net_label(r) -> str:
    if getattr(r, "head_depth", 0) and r.head_depth > 0:
        return f"head L={int(r.head_depth)}, K={int(r.head_width)}"
    return f"L={int(r.depth)}, K={int(r.width)}"


def _nets(c: pd.DataFrame) -> list[tuple]:
    keys = [k for k in ("depth", "width", "head_depth", "head_width") if k in c]  # within a panel
    return [
        tuple(k) for k in c[keys].drop_duplicates().sort_values(keys).itertuples(index=False)
    ], keys


def _panels(c: pd.DataFrame, n_rows: int = 1):
    panels = list(dict.fromkeys(c.panel))
    fig, axes = plt.subplots(
        n_rows, len(panels), figsize=(5.2 * len(panels), 4.2 * n_rows), squeeze=False
    )
    return fig, panels, axes


def epochs_curves(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Figs. 1 and 3: epochs to target vs batch size (log2), one curve per net, per panel."""
    c = curves(runs, p.analysis)
    factor = float(p.analysis.threshold_factor)
    fig, panels, axes = _panels(c)
    for ax, panel in zip(axes[0], panels):
        cp = c[c.panel == panel]
        nets, keys = _nets(cp)
        top = np.nanmax(cp.budget) * 1.3
        for i, net in enumerate(nets):
            d = cp.loc[(cp[keys] == pd.Series(net, index=keys)).all(axis=1)].sort_values(
                "batch_size"
            )
            col = CMAP(i / max(1, len(nets) - 1) * 0.9)
            lab = _net_label(d.iloc[0])
            ax.plot(d.batch_size, d.epochs, "o-", color=col, label=lab, ms=4)
            miss = d[d.epochs.isna()]
            ax.plot(miss.batch_size, np.full(len(miss), top), "^", mfc="none", color=col, ms=6)
            b_star = threshold(d.batch_size, d.epochs, factor)
            if np.isfinite(b_star):
                ax.axvline(b_star, color=col, ls=":", lw=0.8)
        ax.axhline(np.nanmax(cp.budget), color="0.6", lw=0.6, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size")
        ax.set_ylabel("epochs to target training accuracy")
        target = float(p.analysis.targets.get(panel, np.nan))
        ax.set_title(f"{panel}: target {target:.0%}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def epochs_heatmap(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Fig. 4: epochs to target by net (rows) and batch size (columns), per panel."""
    c = curves(runs, p.analysis)
    fig, panels, axes = _panels(c)
    for ax, panel in zip(axes[0], panels):
        cp = c[c.panel == panel].copy()
        nets, keys = _nets(cp)
        cp["net"] = [_net_label(r) for r in cp.itertuples()]
        order = [_net_label(pd.Series(n, index=keys)) for n in nets]
        grid = cp.pivot_table(index="net", columns="batch_size", values="epochs", dropna=False)
        grid = grid.reindex(order)
        im = ax.imshow(np.log10(grid.to_numpy(dtype=float)), cmap="magma_r", aspect="auto")
        for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
            ax.text(
                j,
                i,
                "–" if not np.isfinite(v) else f"{v:.3g}",
                ha="center",
                va="center",
                fontsize=7,
                color="0.5" if not np.isfinite(v) else "w",
            )
        ax.set_xticks(range(grid.shape[1]), [f"{int(b)}" for b in grid.columns], fontsize=7)
        ax.set_yticks(range(grid.shape[0]), grid.index, fontsize=7)
        ax.set_xlabel("batch size")
        ax.set_title(f"{panel}")
        fig.colorbar(im, ax=ax, label="log10 epochs to target")
    fig.tight_layout()
    return fig


def largest_batch_plot(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Fig. 5: largest batch reaching the target within each epoch budget, per net, with the
    004 Thm. 3 equal-width diversity bound (linear-net theory) on a second axis."""
    c = curves(runs, p.analysis)
    budgets = [float(x) for x in p.analysis.budgets]
    fig, panels, axes = _panels(c)
    for ax, panel in zip(axes[0], panels):
        nets = net_table(c[c.panel == panel], p.analysis)
        labels = [_net_label(r) for r in nets.itertuples()]
        x = np.arange(len(nets))
        floor = float(c.batch_size.min()) / 2  # "no batch reached the target in time"
        for i, bud in enumerate(budgets):
            y = nets[f"largest_within_{bud:g}"].to_numpy(dtype=float)
            col = CMAP(i / max(1, len(budgets) - 1) * 0.9)
            ax.plot(
                x,
                y,
                marker="o",
                ls=["-", "--", ":", "-."][i % 4],
                color=col,
                ms=8 - 2 * i,
                label=f"within {bud:g} epochs",
            )
            none = ~np.isfinite(y)
            ax.plot(x[none], np.full(none.sum(), floor), "x", color=col, ms=8 - 2 * i)
        ax.axhline(floor, color="0.7", lw=0.6)
        ax.text(x[0], floor, " none", va="bottom", fontsize=7, color="0.4")
        ax.set_yscale("log", base=2)
        ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("largest batch size reaching the target")
        ax.set_title(panel)
        arch, ds = nets.arch.iloc[0], nets.dataset.iloc[0]
        if arch == "fc":
            bound = [
                diversity_bound(arch, ds, int(r.width), int(r.depth)) for r in nets.itertuples()
            ]
            ax2 = ax.twinx()
            ax2.plot(x, bound, "k--", lw=1, label="Thm. 3 bound (theory)")
            ax2.set_ylabel("Thm. 3 diversity bound (linear nets)")
            ax2.legend(loc="lower right", fontsize=7)
        ax.legend(loc="upper left", fontsize=7)
    fig.tight_layout()
    return fig
