"""Baldi & Sadowski 2014 (002) Figs. 8.1-8.2, 9.1-9.2 and Secs. 2-3: dropout ensemble averages,
theory against simulation.

Papers cited by prefix: 002 = Baldi, Sadowski (2014), doi:10.1016/j.artint.2014.02.004.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.gridspec import GridSpec

from .analysis import (
    bounds_sets,
    linear_table,
    sampling_labels,
    sampling_table,
    sampling_values,
    theory_value,
)

DIST_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red")


def _subsample(df: pd.DataFrame, n: int, seed: int = 0) -> pd.DataFrame:
    if len(df) <= n:
        return df
    return df.iloc[np.sort(np.random.default_rng(seed).choice(len(df), n, replace=False))]


def bounds_figure(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Figs. 8.1-8.2: Eq. 87 curves with simulated (E, |E - NWGM|); (c) Eqs. 85/202 vs measured."""
    an = p.analysis.bounds
    w = bounds_sets(runs, p)
    pts = _subsample(w, int(an.plot_points))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.3), constrained_layout=True)
    sc = None
    for ax, q, title in (
        (axes[0], "bound2", r"(a) Fig. 8.1: $E(1-E)|1-2E|\,/\,(1-2E(1-E))$"),
        (axes[1], "bound3", r"(b) Fig. 8.2: $2E(1-E)|1-2E|$"),
    ):
        t = theory[theory.quantity == q].sort_values("x")
        if len(pts):
            sc = ax.scatter(
                pts.E,
                np.abs(pts["diff"]),
                c=pts.sd_S,
                s=4,
                cmap="viridis",
                alpha=0.7,
                lw=0,
                vmin=0,
                zorder=2,
            )
        ax.plot(t.x, t.value, "k-", lw=1.8, label="Eq. 87 curve", zorder=3)
        a = theory_value(theory, f"argmax_{q}")
        for xv in (a, 1 - a):
            ax.axvline(xv, color="k", ls=":", lw=0.9)
        ax.set_xlim(0, 1)
        ax.set_ylim(
            0, 1.08 * max(float(t.value.max()), float(np.abs(pts["diff"]).max()) if len(pts) else 0)
        )
        ax.set_xlabel("$E$")
        ax.set_ylabel(r"$|E - \mathrm{NWGM}|$")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8, loc="upper center")
    if sc is not None:
        fig.colorbar(sc, ax=axes[:2], label="spread $s$ of $S$", shrink=0.9, pad=0.01)
    ax = axes[2]
    asym = float(an.min_asymmetry)
    sel = pts[np.abs(1 - 2 * pts.E) >= asym] if len(pts) else pts
    if len(sel):
        y = np.abs(sel["diff"])
        for q, lab, c in (
            ("eq85", "Eq. 85: $V(1-2E)/(1-2V)$", "tab:blue"),
            ("eq202", "Eq. 202 (App. B)", "tab:orange"),
        ):
            ax.scatter(np.abs(sel[q]), y, s=4, color=c, alpha=0.5, lw=0, label=lab)
        lo = max(1e-6, float(np.nanmin(y[y > 0]))) if (y > 0).any() else 1e-6
        hi = float(np.nanmax(np.r_[y, np.abs(sel.eq85)]))
        ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="equality")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo / 2, hi * 2)
        ax.set_ylim(lo / 2, hi * 2)
        ax.legend(fontsize=8, markerscale=3)
    ax.set_xlabel(r"second-order approximation of $|E - \mathrm{NWGM}|$")
    ax.set_ylabel(r"measured $|E - \mathrm{NWGM}|$")
    ax.set_title(f"(c) sets with $|1-2E| \\geq {asym:g}$", fontsize=10)
    m = int(runs.loc[runs.metric == "E", "width"].iloc[0]) if (runs.metric == "E").any() else 0
    fig.suptitle(
        f"Eq. 87 bounds (002 Figs. 8.1-8.2) with {len(w)} simulated sets of {m} logistic "
        "outputs $O = \\sigma(S)$, $S \\sim N(\\mu, s^2)$"
    )
    return fig


