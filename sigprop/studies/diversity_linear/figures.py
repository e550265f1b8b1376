"""004 Fig. 2 and the synthetic panels of Figs. 3(a)/4(a) (Chen, Wang, Zhao, Papailiopoulos &
Koutris 2018, arXiv:1806.03791): gradient diversity, largest batch size and epochs to the loss
target of linear FC nets."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import Normalize

from .analysis import batch_table, init_table, net_table, theory_ratio


def _colours(depths):
    cmap = plt.get_cmap("viridis")
    ds = sorted(depths)
    return {d: cmap(i / max(1, len(ds) - 1) * 0.9) for i, d in enumerate(ds)}


def _log2_axis(ax, which="x"):
    getattr(ax, f"set_{which}scale")("log", base=2)


def fig2(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """(a) E-ratio at initialization with Thm. 6 / Thm. 3; (b) diversity during training;
    (c) largest batch within the budget against width; (d) against diversity."""
    budget = float(p.analysis.fig2_epochs)
    it = init_table(runs, theory)
    nt = net_table(runs, p.analysis)
    depths = sorted(set(nt.depth) | set(it.depth))
    col = _colours(depths)
    fig, axes = plt.subplots(1, 4, figsize=(18, 4.3), constrained_layout=True)
    ax = axes[0]
    if len(it):
        n = float(it.n.iloc[0])
        for dep, g in it.groupby("depth"):
            c = col[dep]
            ax.errorbar(
                g.width,
                g.rho,
                yerr=g.rho_se,
                fmt="o",
                color=c,
                ms=4,
                capsize=2,
                label=f"depth {dep}",
            )
            t = theory[(theory.depth == dep) & (theory.quantity == "bound_thm3")]
            ws = t.width[(t.width >= g.width.min()) & (t.width <= g.width.max())].to_numpy()
            if len(ws):
                t6, b3 = theory_ratio(theory, ws, int(dep), n)
                ax.plot(ws, t6, color=c, lw=1.3)
                ax.plot(ws, b3, color=c, lw=1.0, ls="--")
        ax.set_title(
            f"(a) init, 004 setting: n x ratio of means (n = {int(n)}, d = {int(it.d.iloc[0])})\n"
            "solid: Thm. 6, dashed: Thm. 3 bound",
            fontsize=9,
        )
        ax.set_ylabel(r"$\rho = E[n\sum_i\|\nabla f_i\|^2] / E[\|\sum_i\nabla f_i\|^2]$")
    else:
        ax.set_title("(a) no initialization draws", fontsize=9)
    ax = axes[1]
    for dep, g in nt.groupby("depth"):
        ax.errorbar(
            g.width,
            g.div_train,
            yerr=g.div_train_se,
            fmt="o-",
            color=col[dep],
            ms=4,
            capsize=2,
            label=f"depth {dep}",
        )
        ax.plot(g.width, g.div_init, ":", color=col[dep], lw=1.2)
    w = p.analysis.div_window
    ax.set_title(
        f"(b) gradient diversity $\\Delta_S$ over matched progress 0-{w.progress:g}\n"
        "(mean over runs); dotted: the same nets at initialization",
        fontsize=9,
    )
    ax.set_ylabel(r"$\Delta_S(w)$")
    ax = axes[2]
    b_min = float(runs.batch_size.min()) / 2
    for i, (dep, g) in enumerate(nt.groupby("depth")):
        y = g.largest_batch.fillna(b_min)
        shift = 2.0 ** (0.06 * (i - (len(depths) - 1) / 2))  # separate equal values
        ax.plot(g.width, y * shift, "o-", color=col[dep], ms=4, label=f"depth {dep}")
        miss = g.largest_batch.isna()
        if miss.any():
            ax.plot(g.width[miss], y[miss] * shift, "x", color=col[dep], ms=7)
    ax.set_title(
        f"(c) largest batch reaching the loss target within {budget:g} epochs\n"
        f"(x at {b_min:g}: none; depths offset slightly)",
        fontsize=9,
    )
    ax.set_ylabel("largest batch size")
    ax = axes[3]
    shown = nt[np.isfinite(nt.div_train) & (nt.div_train > 0)]
    for dep, g in shown.groupby("depth"):
        ax.scatter(
            g.div_train,
            g.largest_batch.fillna(b_min),
            color=col[dep],
            s=12 + 4 * np.log2(g.width.astype(float)) ** 2,
            label=f"depth {dep}",
            edgecolor="k",
            lw=0.3,
        )
    ax.set_title("(d) largest batch vs diversity (Fig. 2(c));\nmarker size: width", fontsize=9)
    ax.set_xlabel(r"$\Delta_S(w)$ during training")
    ax.set_ylabel("largest batch size")
    if len(shown):
        ax.set_xscale("log")
    else:  # no run's measurements reach the window's end
        ax.text(
            0.5,
            0.5,
            "no net has runs that reach\nthe progress window",
            ha="center",
            va="center",
            transform=ax.transAxes,
            fontsize=8,
        )
    _log2_axis(ax, "y")
    for ax in axes[:3]:
        _log2_axis(ax, "x")
        ax.set_xlabel("width K")
        ax.set_yscale("log")
    _log2_axis(axes[2], "y")
    for ax in axes:
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, which="both")
    fig.suptitle("004 Fig. 2: linear FC nets on synthetic regression (square loss, float64)")
    return fig


def epochs_figure(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Epochs to the target against batch size per net (Fig. 3(a)) and the heatmap of Fig. 4(a)."""
    bt = batch_table(runs)
    nets = bt[["depth", "width"]].drop_duplicates().sort_values(["depth", "width"])
    one_per_depth = nets.groupby("depth").size().max() == 1
    groups = (
        [("all nets", nets)]
        if one_per_depth
        else [(f"depth {d}", g) for d, g in nets.groupby("depth")]
    )
    ncols = len(groups) + 1
    fig, axes = plt.subplots(
        1,
        ncols,
        figsize=(3.6 * ncols + 1.5, 4.0),
        constrained_layout=True,
        gridspec_kw={"width_ratios": [1] * len(groups) + [1.4]},
    )
    axes = np.atleast_1d(axes)
    widths = sorted(set(nets.width))
    cmap = plt.get_cmap("plasma")
    wcol = {w: cmap(i / max(1, len(widths) - 1) * 0.85) for i, w in enumerate(widths)}
    budget = float(bt.budget.max())
    for ax, (title, g) in zip(axes, groups):
        for net in g.itertuples():
            b = bt[(bt.width == net.width) & (bt.depth == net.depth)].sort_values("batch_size")
            med = b["median"].to_numpy(float)
            fin = np.isfinite(med)
            lo = np.where(np.isfinite(b["min"]), b["min"], budget)
            hi = np.where(np.isfinite(b["max"]), b["max"], budget)
            y = np.where(fin, med, budget)
            lab = f"K={net.width}" + (f", L={net.depth}" if one_per_depth else "")
            ax.errorbar(
                b.batch_size[fin],
                y[fin],
                yerr=[y[fin] - lo[fin], hi[fin] - y[fin]],
                fmt="o-",
                color=wcol[net.width],
                ms=4,
                capsize=2,
                label=lab,
            )
            if (~fin).any():
                ax.plot(b.batch_size[~fin], y[~fin], "o", mfc="none", color=wcol[net.width], ms=6)
        ax.axhline(budget, color="grey", lw=0.8, ls=":")
        _log2_axis(ax, "x")
        ax.set_yscale("log")
        ax.set_xlabel("batch size B")
        ax.set_ylabel("epochs to training loss 1e-12")
        ax.set_title(f"(a) {title}", fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3, which="both")
    ax = axes[-1]
    piv = bt.pivot_table(
        index=["depth", "width"], columns="batch_size", values="median", aggfunc="first"
    )
    val = np.log10(piv.to_numpy(float))
    fin = np.isfinite(val)
    im = ax.imshow(
        np.where(fin, val, np.nan),
        aspect="auto",
        cmap="magma_r",
        norm=Normalize(vmin=0, vmax=np.log10(budget)),
    )
    for i, j in zip(*np.nonzero(~fin)):
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", lw=0))
    ax.set_xticks(range(piv.shape[1]), [f"{c}" for c in piv.columns], rotation=45, fontsize=7)
    ax.set_yticks(range(piv.shape[0]), [f"L{d} K{w}" for d, w in piv.index], fontsize=7)
    ax.set_xlabel("batch size B")
    ax.set_title("(b) log10 median epochs (Fig. 4(a)); hatched: not reached", fontsize=9)
    fig.colorbar(im, ax=ax, label="log10 epochs")
    fig.suptitle(
        f"004 Figs. 3(a)/4(a) analogue: synthetic regression, linear FC nets, budget "
        f"{budget:g} epochs"
    )
    return fig
