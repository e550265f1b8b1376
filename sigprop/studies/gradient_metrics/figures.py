"""Huang et al. 2019 (arXiv:1912.09132) Figs. 2 and 3: per-layer gradient metrics, simulation
against theory."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...figures.style import keep_rate_colour as _colour
from .analysis import profile, settings_of, theory_curve, theory_value


def _band(ax, p, colour, ls="--", label=None):
    ax.plot(p.layer, p["mean"], ls=ls, color=colour, lw=1.3, label=label)
    lo = np.clip(p["mean"] - p.se, p["mean"] * 1e-3, None)
    ax.fill_between(p.layer, lo, p["mean"] + p.se, color=colour, alpha=0.2, lw=0)


def fig2(runs: pd.DataFrame, theory: pd.DataFrame, p):
    lin = [s for s in settings_of(runs) if s["activation"] == "linear"]
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8), constrained_layout=True)
    window = int(p.analysis.last_layers_window)
    for i, s in enumerate(lin):
        c = _colour(s["keep_rate"], i)
        lab = rf"$\rho$ = {s['keep_rate']:g}"
        pa, pb = profile(runs, s, "g_aa"), profile(runs, s, "g_ab")
        L = int(s["depth"])
        axes[0].plot(pa.layer, theory_curve(theory, s, "g_aa_eq12", pa.layer), color=c, lw=1.5)
        _band(axes[0], pa, c, label=lab)
        tb = theory_curve(theory, s, "g_ab_eq12", pb.layer)
        axes[1].plot(pb.layer, tb, color=c, lw=1.5)
        _band(axes[1], pb, c, label=lab)
        last = pb[pb.layer > L - window]
        axes[2].plot(last.layer, tb[pb.layer > L - window], color=c, lw=1.5)
        _band(axes[2], last, c, label=lab)
        gL = float(pb["mean"].iloc[-1])
        for q, ls in (("chi1", "-"), ("chi2", ":")):
            chi = theory_value(theory, s, q)
            axes[3].plot(pb.layer, gL * chi ** (L - pb.layer), color=c, ls=ls, lw=1.2)
        _band(axes[3], pb, c, label=lab)
    titles = [
        r"(a) $g_{aa}^l$ vs Eq. 12",
        r"(b) $g_{ab}^l$ vs Eq. 12",
        r"(c) $g_{ab}^l$, last layers",
        r"(d) $g_{ab}^l$ vs $\chi_1^{L-l}$ (dotted: $\chi_2^{L-l}$)",
    ]
    for ax, t in zip(axes, titles):
        ax.set_yscale("log")
        ax.set_xlabel("layer $l$")
        ax.set_title(t, fontsize=10)
        ax.legend(fontsize=8)
    if lin:
        s = lin[0]
        fig.suptitle(
            f"Linear dropout networks, $\\sigma_w^2$={s['sigma_w2']:g}, $\\sigma_b^2$={s['sigma_b2']:g}, "
            f"L = {s['depth']} (000 Fig. 2); solid: theory, dashed: simulation"
        )
    return fig


def fig3(runs: pd.DataFrame, theory: pd.DataFrame, p):
    ss = [s for s in settings_of(runs) if s["activation"] != "linear"]
    acts = list(dict.fromkeys(s["activation"] for s in ss))
    fig, axes = plt.subplots(
        1,
        max(1, len(acts)),
        figsize=(4.2 * max(1, len(acts)), 3.8),
        squeeze=False,
        constrained_layout=True,
    )
    for ax, act, letter in zip(axes[0], acts, "abcdefgh"):
        for i, s in enumerate([s for s in ss if s["activation"] == act]):
            c = _colour(s["keep_rate"], i)
            pa, pt = profile(runs, s, "g_aa"), profile(runs, s, "g_ab_abs")
            L = int(s["depth"])
            ax.plot(
                pa.layer, pa["mean"], "-", color=c, lw=1.3, label=rf"$\rho$ = {s['keep_rate']:g}"
            )
            ax.plot(pt.layer, pt["mean"], "--", color=c, lw=1.3)
            chi = theory_value(theory, s, "chi1")
            ax.plot(
                pa.layer, float(pa["mean"].iloc[-1]) * chi ** (L - pa.layer), ":", color="k", lw=1.0
            )
        s0 = next(s for s in ss if s["activation"] == act)
        ax.set_yscale("log")
        ax.set_xlabel("layer $l$")
        ax.set_title(
            f"({letter}) {act}, $\\sigma_w^2$={s0['sigma_w2']:g}, $\\sigma_b^2$={s0['sigma_b2']:g}",
            fontsize=10,
        )
        ax.legend(fontsize=8)
    fig.suptitle(
        r"$g_{aa}^l$ (solid), $\tilde g_{ab}^l$ (dashed), $\chi_1^{L-l}$ (dotted) (000 Fig. 3)"
    )
    return fig