def sampling_figure(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Figs. 9.1 (histograms of NWGM_S at m = hist_m) and 9.2 (Pearson r and covariance vs m)."""
    an = p.analysis.sampling
    hist_m = int(an.hist_m)
    labels = sampling_labels(p)
    s = sampling_table(runs, p)
    fig = plt.figure(figsize=(16, 6.2), constrained_layout=True)
    gs = GridSpec(2, 4, figure=fig)
    positions = [(0, 0), (1, 0), (0, 1), (1, 1)]  # the paper's upper/lower left, upper/lower right
    for i, label in enumerate(labels[:4]):
        ax = fig.add_subplot(gs[positions[i]])
        v = sampling_values(runs, p, label, hist_m)
        c = DIST_COLOURS[i % 4]
        if len(v):
            bins = np.histogram_bin_edges(np.r_[v.NWGM_S, v.E_S], 40)
            ax.hist(v.NWGM_S, bins=bins, color=c, alpha=0.6, label="NWGM$_S$")
            ax.hist(v.E_S, bins=bins, histtype="step", color="k", lw=1.0, label="$E_S$")
        mu_o = theory_value(theory, "mu_O", label)
        nw = theory_value(theory, "nwgm_mean_eq104", label)
        ax.axvline(mu_o, color="k", lw=1.2, ls="--", label=r"$\mu_O$")
        ax.axvline(nw, color="tab:red", lw=1.2, ls=":", label=r"$\sigma(\mu_S)$")
        ax.set_title(f"{label}, m = {hist_m} ({len(v)} samples)", fontsize=9)
        ax.tick_params(labelsize=8)
        if i == 0:
            ax.legend(fontsize=7, loc="upper left")
    ax_r = fig.add_subplot(gs[:, 2])
    ax_c = fig.add_subplot(gs[:, 3])
    for i, label in enumerate(labels):
        g = s[s.distribution == label].sort_values("m")
        if not len(g):
            continue
        c = DIST_COLOURS[i % 4]
        ax_r.errorbar(g.m, g.r, yerr=g.r_se, fmt="o-", ms=4, color=c, capsize=2, label=label)
        ax_c.errorbar(g.m, g["cov"], yerr=g.cov_se, fmt="o-", ms=4, color=c, capsize=2, label=label)
        m_last, c_last = float(g.m.iloc[-1]), float(g["cov"].iloc[-1])
        ax_c.plot(g.m, c_last * m_last / g.m, ":", color=c, lw=1)
    r_min = float(an.r_min)
    ax_r.axhline(r_min, color="grey", ls="--", lw=0.8)
    ax_r.set_xscale("log")
    ax_r.set_ylim(min(r_min - 0.02, float(s.r.min()) - 0.01) if len(s) else 0.85, 1.005)
    ax_r.set_xlabel("sample size $m$")
    ax_r.set_ylabel(r"Pearson $r(E_S, \mathrm{NWGM}_S)$")
    ax_r.set_title("(Fig. 9.2 left) correlation; dashed: claim threshold", fontsize=9)
    ax_r.legend(fontsize=8)
    ax_c.set_xscale("log")
    ax_c.set_yscale("log")
    ax_c.set_xlabel("sample size $m$")
    ax_c.set_ylabel(r"Cov$(E_S, \mathrm{NWGM}_S)$")
    ax_c.set_title("(Fig. 9.2 right) covariance; dotted: $\\propto 1/m$", fontsize=9)
    ax_c.legend(fontsize=8)
    fig.suptitle("Sampling distributions of $E_S$ and NWGM$_S$ (002 Figs. 9.1-9.2)")
    return fig


def linear_figure(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Secs. 2-3: Monte Carlo moments of deep linear dropout networks against Eqs. 24-25."""
    t = linear_table(runs, p)
    u, pr, cost = t["units"], t["pairs"], t["cost"]
    fig, axes = plt.subplots(1, 4, figsize=(18, 4.4), constrained_layout=True)
    layers = sorted(u.layer.unique()) if len(u) else []
    ax = axes[0]
    if len(u):
        ax.scatter(
            u.naive_mean,
            u.mc_mean,
            s=10,
            marker="x",
            color="grey",
            lw=0.6,
            alpha=0.4,
            label="unscaled network",
            zorder=2,
        )
    for j, layer in enumerate(layers):
        g = u[u.layer == layer]
        ax.scatter(
            g.exact_mean, g.mc_mean, s=6, color=f"C{j}", lw=0, label=f"layer {layer}", zorder=3
        )
    if len(u):
        lim = 1.05 * np.nanmax(np.abs(np.r_[u.exact_mean, u.mc_mean, u.naive_mean]))
        ax.plot([-lim, lim], [-lim, lim], "k--", lw=0.8)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
    ax.set_xlabel("exact expectation, Eq. 24 (crosses: unscaled network)")
    ax.set_ylabel("Monte Carlo mean")
    ax.set_title("(a) means of every unit", fontsize=10)
    ax.legend(fontsize=7, markerscale=2)
    ax = axes[1]
    for j, layer in enumerate(layers):
        g = u[u.layer == layer]
        ax.scatter(g.exact_var, g.mc_var, s=6, color=f"C{j}", lw=0, label=f"layer {layer}")
    if len(u):
        v = np.r_[u.exact_var, u.mc_var]
        lo, hi = float(v[v > 0].min()), float(v.max())
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("exact variance, Eqs. 16, 25")
    ax.set_ylabel("Monte Carlo variance")
    ax.set_title("(b) variances of every unit", fontsize=10)
    ax = axes[2]
    if len(pr):
        pc = pair_correlations(u, pr, int(p.measure.cov_units))
        for j, layer in enumerate(layers):
            g = pc[pc.layer == layer]
            if len(g):
                ax.scatter(
                    g.exact_corr, g.mc_corr, s=8, color=f"C{j}", lw=0, label=f"layer {layer}"
                )
        ax.plot([-1, 1], [-1, 1], "k--", lw=0.8)
        ax.set_xlim(-1.02, 1.02)
        ax.set_ylim(-1.02, 1.02)
    ax.set_xlabel(r"exact Cov$_{ij}/\sqrt{V_i V_j}$, Eqs. 17, 25")
    ax.set_ylabel(r"Monte Carlo Cov$_{ij}/\sqrt{V_i V_j}$ (exact $V$)")
    ax.set_title("(c) covariances of unit pairs, as correlations", fontsize=10)
    ax = axes[3]
    bins = np.linspace(-5, 5, 41)
    zs = [
        ("mean", u.z_mean if len(u) else []),
        ("variance", u.z_var if len(u) else []),
        ("covariance", pr.z_cov if len(pr) else []),
    ]
    for j, (lab, z) in enumerate(zs):
        z = np.asarray(z, float)
        if len(z):
            ax.hist(
                np.clip(z, -5, 5),
                bins=bins,
                density=True,
                histtype="step",
                lw=1.4,
                color=f"C{j}",
                label=f"{lab} ({len(z)})",
            )
    xx = np.linspace(-5, 5, 200)
    ax.plot(xx, np.exp(-(xx**2) / 2) / np.sqrt(2 * np.pi), "k--", lw=1, label="N(0, 1)")
    if len(u):
        zn = np.abs(np.asarray(u.z_naive, float))
        ax.plot([], [], " ", label=f"unscaled network: median |z| {np.median(zn):.0f}")
    ax.set_xlabel("z = (MC - exact) / SE (clipped to ±5)")
    ax.set_ylabel("density")
    ax.set_ylim(0, 0.62)
    ax.set_title("(d) z-scores", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    if len(cost):
        c = cost.iloc[0]
        fig.suptitle(
            f"Deep linear dropout networks (002 Secs. 2-3): {len(cost)} networks "
            f"{int(c.width)} wide, {int(c.depth)} hidden layers, {int(c.mc_samples)} "
            "dropout masks per input"
        )
    return fig


def pair_correlations(units: pd.DataFrame, pairs: pd.DataFrame, k: int) -> pd.DataFrame:
    """Pairs with exact and MC covariances divided by the exact ``sqrt(V_i V_j)``; a pair's
    probe is ``i*k + j`` with ``k`` = ``measure.cov_units``."""
    var = units.set_index(["run_id", "layer", "probe"]).exact_var
    i, j = pairs.probe.to_numpy() // k, pairs.probe.to_numpy() % k
    vi = var.reindex(list(zip(pairs.run_id, pairs.layer, i))).to_numpy()
    vj = var.reindex(list(zip(pairs.run_id, pairs.layer, j))).to_numpy()
    d = np.sqrt(vi * vj)
    return pairs.assign(
        exact_corr=pairs.exact_cov.to_numpy() / d, mc_corr=pairs.mc_cov.to_numpy() / d
    )
