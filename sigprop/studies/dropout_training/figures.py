"""Baldi & Sadowski 2014 (002) Figs. 9.3-9.15, 11.1-11.3 and §11.6 (dropin): trained logistic
networks under dropout.

Papers cited by prefix: 002 = Baldi, Sadowski (2014), doi:10.1016/j.artint.2014.02.004.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from ...theory import ensembles as ens
from .analysis import final_step, layer_series, pair_table, skew_kurtosis, unit_table

BEFORE, AFTER = "0.6", "tab:blue"


def _tables(runs):
    T = final_step(runs)
    return T, unit_table(runs, 0), unit_table(runs, T)


def _bound2(theory: pd.DataFrame):
    t = theory[theory.quantity == "bound2"]
    t = t[t.x.notna()].drop_duplicates("x").sort_values("x")
    return t.x.to_numpy(float), t.value.to_numpy(float)


def fig_approximations(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Figs. 9.3-9.5: |E - NWGM| and |E - W| against E with Eqs. 85/202 and Bounds 1-2."""
    z = float(p.analysis.noise_z)
    T, _, u = _tables(runs)
    layers = sorted(u.layer.unique())
    fig, axes = plt.subplots(
        len(layers), 3, figsize=(13, 3.0 * len(layers)), squeeze=False, constrained_layout=True
    )
    xb, yb = _bound2(theory)
    for r, l in enumerate(layers):
        d = u[u.layer == l].sort_values("E")
        E, V = d.E.to_numpy(), d.V.to_numpy()
        b = ens.eq87_bounds(E, V)
        a85 = np.abs(ens.e_minus_nwgm_second_order(E, V))
        a202 = np.abs(ens.e_minus_nwgm_second_order_about_mean(E, V))
        for c, (col, name) in enumerate((("d_nwgm", "NWGM"), ("d_w", "W"))):
            ax = axes[r, c]
            ax.plot(xb, yb, color="k", lw=1.2, label="Bound 2")
            ax.scatter(E, b["bound1"], s=3, color="tab:green", alpha=0.5, lw=0, label="Bound 1")
            if name == "NWGM":
                ax.scatter(
                    E, a85, s=3, color="tab:blue", alpha=0.6, lw=0, label="Eq. 85/87 approx."
                )
                ax.scatter(
                    E, a202, s=3, color="tab:orange", alpha=0.6, lw=0, label="Eq. 202 approx."
                )
            ax.scatter(E, np.abs(d[col]), s=4, color="tab:red", lw=0, label=f"|E - {name}| (MC)")
            top = max(float(np.nanmax(yb)), float(np.nanquantile(np.abs(d[col]), 0.999)))
            ax.set_ylim(0, 1.05 * top)
            ax.set_xlim(0, 1)
            ax.set_title(f"layer {l}: |E - {name}|", fontsize=10)
            ax.set_xlabel("E = E(O)")
        res = d[np.abs(d.d_nwgm) > z * d.se_nwgm]
        ax = axes[r, 2]
        if len(res):
            meas = np.abs(res.d_nwgm.to_numpy())
            e85 = np.abs(ens.e_minus_nwgm_second_order(res.E.to_numpy(), res.V.to_numpy())) - meas
            e202 = (
                np.abs(ens.e_minus_nwgm_second_order_about_mean(res.E.to_numpy(), res.V.to_numpy()))
                - meas
            )
            lim = float(np.quantile(np.abs(np.r_[e85, e202]), 0.99)) or 1e-6
            bins = np.linspace(-lim, lim, 41)
            ax.hist(e85, bins=bins, color="tab:blue", alpha=0.6, label="Eq. 85 - measured")
            ax.hist(e202, bins=bins, color="tab:orange", alpha=0.6, label="Eq. 202 - measured")
        ax.set_title(f"layer {l}: approximation error ({len(res)} resolved)", fontsize=10)
        ax.set_xlabel("approx. |E - NWGM| minus measured")
    axes[0, 0].legend(fontsize=7, markerscale=3, loc="upper right")
    axes[0, 1].legend(fontsize=7, markerscale=3, loc="upper right")
    axes[0, 2].legend(fontsize=7)
    fig.suptitle(
        f"Dropout approximations after training (step {T}), all hidden units x probe inputs "
        "(002 Figs. 9.3-9.5)"
    )
    return fig


