"""Littwin & Wolf 2020 (arXiv:2001.10460) Figs. 4 and 5: Jacobian norm moments against the reduced
network, and their depth scaling; and the kernel regime in training (beyond the paper)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .analysis import (
    ARCH_NAMES,
    c4_of,
    fig4_points,
    fig4_reduced,
    kernel_groups,
    kernel_scaled,
    ratio_stats,
    select,
    theory_on,
    totals,
    widths_of,
)

COLOURS = {"resnet_fc": "tab:blue", "densenet_fc": "tab:orange", "fc": "tab:green"}
SUB_MARKERS = {0: "o", 1: "o", 2: "^", 3: "v", 4: "D"}


def _spread(depth: np.ndarray, k: np.ndarray) -> np.ndarray:
    """x positions: the points of one depth spread over a factor 2^(±0.3) by branch k."""
    depth, k = np.asarray(depth, float), np.asarray(k, float)
    return depth * 2.0 ** (0.6 * ((k - 0.5) / depth - 0.5))


def _log2_axis(ax, depths):
    ax.set_xscale("log", base=2)
    ax.set_xticks(depths)
    ax.set_xticklabels([str(int(d)) for d in depths])
    ax.minorticks_off()
    ax.set_xlabel("depth $L$")


def fig4(runs: pd.DataFrame, theory: pd.DataFrame, p):
    r4 = select(runs, p, "fig4")
    c4 = c4_of(theory)
    k = float(p.analysis.z_max)
    pts = fig4_points(r4, c4)
    fig, axes = plt.subplots(2, 2, figsize=(11.5, 8.5), constrained_layout=True)
    (a, b), (c, d) = axes
    if not len(pts):
        for ax in axes.ravel():
            ax.text(0.5, 0.5, "no Fig. 4 runs", ha="center", transform=ax.transAxes)
        return fig
    depths = np.sort(pts.depth.unique())
    red = fig4_reduced(r4)
    for h in sorted(pts["sub"].unique()):
        pt = pts[pts["sub"] == h]
        x = _spread(pt.depth, pt.layer) * 2.0 ** (0.03 * (int(h) - 1.5))  # h side by side
        mk = SUB_MARKERS.get(int(h), "o")
        a.plot(
            x,
            pt.J2,
            mk,
            ms=4,
            color=f"C{int(h) - 1}",
            alpha=0.8,
            label=rf"$E\|J^{{k}}\|^2$, $W^{{k,{h}}}$",
        )
        b.plot(
            x,
            pt.J4,
            mk,
            ms=4,
            color=f"C{int(h) - 1}",
            alpha=0.8,
            label=rf"$E\|J^{{k}}\|^4$, $W^{{k,{h}}}$",
        )
        c.errorbar(
            x,
            pt.J2 / pt.f2,
            yerr=pt.se_d_J2_f2 / pt.f2,
            fmt=mk,
            ms=3.5,
            lw=0.8,
            color=f"C{int(h) - 1}",
            label=rf"$W^{{k,{h}}}$",
        )
        d.errorbar(
            x,
            pt.J4 / pt.f4,
            yerr=pt.se_d_J4_f4 / pt.f4,
            fmt=mk,
            ms=3.5,
            lw=0.8,
            color=f"C{int(h) - 1}",
            label=rf"$W^{{k,{h}}}$",
        )
    xr = _spread(red.depth, red.layer)
    a.plot(xr, red["mean"], "s", ms=4, mfc="none", color="k", label=r"$E f_{(k)}^2$")
    p1 = pts[pts["sub"] == pts["sub"].min()]
    xf = _spread(p1.depth, p1.layer)
    b.plot(xf, p1.f4, "s", ms=4, mfc="none", color="k", label=r"$E f_{(k)}^4$ (upper bound)")
    b.plot(
        xf,
        p1.f4 / c4,
        "d",
        ms=4,
        mfc="none",
        color="tab:red",
        label=rf"$E f_{{(k)}}^4 / c_4$ (lower bound, $c_4$={c4:g})",
    )
    th = theory[theory.quantity == "f2_eq152"]
    for (alpha, m), t in th.groupby(["alpha", "branch_depth"]):
        if not np.isclose(r4.alpha, alpha).any():
            continue
        t = t[(t.depth >= depths.min() / 1.3) & (t.depth <= depths.max() * 1.3)].sort_values(
            "depth"
        )
        a.plot(
            t.depth,
            t.value,
            "-",
            color="0.4",
            lw=1,
            label=rf"Eq. 152: $\alpha^m(1+\alpha^m)^{{L-1}}$, $\alpha$={alpha:g}, m={int(m)}",
        )
    c.axhline(1.0, color="k", lw=0.8)
    d.axhline(1.0, color="k", ls="--", lw=0.9, label="upper bound 1")
    d.axhline(1.0 / c4, color="tab:red", ls="--", lw=0.9, label=r"lower bound $1/c_4$")
    width = sorted(r4.width.unique())
    alpha = sorted(r4.alpha.unique())
    titles = [
        "(a) second moments",
        "(b) fourth moments",
        rf"(c) $E\|J^k\|^2 / E f_{{(k)}}^2$ (Thm. 4.1: 1), $\pm$1 paired SE (claims: {k:g})",
        rf"(d) $E\|J^k\|^4 / E f_{{(k)}}^4$ (Thm. 4.2 bounds), $\pm$1 paired SE (claims: {k:g})",
    ]
    for ax, t in zip(axes.ravel(), titles):
        _log2_axis(ax, depths)
        ax.set_title(t, fontsize=10)
        ax.legend(fontsize=7.5)
    a.set_yscale("log")
    b.set_yscale("log")
    d.set_ylim(0, None)
    a.set_ylabel("moment")
    c.set_ylabel("ratio")
    n = int(pts.n.min())
    fig.suptitle(
        f"ResNet, m = 2, alpha = {', '.join(f'{v:g}' for v in alpha)}, width "
        f"{', '.join(str(int(w)) for w in width)}, {n} networks per depth, all branches k "
        "per depth (001 Fig. 4)",
        fontsize=11,
    )
    return fig


def fig5(runs: pd.DataFrame, theory: pd.DataFrame, p):
    r5 = select(runs, p, "fig5")
    n_boot = int(p.analysis.n_boot)
    at = 0 if p.analysis.overlay_anchor == "smallest" else -1
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6), constrained_layout=True)
    all_depths = set()
    c_per_l = None
    for arch in ("resnet_fc", "densenet_fc", "fc"):
        samples = totals(r5, arch)
        if not samples:
            continue
        s = ratio_stats(samples, n_boot)
        L = s["depth"]
        all_depths |= set(L.tolist())
        w = widths_of(r5, arch, L)
        c_per_l = c_per_l or round(w[0] / L[0])
        col, name = COLOURS[arch], ARCH_NAMES[arch]
        lab = f"{name} (slope {s['slope']:.2f} ± {s['slope_se']:.2f})"

        def err(v, se):
            return [v - v * np.exp(-se), v * np.exp(se) - v]

        axes[0].errorbar(
            L,
            s["ratio"],
            yerr=err(s["ratio"], s["se_log_ratio"]),
            fmt="o-",
            ms=4,
            color=col,
            capsize=2,
            label=lab,
        )
        axes[1].errorbar(
            L,
            s["var"],
            yerr=err(s["var"], s["se_log_var"]),
            fmt="o-",
            ms=4,
            color=col,
            capsize=2,
            label=name,
        )
        axes[2].errorbar(
            L, s["mean"], yerr=3 * s["se_mean"], fmt="o", ms=4, color=col, capsize=2, label=name
        )
        # dense theory curves between the measured depths (n = c L there too)
        dense = np.arange(L.min(), L.max() + 1)
        dw = dense * c_per_l
        i_dense = int(np.searchsorted(dense, L[at]))
        for ax, q, meas in ((axes[0], "ratio_shape", s["ratio"]), (axes[1], "var_shape", s["var"])):
            shape = theory_on(theory, arch, q, dense, dw)
            if np.all(np.isfinite(shape)) and shape[i_dense] > 0:
                # the constant of the scaling law: fitted at one depth only (the largest by default)
                ax.plot(dense, shape * (meas[at] / shape[i_dense]), "--", color=col, lw=1.1)
            if arch == "densenet_fc":  # Eq. 187 with H_L^2 (Eq. 42 has its limit log(L)^2)
                alt = theory_on(theory, arch, q.replace("shape", "shape_eq187"), dense, dw)
                if np.all(np.isfinite(alt)):
                    ax.plot(
                        dense,
                        alt * (meas[at] / alt[i_dense]),
                        ":",
                        color=col,
                        lw=1.3,
                        label=r"DenseNet, Eq. 187 with $H_L^2$ for $\log(L)^2$"
                        if ax is axes[0]
                        else None,
                    )
        mean_th = theory_on(theory, arch, "mean_J2", dense, dw)
        axes[2].plot(dense, mean_th, "-", color=col, lw=1.1, label=f"{name}: infinite width")
    depths = sorted(all_depths)
    where = "smallest" if at == 0 else "largest"
    titles = [
        r"(a) $\mathrm{Var}(\|J\|^2) / E[\|J\|^2]^2$ (bootstrap SE)"
        + "\n"
        + f"dashed: predicted shape, constant fitted at the {where} $L$",
        r"(b) $\mathrm{Var}(\|J\|^2)$"
        + "\n"
        + r"dashed: Eq. 40, Eq. 42, $E^2 e^{5\beta}$, "
        + f"fitted at the {where} $L$",
        r"(c) $E\|J\|^2$ ($\pm$3 SE)"
        + "\n"
        + r"solid: Eq. 25, Thm. 2 recursion $H_L$, $2L$ (no fit)",
    ]
    for ax, t in zip(axes, titles):
        if depths:
            _log2_axis(ax, depths)
        ax.set_yscale("log")
        ax.set_title(t, fontsize=10)
        if ax is axes[1]:
            ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(0.0, 0.33))
        else:
            ax.legend(fontsize=8)
    fig.suptitle(
        f"Jacobian squared norm at width n = {c_per_l} L: ResNet m = 2, alpha = 0.3/sqrt(L); "
        "DenseNet; vanilla ReLU (He init) (001 Fig. 5)",
        fontsize=11,
    )
    return fig


def fig_kernel(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Beyond 001: relative change of the empirical NTK over a short SGD run, per architecture
    (x axis) and depth (colour)."""
    rk = select(runs, p, "kernel")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), constrained_layout=True)
    if not len(rk):
        for ax in axes:
            ax.text(0.5, 0.5, "no kernel-regime runs", ha="center", transform=ax.transAxes)
        return fig
    g = kernel_groups(rk)

    a = float(p.analysis.kernel.resnet_a)

    def name(r):
        """Tick label and sort rank: vanilla, DenseNet, ResNet constant alpha, ResNet scaled."""
        if r.arch != "resnet_fc":
            return {"densenet_fc": ("DenseNet", 1), "fc": ("vanilla ReLU", 0)}[r.arch]
        if kernel_scaled(r.alpha, r.depth, p):
            return f"ResNet\n$\\alpha = {a:g}/\\sqrt{{L}}$", 3
        return f"ResNet\n$\\alpha$ = {r.alpha:g}", 2

    ranked = dict(name(r) for r in g.itertuples())
    g["name"] = [name(r)[0] for r in g.itertuples()]
    names = sorted(ranked, key=ranked.get)
    depths = sorted(g.depth.unique())
    for j, L in enumerate(depths):
        d = g[g.depth == L].set_index("name").reindex(names)
        x = np.arange(len(names)) + 0.12 * (j - (len(depths) - 1) / 2)
        col = plt.cm.viridis(0.15 + 0.7 * j / max(1, len(depths) - 1))
        axes[0].errorbar(
            x,
            d.rel,
            yerr=d.se,
            fmt="o",
            ms=6,
            capsize=3,
            color=col,
            label=f"L = {int(L)} ({int(d.n.min())} nets each)",
        )
        axes[1].plot(x, d.loss_init, "x", ms=7, color=col, label=f"L = {int(L)}: at initialization")
        axes[1].plot(x, d.loss_final, "o", ms=6, color=col, label=f"L = {int(L)}: after training")
    for ax in axes:
        ax.set_xticks(np.arange(len(names)))
        ax.set_xticklabels(names, fontsize=9)
        ax.set_xlim(-0.5, len(names) - 0.5)
        ax.set_yscale("log")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    r0 = rk.drop_duplicates("run_id").iloc[0]
    axes[0].set_title(
        r"(a) $\|\Theta_T - \Theta_0\|_F / \|\Theta_0\|_F$ on 8 test inputs (mean $\pm$ SE)",
        fontsize=10,
    )
    axes[1].set_title("(b) training MSE on the first 512 training examples", fontsize=10)
    fig.suptitle(
        f"Kernel regime in training (beyond 001): {r0.dataset}, width {int(r0.width)}, "
        f"{int(r0.steps)} SGD steps of batch {int(r0.batch_size)}, step = {r0.lr:g} / "
        "(mean diagonal of the initial NTK), hidden weights trained",
        fontsize=10.5,
    )
    return fig
