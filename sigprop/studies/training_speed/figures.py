"""Huang et al. 2019 (arXiv:1912.09132) Fig. 6: steps τ to reach test accuracy p against the
learning rate, per depth and keep rate."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.lines import Line2D

from . import speed
from .analysis import panels, theory_value

DEPTH_CMAP = LinearSegmentedColormap.from_list("black_green", ["#000000", "#1f9e3a", "#7bd86b"])
OUTLIER = "tab:blue"
CONTROLS = ["#6baed6", "#08519c"]  # ρ = 1 runs at the ρ < 1 comparison depths
LETTERS = "abcdefgh"
CENSORED_AT = 1.6  # censored runs are drawn at τ = CENSORED_AT · T (T: the step budget)


def _colours(pan: dict) -> dict:
    ds = pan["collapse"]
    cols = {d: DEPTH_CMAP(i / max(1, len(ds) - 1) * 0.85) for i, d in enumerate(ds)}
    if pan["outlier"] is not None:
        cols[pan["outlier"]] = OUTLIER
    for i, d in enumerate(pan.get("controls", [])):
        cols[d] = CONTROLS[i % len(CONTROLS)]
    return cols


def _label(depth: int, xi2: float, pan: dict) -> str:
    if depth in pan.get("controls", []):
        return f"L = {depth} (control)"
    if np.isfinite(xi2):
        return f"L = {depth} ({depth / xi2:.2g} $\\xi_2$)"
    return f"L = {depth}"


def _draw(ax, c: pd.DataFrame, pan: dict, by_depth: bool, xi2: float, faint: bool) -> None:
    cols = _colours(pan)
    T = float(c.steps.max())
    alpha = 0.55 if faint else 1.0
    for d in pan["depths"]:
        g = c[c.depth == d].sort_values("lr")
        x = 10 ** speed.x_of(g, by_depth)
        tau = np.where(g.tau.to_numpy() > 0, g.tau.to_numpy(), g.eval_every.to_numpy() / 2)
        reached = g.reached.to_numpy()
        # lines join neighbouring reached points only (a censored point breaks the line)
        y = np.where(reached, tau, np.nan)
        ax.plot(
            x,
            y,
            "-o",
            color=cols[d],
            ms=3.5 if faint else 4.5,
            lw=1.0 if faint else 1.6,
            alpha=alpha,
            label=None if faint else _label(d, xi2, pan),
        )
        cens = ~reached
        div = cens & (g.n_diverged.to_numpy() * 2 >= g.n_seeds.to_numpy())
        if cens.any():
            ax.scatter(
                x[cens & ~div],
                np.full((cens & ~div).sum(), CENSORED_AT * T),
                marker="^",
                facecolors="none",
                edgecolors=[cols[d]],
                s=22,
                alpha=alpha,
                lw=1.0,
            )
            ax.scatter(
                x[div],
                np.full(div.sum(), CENSORED_AT * T),
                marker="x",
                color=cols[d],
                s=18,
                alpha=alpha,
                lw=1.0,
            )
    ax.axhline(T, color="0.5", ls=":", lw=0.9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    lo = max(0.5, float(c.eval_every.min()) / 2)
    ax.set_ylim(lo * 0.8, CENSORED_AT * T * 1.6)
    ax.set_xlabel(r"$\eta L$" if by_depth else r"$\eta$")


def _dispersion_text(c: pd.DataFrame, pan: dict, an) -> str:
    cc = c[c.depth.isin(pan["collapse"])]
    kw = {"min_overlap": float(an.min_overlap_decades), "step": float(an.grid_step_decades)}
    d_eta = speed.dispersion(cc, False, **kw)["D"]
    d_etaL = speed.dispersion(cc, True, **kw)["D"]
    extra = pan["outlier"] is not None or pan.get("controls")
    tail = f" (L ≤ {max(pan['collapse'])})" if extra else ""
    return f"D(η) = {d_eta:.2f}, D(ηL) = {d_etaL:.2f}{tail}"


def tau_curves(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Top row: τ against the paper's scaling per keep rate; bottom row (faint): the other one."""
    an = p.analysis
    c = speed.curves(speed.tau_table(runs))
    pans = panels(c, an.control_depths, an.compare_deepest)
    n = len(pans)
    fig, axes = plt.subplots(
        2,
        n,
        figsize=(4.6 * n, 7.6),
        squeeze=False,
        gridspec_kw={"height_ratios": [2.2, 1.0]},
        constrained_layout=True,
    )
    T = int(c.steps.max())
    target = float(c.target_acc.iloc[0])
    for j, pan in enumerate(pans):
        rho = pan["keep_rate"]
        cr = c[np.isclose(c.keep_rate, rho)]
        xi2 = theory_value(theory, rho, "xi2")
        top, bottom = axes[0][j], axes[1][j]
        _draw(top, cr, pan, pan["by_depth"], xi2, faint=False)
        _draw(bottom, cr, pan, not pan["by_depth"], xi2, faint=True)
        scaling = r"$\tau = f(\eta L)$?" if pan["by_depth"] else r"$\tau = f(\eta)$?"
        top.set_title(f"({LETTERS[j]}) $\\rho$ = {rho:g}: {scaling}", fontsize=10)
        bottom.set_title("other scaling", fontsize=8, color="0.4")
        info = _dispersion_text(cr, pan, an)
        if np.isfinite(xi2):
            info += f"\n$6\\xi_2$ = {6 * xi2:.3g}, $12\\xi_2$ = {12 * xi2:.3g}"
        top.text(
            0.03,
            0.03,
            info,
            transform=top.transAxes,
            fontsize=7.5,
            va="bottom",
            bbox={"boxstyle": "round", "fc": "white", "ec": "0.8", "alpha": 0.85},
        )
        handles, labels = top.get_legend_handles_labels()
        handles += [
            Line2D([], [], marker="^", ls="none", mfc="none", mec="0.3"),
            Line2D([], [], marker="x", ls="none", color="0.3"),
        ]
        labels += [f"never reached (τ > {T})", "diverged"]
        top.legend(
            handles,
            labels,
            fontsize=7,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.16),
            ncol=2,
            frameon=False,
        )
    axes[0][0].set_ylabel(f"steps τ to test accuracy {target:g}")
    axes[1][0].set_ylabel("τ", color="0.4")
    r0 = runs.iloc[0]
    fig.suptitle(
        f"Training speed on $\\chi_1 = 1$: {r0.activation}, $\\sigma_b^2$ = {r0.sigma_b2:g}, "
        f"width {int(r0.width)}, batch {int(r0.batch_size)}, {r0.dataset}, "
        f"{r0.optimizer.upper()}, ≤ {T} steps (000 Fig. 6)",
        fontsize=11,
    )
    return fig
