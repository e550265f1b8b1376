"""Huang et al. 2019 (arXiv:1912.09132) Figs. 4 and 5: variance against mean of the gradient
metrics, one point per layer."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...figures.style import keep_rate_colour as _colour
from ...measure.gradient_runs import matrix
from .analysis import expected_power, fig4_groups, fig5_groups, fit_power, mean_var

MARKERS = {"linear": "o", "relu": "s", "tanh": "^", "hard_tanh": "D"}
WIDTH_COLOURS = ("tab:purple", "tab:blue", "tab:green", "tab:orange", "tab:red", "tab:brown")
PANELS = (
    ("g_aa", r"(a) $V_{aa}^l$ vs $m_{aa}^l$"),
    ("g_ab", r"(b) $V_{ab}^l$ vs $m_{ab}^l$"),
    ("g_ab_abs", r"(c) $\tilde V_{ab}^l$ vs $\tilde m_{ab}^l$"),
)


def _reference(ax, m: np.ndarray, V: np.ndarray, power: float) -> None:
    """The law ``V ∝ m^power`` through the median of ``V / m^power`` of the plotted points."""
    ok = (m > 0) & (V > 0)
    if not ok.any():
        return
    c = np.exp(np.median(np.log(V[ok]) - power * np.log(m[ok])))
    x = np.geomspace(m[ok].min(), m[ok].max(), 50)
    ax.plot(
        x, c * x**power, "-", color="k", lw=1.6, zorder=5, label=rf"$V \propto m^{{{power:g}}}$"
    )


def _panels(runs: pd.DataFrame, theory: pd.DataFrame, groups: list[dict], style, label, title: str):
    """Three log-log panels (g_aa, g_ab, g~_ab) of ``V^l`` against ``m^l`` per group;
    ``style(i, g) -> (colour, marker)``, ``label(g, p) -> str`` (``p``: fitted power)."""
    power = expected_power(theory)
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.4), constrained_layout=True)
    for ax, (metric, t) in zip(axes, PANELS):
        ms, Vs = [], []
        for i, g in enumerate(groups):
            v, _ = matrix(runs, g, metric)
            if len(v) < 2:
                continue
            m, V = mean_var(v)
            p = fit_power(m, V)[0]
            c, mk = style(i, g)
            ok = (m > 0) & (V > 0)
            ax.plot(
                m[ok],
                V[ok],
                ls="none",
                marker=mk,
                ms=3.2,
                mfc="none",
                mew=0.8,
                color=c,
                alpha=0.8,
                label=label(g, p),
            )
            ms.append(m[ok])
            Vs.append(V[ok])
        if ms:
            _reference(ax, np.concatenate(ms), np.concatenate(Vs), power)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("mean $m^l$ over instantiations")
        ax.set_ylabel("variance $V^l$ over instantiations")
        ax.set_title(t, fontsize=11)
        ax.grid(True, which="major", alpha=0.25)
        ax.legend(
            fontsize=7,
            ncol=1 if len(groups) <= 6 else 2,
            loc="upper left",
            title="fitted power p",
            title_fontsize=7,
            markerscale=1.5,
            handletextpad=0.3,
            columnspacing=0.8,
            framealpha=0.85,
        )
    fig.suptitle(title, fontsize=12)
    return fig


def fig4(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """000 Fig. 4: colour per keep rate, marker per activation, at the Fig. 4 width."""
    groups = fig4_groups(runs)
    rhos = sorted({g["keep_rate"] for g in groups}, reverse=True)

    def style(i, g):
        return _colour(g["keep_rate"], rhos.index(g["keep_rate"])), MARKERS.get(
            g["activation"], "x"
        )

    def label(g, p):
        return f"{g['activation']}, ρ={g['keep_rate']:g}: p={p:.2f}"

    g0 = groups[0] if groups else {"width": "?", "depth": "?"}
    return _panels(
        runs,
        theory,
        groups,
        style,
        label,
        f"Variance vs mean of the gradient metrics per layer, L = {g0['depth']}, "
        f"N = {g0['width']}, σ_b² = 0.1 (000 Fig. 4); colour: keep rate ρ, marker: activation",
    )


def fig5(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """000 Fig. 5: tanh, ρ = 0.9, colour per width."""
    groups = fig5_groups(runs, p)

    def style(i, g):
        return WIDTH_COLOURS[i % len(WIDTH_COLOURS)], "o"

    def label(g, p):
        return f"N={g['width']}: p={p:.2f}"

    g0 = (
        groups[0]
        if groups
        else {"activation": "?", "sigma_w2": np.nan, "keep_rate": np.nan, "depth": "?"}
    )
    return _panels(
        runs,
        theory,
        groups,
        style,
        label,
        f"Variance vs mean of the gradient metrics per layer, {g0['activation']}, "
        f"σ_w² = {g0['sigma_w2']:g}, ρ = {g0['keep_rate']:g}, L = {g0['depth']} "
        "(000 Fig. 5); colour: width N",
    )