def _hist_gauss(ax, x, colour, label):
    x = np.asarray(x, float)
    lo, hi = np.quantile(x, [0.002, 0.998])
    bins = np.linspace(lo, hi, 50)
    ax.hist(x, bins=bins, density=True, color=colour, alpha=0.6, label=label)
    m, s = x.mean(), x.std()
    g = np.linspace(lo, hi, 200)
    if s > 0:
        ax.plot(g, np.exp(-0.5 * ((g - m) / s) ** 2) / (s * np.sqrt(2 * np.pi)), "k--", lw=1)
    sk, ku = skew_kurtosis(x)
    ax.text(
        0.02,
        0.97,
        f"sd {s:.2g}\nskew {sk:+.2f}\nex.kurt {ku:+.2f}",
        transform=ax.transAxes,
        va="top",
        fontsize=7,
    )


def fig_errors(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Figs. 9.6-9.7: NWGM - E and W - E per layer, before and after training."""
    T, u0, u1 = _tables(runs)
    layers = sorted(u1.layer.unique())
    fig, axes = plt.subplots(
        len(layers), 4, figsize=(14, 2.6 * len(layers)), squeeze=False, constrained_layout=True
    )
    for r, l in enumerate(layers):
        for c, (col, name, u, tag, colour) in enumerate(
            (
                ("d_nwgm", "NWGM - E", u0, "before", BEFORE),
                ("d_nwgm", "NWGM - E", u1, "after", AFTER),
                ("d_w", "W - E", u0, "before", BEFORE),
                ("d_w", "W - E", u1, "after", "tab:red"),
            )
        ):
            ax = axes[r, c]
            _hist_gauss(ax, u[u.layer == l][col], colour, tag)
            ax.set_title(f"layer {l}: {name}, {tag} training", fontsize=9)
            ax.tick_params(labelsize=7)
            ax.xaxis.set_major_locator(MaxNLocator(5))
            ax.ticklabel_format(axis="x", style="sci", scilimits=(-2, 2))
    fig.suptitle(
        f"Distributions of NWGM - E (002 Fig. 9.6) and W - E (Fig. 9.7); before: step 0, "
        f"after: step {T}; dashed: Gaussian fit"
    )
    return fig


def _two_hist(ax, a, b, bins=50, labels=("before", "after")):
    x = np.r_[a, b]
    lo, hi = np.quantile(x, [0.002, 0.998])
    if lo == hi:
        lo, hi = lo - 1e-3, hi + 1e-3
    e = np.linspace(lo, hi, bins)
    ax.hist(a, bins=e, color=BEFORE, alpha=0.6, label=labels[0])
    ax.hist(b, bins=e, color=AFTER, alpha=0.6, label=labels[1])


def fig_moments(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Figs. 9.8-9.15: variance and covariance approximations and sigma'(S)."""
    T, u0, u1 = _tables(runs)
    fig, axes = plt.subplots(2, 4, figsize=(17, 7.5), constrained_layout=True)
    ax = axes[0, 0]
    for u, tag, cols in (
        (u0, "before", ("0.4", "0.75")),
        (u1, "after", ("tab:blue", "tab:orange")),
    ):
        x1, x2 = u.EO2 - u.W, u.EO2 - u.W**2
        lo, hi = np.quantile(np.r_[x1, x2], [0.002, 0.998])
        bins = np.linspace(lo, hi, 60)
        ax.hist(x1, bins=bins, color=cols[0], alpha=0.6, label=f"E(O²) - W, {tag}")
        ax.hist(x2, bins=bins, color=cols[1], alpha=0.6, label=f"E(O²) - W², {tag}")
    ax.set_title("(a) E(O²) vs W (Eq. 117) and W² (Eq. 118)", fontsize=10)
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax = axes[0, 1]
    _two_hist(ax, u0.V - u0.W * (1 - u0.W), u1.V - u1.W * (1 - u1.W))
    ax.set_title("(b) V - W(1-W) (Fig. 9.9)", fontsize=10)
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    for ax, m, t in (
        (axes[0, 2], "traj_V", "(c) mean dropout variance V (Fig. 9.10)"),
        (axes[0, 3], "traj_gap", "(d) mean W(1-W) - V (Fig. 9.11)"),
    ):
        s, sd = layer_series(runs, m), layer_series(runs, f"dropin_{m}")
        for i, l in enumerate(s.columns):
            ax.plot(s.index, s[l], color=f"C{i}", lw=1.5, label=f"layer {l}")
            if l in sd.columns:
                ax.plot(sd.index, sd[l], color=f"C{i}", lw=1.2, ls=":")
        ax.plot([], [], color="k", ls=":", label="dropin")
        ax.set_xlabel("training step")
        ax.set_title(t, fontsize=10)
        ax.legend(fontsize=7)
    pu0, pu1 = pair_table(runs, 0, "u"), pair_table(runs, T, "u")
    ax = axes[1, 0]
    _two_hist(ax, pu0.EOO - pu0.WW, pu1.EOO - pu1.WW)
    ax.set_title("(e) unconnected: E(OiOj) - WiWj (Fig. 9.12)", fontsize=10)
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax = axes[1, 1]
    _two_hist(ax, pu0.EOO, pu1.EOO)
    ax.set_title("(f) unconnected: E(OiOj) - 0 (Fig. 9.13)", fontsize=10)
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax = axes[1, 2]
    pc0, pc1 = pair_table(runs, 0, "c"), pair_table(runs, T, "c")
    if len(pc1):
        x = np.r_[pc0.EOO - pc0.WW, pc1.EOO - pc1.WW, pc0.EOO - pc0.WijW, pc1.EOO - pc1.WijW]
        lo, hi = np.quantile(x, [0.002, 0.998])
        bins = np.linspace(lo, hi, 50)
        for d, col, lab in (
            (pc0.EOO - pc0.WW, "0.35", "- WiWj, before"),
            (pc0.EOO - pc0.WijW, "0.7", "- WijWj, before"),
            (pc1.EOO - pc1.WW, "tab:blue", "- WiWj, after"),
            (pc1.EOO - pc1.WijW, "tab:orange", "- WijWj, after"),
        ):
            ax.hist(d, bins=bins, histtype="step", lw=1.4, color=col, label=f"E(OiOj) {lab}")
        ax.legend(fontsize=7)
    ax.set_title("(g) connected j -> i: E(OiOj) - WiWj, - WijWj (Fig. 9.14)", fontsize=10)
    ax.set_yscale("log")
    ax = axes[1, 3]
    _two_hist(ax, u0.Esp - u0.spE, u1.Esp - u1.spE)
    ax.set_title("(h) E(σ'(S)) - σ'(E(S)) (Fig. 9.15)", fontsize=10)
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    for ax in axes.ravel():
        ax.tick_params(labelsize=7)
    fig.suptitle(
        f"Dropout variances and covariances, hidden units x probe inputs, before (step 0) and "
        f"after (step {T}) training (002 Figs. 9.8-9.15)"
    )
    return fig


def fig_sparsity(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Figs. 11.1-11.3: sparsity, learning phases, consistency of active units per layer."""
    T = final_step(runs)
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2), constrained_layout=True)
    ax = axes[0]
    h = runs[runs.metric == "act_hist"].groupby(["step", "layer", "probe"]).value.sum()
    nb = int(h.index.get_level_values("probe").max()) + 1
    centres = (np.arange(nb) + 0.5) / nb
    for i, l in enumerate(sorted(h.index.get_level_values("layer").unique())):
        for s, ls, alpha in ((0, ":", 0.6), (T, "-", 1.0)):
            c = h.loc[(s, l)].reindex(range(nb)).fillna(0).to_numpy()
            ax.plot(
                centres,
                c / c.sum(),
                ls=ls,
                color=f"C{i}",
                alpha=alpha,
                marker=".",
                label=f"layer {l}" if s == T else None,
            )
    ax.plot([], [], "k:", label="before training")
    ax.set_yscale("log")
    ax.set_xlabel("activation W")
    ax.set_ylabel("fraction")
    ax.set_title("(a) final activations per layer (Fig. 11.1)", fontsize=10)
    ax.legend(fontsize=7)
    ax = axes[1]
    typ = runs[runs.metric.str.startswith("typ_")]
    if len(typ):
        top = int(typ.layer.max())
        first = typ.run_id.iloc[0]
        for name, col in (("active", "tab:red"), ("inactive", "tab:blue")):
            d = typ[(typ.layer == top) & (typ.run_id == first)]
            piv = d.pivot_table(index="step", columns="metric", values="value", aggfunc="first")
            if f"typ_{name}_E" not in piv:
                continue
            unit = int(d[d.metric == f"typ_{name}_E"].probe.iloc[0])
            ax.plot(piv.index, piv[f"typ_{name}_E"], color=col, lw=1.6, label=f"{name} unit {unit}")
            ax.fill_between(
                piv.index,
                piv[f"typ_{name}_q05"],
                piv[f"typ_{name}_q95"],
                color=col,
                alpha=0.25,
                lw=0,
            )
        ax.set_title(f"(b) learning phases, layer {top}, probe input 0 (Fig. 11.2)", fontsize=10)
    ax.set_xlabel("training step")
    ax.set_ylabel("activation O: MC mean, 5-95% band")
    ax.legend(fontsize=8)
    ax = axes[2]
    m, lo, hi = (
        layer_series(runs, k) for k in ("active_std_mean", "active_std_q05", "active_std_q95")
    )
    for i, l in enumerate(m.columns):
        ax.plot(m.index, m[l], color=f"C{i}", lw=1.5, label=f"layer {l}")
        ax.fill_between(m.index, lo[l], hi[l], color=f"C{i}", alpha=0.12, lw=0)
    ax.set_xlabel("training step")
    ax.set_ylabel("dropout SD of O")
    ax.set_title("(c) consistency of active units per layer (Fig. 11.3)", fontsize=10)
    ax.legend(fontsize=8)
    fig.suptitle("Sparse coding and the three learning phases of dropout (002 §11.7)")
    return fig


def fig_dropin(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """§11.6: dropout and dropin trained side by side."""
    T = final_step(runs)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4), constrained_layout=True)
    for pre, name, col in (("", "dropout", "tab:blue"), ("dropin_", "dropin", "tab:red")):
        for ax, m in ((axes[0], "test_acc"), (axes[1], "train_loss")):
            d = runs[runs.metric == f"{pre}{m}"].groupby("step").value.mean()
            ax.plot(d.index, d.to_numpy(), color=col, lw=1.6, label=name)
        mc = runs[runs.metric == f"{pre}test_acc_mc"].value.mean()
        axes[0].plot(
            [T], [mc], marker="*", ms=12, color=col, ls="none", label=f"{name}, MC ensemble"
        )
        v = layer_series(runs, f"{pre}traj_V").mean(axis=1)
        axes[2].plot(v.index, v.to_numpy(), color=col, lw=1.6, label=name)
    axes[0].set_ylim(0, 1)
    axes[0].set_title("(a) test accuracy (ensemble network)", fontsize=10)
    axes[1].set_title("(b) training loss (masked networks)", fontsize=10)
    axes[2].set_title("(c) mean dropout variance of hidden units", fontsize=10)
    for ax in axes:
        ax.set_xlabel("training step")
        ax.legend(fontsize=8)
    fig.suptitle("Dropout vs dropin from the same initial weights (002 §11.6)")
    return fig
