"""Hayou et al. 2021 (arXiv:2002.08797) Fig. 1 (kept fraction per neuron, EOC vs chaotic), Thm. 1
and Prop. 4 / Table 7 (s_cr)."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from .analysis import gamma_summary, per_run, scr_summary, with_chi


def fig1_kept_per_neuron(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Image of the kept fraction of every neuron's fan-in (rows: layers, columns: neurons) of
    the first-seed SNIP run at the EOC and in the chaotic phase (003 Fig. 1 (a), (b))."""
    an = p.analysis
    tol = float(an.eoc_tolerance)
    s = float(an.fig1_sparsity)
    d = runs[
        (runs.metric == "kept_fraction_neuron")
        & (runs.pruner == "snip")
        & np.isclose(runs.sparsity, s)
    ]
    info = with_chi(d.drop_duplicates("run_id"), theory)
    panels = [("EOC", info[np.abs(info.chi1 - 1) <= tol]), ("chaotic", info[info.chi1 > 1 + tol])]
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2), constrained_layout=True)
    im = None
    for ax, (name, sel) in zip(axes, panels):
        if sel.empty:
            ax.set_visible(False)
            continue
        r = sel.sort_values("seed").iloc[0]
        x = d[d.run_id == r.run_id].pivot(index="layer", columns="probe", values="value")
        im = ax.imshow(
            x.to_numpy(),
            cmap="gray",
            vmin=0,
            vmax=1,
            aspect="auto",
            origin="lower",
            extent=(0.5, x.shape[1] + 0.5, x.index.min() - 0.5, x.index.max() + 0.5),
        )
        ax.set_title(
            f"({'a' if name == 'EOC' else 'b'}) {name}, chi = {r.chi1:.3g}, s = {s:g}", fontsize=10
        )
        ax.set_xlabel("neuron")
        ax.set_ylabel("layer")
    if im is not None:
        fig.colorbar(im, ax=list(axes), label="fraction of incoming weights kept", shrink=0.85)
    return fig


def fig_scr(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """(a) SBP s_cr over chi with Thm. 1's bounds; (b) magnitude s_cr over gamma with Prop. 4."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    s = scr_summary(runs, theory)
    pts = with_chi(per_run(runs, "s_cr"), theory)
    pts = pts[pts.pruner == "snip"]
    a.plot(pts.chi1, pts.value, ".", color="0.6", ms=4, label="seeds")
    a.errorbar(s.chi1, s["mean"], yerr=s.se, fmt="o-", color="tab:blue", label="mean s_cr (SNIP)")
    tol = float(p.analysis.eoc_tolerance)
    for side in (
        s[s.chi1 < 1 - tol],
        s[s.chi1 > 1 + tol],
    ):  # no bound on the EOC; phases drawn apart
        fin = side[np.isfinite(side.bound_ln)]
        first = side.chi1.max() < 1
        a.plot(
            fin.chi1,
            fin.bound_ln,
            "s--",
            color="tab:red",
            label="Thm. 1 bound (ln)" if first else None,
        )
        a.plot(
            fin.chi1,
            fin.bound_log10,
            "^:",
            color="tab:orange",
            label="Thm. 1 bound (log10)" if first else None,
        )
    a.axvline(1.0, color="k", lw=0.8, ls=":")
    a.set_ylim(0, 1.05)
    a.set_xscale("log")
    a.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    a.set_xticks(
        sorted(s.chi1.round(3).unique()),
        [f"{c:.3g}" for c in sorted(s.chi1.round(3).unique())],
        fontsize=8,
    )
    a.set_xlabel(r"$\chi = f'(1)$")
    a.set_ylabel(r"$s_{cr}$")
    a.set_title("(a) SBP critical sparsity vs Thm. 1", fontsize=10)
    a.legend(fontsize=8)
    g = gamma_summary(runs, theory)
    if len(g):
        b.errorbar(
            g.gamma, g["mean"], yerr=g.se, fmt="o-", color="tab:blue", label="mean s_cr (magnitude)"
        )
        b.plot(g.gamma, g.bound, "s--", color="tab:red", label="Prop. 4 (gamma Q_x, printed)")
        b.plot(g.gamma, g.bound_sqrt, "^--", color="tab:green", label="Prop. 4 (sqrt(gamma) Q_x)")
        b.plot(g.gamma, g.table7_bound, "x", color="tab:red", ms=9, label="Table 7 bound (printed)")
        b.plot(g.gamma, g.table7_empirical, "+", color="tab:blue", ms=11, label="Table 7 empirical")
        b.set_ylim(0, 1.2)
        b.set_xscale("log")
        b.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        b.set_xticks(g.gamma.to_numpy(), [f"{x:g}" for x in g.gamma])
    b.set_xlabel(r"$\gamma = \alpha_{l_0}/\alpha_l$")
    b.set_ylabel(r"$s_{cr}$")
    b.set_title(
        "(b) magnitude pruning vs Prop. 4 / Table 7 (5.77 at gamma=2 off scale)", fontsize=10
    )
    b.legend(fontsize=7)
    return fig
