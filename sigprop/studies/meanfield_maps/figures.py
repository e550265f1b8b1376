"""Huang et al. 2019 (arXiv:1912.09132) Fig. 1: one-layer length and correlation maps, theory
over simulation."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .analysis import summary

# the caption's colours: rho = 1 red, 0.7 green, 0.4 blue
COLOURS = {1.0: "tab:red", 0.7: "tab:green", 0.4: "tab:blue"}


def figure(runs: pd.DataFrame, theory: pd.DataFrame, p):
    panels = p.analysis.panels
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.0 * len(panels), 3.8), squeeze=False, constrained_layout=True
    )
    for ax, panel, letter in zip(axes[0], panels, "abcdefgh"):
        act, kind = panel.activation, panel.map
        s = summary(runs[runs.activation == act], theory, kind)
        t = theory[(theory.activation == act) & (theory.quantity == f"{kind}_map")]
        stars = theory[(theory.activation == act) & (theory.quantity == f"{kind}_star")]
        for i, (rho, g) in enumerate(s.groupby("keep_rate")):
            colour = COLOURS.get(round(rho, 3), f"C{i}")
            tc = t[np.isclose(t.keep_rate, rho)].sort_values("x")
            ax.plot(tc.x, tc.value, color=colour, lw=1.5, label=rf"$\rho$ = {rho:g}")
            ax.errorbar(g.x, g["mean"], yerr=g.se, fmt="o", ms=3.5, color=colour, capsize=2)
            star = stars[np.isclose(stars.keep_rate, rho)].value
            if len(star) and np.isfinite(star.iloc[0]):
                ax.plot(star.iloc[0], star.iloc[0], "D", color=colour, mec="k", ms=6, zorder=5)
        lim = [0, max(t.x.max(), s.x.max())] if kind == "q" else [0, 1.02]
        ax.plot(lim, lim, "k--", lw=0.8)
        sw, sb = s.sigma_w2.iloc[0], s.sigma_b2.iloc[0]
        ax.set_title(f"({letter}) {act}, $\\sigma_w^2$={sw:g}, $\\sigma_b^2$={sb:g}", fontsize=10)
        sym = "q" if kind == "q" else "c"
        ax.set_xlabel(f"${sym}^{{l-1}}$")
        ax.set_ylabel(f"${sym}^{{l}}$")
        ax.legend(fontsize=8)
    fig.suptitle("Length and correlation maps with dropout (000 Fig. 1)")
    return fig
