"""Littwin & Wolf 2020 (arXiv:2001.10460) Fig. 2 (sampled NTK against the input angle) and the NTK
diagonal against depth (Eqs. 25, 29)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker

from .analysis import (
    RESNETS,
    angle_matrix,
    diag_families,
    diag_profile,
    groups,
    mean_se,
    roles,
    theory_angle,
    theory_diag,
)

WIDTH_COLOURS = ("tab:red", "tab:green")  # 001 Fig. 2: red narrow, green wide
MORE_COLOURS = ("tab:orange", "tab:blue", "tab:purple", "tab:brown")
ARCH_NAMES = {"resnet_fc": "ResNet", "densenet_fc": "DenseNet"}


def _width_colour(i: int, n: int) -> str:
    if i == 0:
        return WIDTH_COLOURS[0]
    if i == n - 1:
        return WIDTH_COLOURS[1]
    return MORE_COLOURS[(i - 1) % len(MORE_COLOURS)]


def _panel_title(letter: str, g: dict) -> str:
    name = ARCH_NAMES.get(g["arch"], g["arch"])
    extra = (
        rf", $m$={int(g['branch_depth'])}, $\alpha$={g['alpha']:g}"
        if g["arch"] == "resnet_fc"
        else ""
    )
    return f"({letter}) {name}{extra}, $L$={int(g['depth'])}, $n$={int(g['width'])}"


def angles_figure(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Fig. 2: one panel per (architecture, width): faint samples, mean ± SE, Thm. 1 / 2."""
    fig2 = runs[roles(runs) == "fig2"]
    panels = groups(fig2)
    archs = list(dict.fromkeys(g["arch"] for g in panels)) or ["none"]
    widths = sorted({int(g["width"]) for g in panels}) or [0]
    faint = int(p.analysis.faint_samples)
    fig, axes = plt.subplots(
        len(archs),
        len(widths),
        figsize=(4.6 * len(widths), 3.6 * len(archs)),
        sharey="row",
        squeeze=False,
        constrained_layout=True,
    )
    letters = iter("abcdefghijklmnop")
    for g in panels:
        i, j = archs.index(g["arch"]), widths.index(int(g["width"]))
        ax, c = axes[i, j], _width_colour(j, len(widths))
        v, theta = angle_matrix(fig2, g)
        mean, se = mean_se(v)
        for s in range(min(faint, len(v))):
            ax.plot(
                theta,
                v[s],
                color=c,
                alpha=0.3,
                lw=0.7,
                label=f"single inits (first {min(faint, len(v))} seeds)" if s == 0 else None,
            )
        ax.fill_between(theta, mean - se, mean + se, color=c, alpha=0.35, lw=0)
        ax.plot(theta, mean, color=c, lw=1.6, label=f"mean ± SE ({len(v)} inits)")
        th = "Thm. 1" if g["arch"] == "resnet_fc" else "Thm. 2"
        ax.plot(theta, theory_angle(theory, g, theta), color="k", lw=1.3, ls="--", label=th)
        ax.set_title(_panel_title(next(letters), g), fontsize=10)
        ax.legend(fontsize=7.5, loc="upper right")
    for ax in axes.ravel():
        ax.set_xticks(np.pi * np.array([0, 0.25, 0.5, 0.75, 1.0]))
        ax.set_xticklabels(["0", r"$\pi/4$", r"$\pi/2$", r"$3\pi/4$", r"$\pi$"])
        ax.set_xlabel(r"$\theta$")
        ax.grid(alpha=0.3)
    for row in axes:
        row[0].set_ylabel(r"$\mathcal{G}(x, x')$")
    fig.suptitle(
        r"Sampled NTK, $x = [1, 0]$, $x' = [\cos\theta, \sin\theta]$ (001 Fig. 2)", fontsize=11
    )
    return fig


def diagonal_figure(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Diagonal ``G(x, x)`` against depth: (a) ResNets with Eq. 25; (b) DenseNets with the
    printed Eq. 29 and ``H_L``."""
    diag = runs[roles(runs) == "diagonal"]
    fams = diag_families(diag)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    res = [g for g in fams if g["arch"] in RESNETS]
    dense = [g for g in fams if g["arch"] not in RESNETS]
    for i, g in enumerate(res):
        prof = diag_profile(diag, g)
        c = f"C{i}"
        lab = rf"$m$={int(g['branch_depth'])}, $\alpha$={g['alpha']:g}"
        for w, pw in prof.groupby("width"):
            axes[0].errorbar(
                pw.depth,
                pw["mean"],
                yerr=pw.se,
                fmt="o",
                color=c,
                ms=5,
                capsize=2,
                label=f"{lab}, n={int(w)}",
            )
        L = np.arange(1, int(prof.depth.max()) + 1)
        axes[0].plot(L, theory_diag(theory, g, "ntk_diag_eq25", L), "-", color=c, lw=1.2)
    axes[0].plot([], [], "-", color="k", lw=1.2, label="Eq. 25")
    for g in dense:
        prof = diag_profile(diag, g)
        for w, pw in prof.groupby("width"):
            axes[1].errorbar(
                pw.depth,
                pw["mean"],
                yerr=pw.se,
                fmt="o",
                color="tab:blue",
                ms=5,
                capsize=2,
                label=f"measured, n={int(w)}",
            )
        L = np.arange(1, int(prof.depth.max()) + 1)
        axes[1].plot(
            L,
            theory_diag(theory, g, "ntk_diag_recursion", L),
            "-",
            color="k",
            lw=1.3,
            label=r"$H_L=\sum_{l\leq L} 1/l$ (Eqs. 26-27)",
        )
        axes[1].plot(
            L,
            theory_diag(theory, g, "ntk_diag_eq29", L),
            "--",
            color="tab:red",
            lw=1.3,
            label=r"Eq. 29 as printed, $\sum_{l\leq L} 1/(l+1)$",
        )
    titles = ("(a) ResNet: mean ± SE and Eq. 25", "(b) DenseNet: mean ± SE, Eq. 29 and $H_L$")
    depths = sorted(diag.depth.unique()) if len(diag) else [1]
    for ax, t in zip(axes, titles):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(depths)
        ax.xaxis.set_major_formatter(ticker.ScalarFormatter())
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.set_xlabel("depth $L$")
        ax.set_ylabel(r"$\mathcal{G}(x, x)$, $\Sigma^0(x, x) = 1$")
        ax.set_title(t, fontsize=10)
        ax.grid(alpha=0.3, which="major")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="upper left")
    axes[1].yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    axes[1].yaxis.set_minor_formatter(ticker.FormatStrFormatter("%g"))
    return fig
