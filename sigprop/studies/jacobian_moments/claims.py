"""Claims of Littwin & Wolf 2020 (arXiv:2001.10460) Figs. 4-5: Thm. 4's moment identities and
bounds, Eq. 152, the depth scaling of Var/E^2 at n = 10 L (Thms. 5-6, Cors. 1-2); and, beyond
the paper, the kernel regime in training."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, row
from .analysis import (
    ARCH_NAMES,
    c4_of,
    fig4_points,
    fig4_reduced,
    kernel_groups,
    kernel_scaled,
    loglog_slope,
    ratio_stats,
    select,
    theory_on,
    totals,
    widths_of,
)

SOURCE_THM41 = "001 §5.1, Thm. 4.1, Fig. 4(a)"
SOURCE_THM42 = "001 §5.1, Thm. 4.2, Fig. 4(b)"
SOURCE_EQ152 = "001 App. A.6, Eq. 152"
SOURCE_FIG5 = "001 §5.1, Thms. 5-6, Cors. 1-2, Fig. 5"


def _fraction_claim(study, claim_id, claim, source, ok, z, want, ftol, expected, detail, values=None):
    frac = float(np.mean(ok)) if len(ok) else np.nan
    verdict = "pass" if np.isfinite(frac) and frac >= want - ftol else "fail"
    if not len(ok):
        verdict, detail = "inconclusive", "no (depth, matrix) points measured"
    return row(study, claim_id, claim, source, measured=frac, expected=expected, tolerance=ftol,
               verdict=verdict, detail=detail, values=values)


def claims_fig4(runs: pd.DataFrame, theory: pd.DataFrame, p) -> list[dict]:
    study = p.study
    k = float(p.analysis.z_max)
    want = float(p.claims.within_fraction)
    ftol = float(p.claims.fraction_tolerance)
    c4 = c4_of(theory)
    pts = fig4_points(runs, c4)
    if not len(pts):
        return [row(study, cid, "001 Fig. 4 (Thm. 4, Eq. 152)", SOURCE_THM41, measured=np.nan,
                    expected="", tolerance=np.nan, verdict="inconclusive",
                    detail="no ResNet runs with per-matrix Jacobians and reduced outputs")
                for cid in ("thm4_1_second_moment", "thm4_2_fourth_moment_bounds",
                            "eq152_reduced_output_mean")]
    rows = []
    subs = sorted(pts["sub"].unique())
    for h in subs:
        pt = pts[pts["sub"] == h]
        z = (pt.d_J2_f2 / pt.se_d_J2_f2).to_numpy()
        ok = np.abs(z) <= k
        ratio = (pt.J2 / pt.f2).to_numpy()
        rows.append(_fraction_claim(
            study, f"thm4_1_second_moment[W^(k,{h})]",
            f"E||df/dW^(k,{h})||^2 = E f_(k)^2 (reduced network) at every depth and branch k",
            SOURCE_THM41, ok, z, want, ftol,
            f">= {want:g} of (depth, k) points with |mean(J2 - f2)| <= {k:g} paired SE",
            (f"{len(pt)} points, depths {[int(v) for v in sorted(pt.depth.unique())]}, {int(pt.n.min()) if len(pt) else 0}-"
             f"{int(pt.n.max()) if len(pt) else 0} networks each; max |z| {np.nanmax(np.abs(z)) if len(z) else np.nan:.2f}; "
             f"E J2 / E f2 in [{np.nanmin(ratio) if len(ratio) else np.nan:.3f}, {np.nanmax(ratio) if len(ratio) else np.nan:.3f}]"),
            {"max_abs_z": np.nanmax(np.abs(z)) if len(z) else np.nan, "points": len(pt)}))
        lo = (pt.d_J4_f4c4 + k * pt.se_d_J4_f4c4 >= 0).to_numpy()
        hi = (pt.d_J4_f4 - k * pt.se_d_J4_f4 <= 0).to_numpy()
        r4 = (pt.J4 / pt.f4).to_numpy()
        pooled = float(pt.J4.sum() / pt.f4.sum()) if len(pt) else np.nan
        rows.append(_fraction_claim(
            study, f"thm4_2_fourth_moment_bounds[W^(k,{h})]",
            f"E f_(k)^4 / c4 <= E||df/dW^(k,{h})||^4 <= E f_(k)^4 at every depth and branch k",
            SOURCE_THM42, lo & hi, None, want, ftol,
            f">= {want:g} of points inside [f4/c4, f4] (c4 = {c4:g}) allowing {k:g} paired SE",
            (f"{len(pt)} points; below the lower bound by > {k:g} SE: {int((~lo).sum())}, above the "
             f"upper by > {k:g} SE: {int((~hi).sum())}; E J4 / E f4 per point in "
             f"[{np.nanmin(r4) if len(r4) else np.nan:.3f}, {np.nanmax(r4) if len(r4) else np.nan:.3f}], "
             f"pooled {pooled:.3f} (bounds {1 / c4:.3f}, 1)"),
            {"pooled_J4_over_f4": pooled, "below_lower": int((~lo).sum()), "above_upper": int((~hi).sum())}))
    red = fig4_reduced(runs)
    th = theory[theory.quantity == "f2_eq152"]
    zs = []
    for r in red.itertuples():
        t = th[(th.depth == r.depth) & np.isclose(th.alpha, r.alpha) & (th.branch_depth == r.branch_depth)]
        zs.append((r.mean - float(t.value.iloc[0])) / r.se if len(t) else np.nan)
    zs = np.array(zs)
    rows.append(_fraction_claim(
        study, "eq152_reduced_output_mean",
        "E f_(k)^2 = alpha^m (1 + alpha^m)^(L-1) Sigma^0 for the reduced ResNet (Sigma^0 = x.x/d = 1)",
        SOURCE_EQ152, np.abs(zs) <= k, zs, want, ftol,
        f">= {want:g} of (depth, k) points within {k:g} SE of Eq. 152",
        (f"{len(zs)} points; {int(np.isnan(zs).sum())} without a theory value; max |z| "
         f"{np.nanmax(np.abs(zs)) if np.isfinite(zs).any() else np.nan:.2f}"),
        {"max_abs_z": np.nanmax(np.abs(zs)) if np.isfinite(zs).any() else np.nan}))
    return rows


def claims_fig5(runs: pd.DataFrame, theory: pd.DataFrame, p) -> list[dict]:
    study = p.study
    k = float(p.analysis.z_max)
    flat = float(p.claims.flat_slope_tolerance)
    n_boot = int(p.analysis.n_boot)
    rows = []
    for arch in ("fc", "resnet_fc", "densenet_fc"):
        name = ARCH_NAMES[arch]
        samples = totals(runs, arch)
        cid = "fig5_vanilla_flat" if arch == "fc" else f"fig5_{name.lower()}_decreases"
        if len(samples) < 2:
            rows.append(row(study, cid, f"{name}: Var/E^2 of ||J||^2 against depth at n = 10 L",
                            SOURCE_FIG5, measured=np.nan, expected="", tolerance=np.nan,
                            verdict="inconclusive", detail="fewer than 2 depths measured"))
            continue
        s = ratio_stats(samples, n_boot)
        pred = theory_on(theory, arch, "ratio_shape", s["depth"], widths_of(runs, arch, s["depth"]))
        pslope = loglog_slope(s["depth"], pred) if np.all(np.isfinite(pred)) else np.nan
        extra = ""
        if arch == "densenet_fc":
            p187 = theory_on(theory, arch, "ratio_shape_eq187", s["depth"], widths_of(runs, arch, s["depth"]))
            if np.all(np.isfinite(p187)):
                extra = f" (Eq. 42 with log(L)^2); with Eq. 187's H_L^2: {loglog_slope(s['depth'], p187):.3f}"
        base = (f"depths {[int(v) for v in s['depth']]}, {int(s['n'].min())} networks each; Var/E^2 = "
                + ", ".join(f"{v:.4g}" for v in s["ratio"])
                + f"; bootstrap SE of the slope {s['slope_se']:.3f}; slope of the predicted shape "
                f"over the same depths {pslope:.3f}{extra}")
        vals = {"slope": s["slope"], "slope_se": s["slope_se"], "predicted_slope": pslope}
        if arch == "fc":
            a = abs(s["slope"])
            verdict = "pass" if a <= flat else ("fail" if a - k * s["slope_se"] > flat else "inconclusive")
            rows.append(row(study, cid,
                            "The vanilla (ReLU, He init) network's Var(||J||^2)/E^2 stays constant with "
                            "depth when n = 10 L (fixed L/n; Hanin & Nica)", SOURCE_FIG5,
                            measured=s["slope"], expected="log-log slope 0", tolerance=flat,
                            verdict=verdict,
                            detail=base + (f"; fail only if |slope| - {k:g} SE > {flat:g}, "
                                           "inconclusive in between"), values=vals))
        else:
            sl, se = s["slope"], s["slope_se"]
            verdict = "pass" if sl + k * se < 0 else ("fail" if sl >= 0 else "inconclusive")
            rows.append(row(study, cid,
                            f"The {name}'s Var(||J||^2)/E^2 decreases with depth when n = 10 L "
                            f"(convergence to the NTK; {'Thm. 5, Cor. 1' if arch == 'resnet_fc' else 'Thm. 6, Cor. 2'})",
                            SOURCE_FIG5, measured=sl, expected=f"log-log slope < 0 by more than {k:g} SE",
                            tolerance=k * se, verdict=verdict,
                            detail=base + "; inconclusive when negative but within the SE band",
                            values=vals))
    return rows


def claims_kernel(runs: pd.DataFrame, p) -> list[dict]:
    """Beyond the paper: the scaled ResNet and the DenseNet move their NTK less than the
    vanilla net (and the scaled ResNet less than the constant-alpha one) at equal width/depth."""
    if not len(runs):
        return []
    study = p.study
    k = float(p.analysis.z_max)
    g = kernel_groups(runs)
    rows = []
    src = "beyond 001 (its §6 conclusion: residual nets operate closer to the kernel regime)"
    for (L, n), d in g.groupby(["depth", "width"]):
        van = d[d.arch == "fc"]
        res = d[d.arch == "resnet_fc"]
        scaled = res[[kernel_scaled(a, L, p) for a in res.alpha]]
        const = res[[not kernel_scaled(a, L, p) for a in res.alpha]]
        pairs = [("resnet_scaled_below_vanilla", scaled, van), ("densenet_below_vanilla", d[d.arch == "densenet_fc"], van),
                 ("resnet_scaled_below_constant_alpha", scaled, const)]
        for cid, a_, b_ in pairs:
            if len(a_) != 1 or len(b_) != 1:
                continue
            a, b = a_.iloc[0], b_.iloc[0]
            diff, se = a.rel - b.rel, float(np.hypot(a.se, b.se))
            verdict = "pass" if diff + k * se < 0 else ("fail" if diff >= 0 else "inconclusive")
            rows.append(row(study, f"kernel_{cid}[L={int(L)}, n={int(n)}]",
                            f"{a.group} changes its empirical NTK less than {b.group} during SGD "
                            f"(depth {int(L)}, width {int(n)})", src, measured=diff,
                            expected=f"rel. change difference < 0 by more than {k:g} SE",
                            tolerance=k * se, verdict=verdict,
                            detail=(f"||Theta_T - Theta_0||_F / ||Theta_0||_F: {a.group} {a.rel:.4g} "
                                    f"± {a.se:.2g} ({int(a.n)} nets, train MSE {a.loss_init:.3g} -> "
                                    f"{a.loss_final:.3g}, {a.diverged} diverged); {b.group} {b.rel:.4g} ± "
                                    f"{b.se:.2g} ({int(b.n)} nets, MSE {b.loss_init:.3g} -> "
                                    f"{b.loss_final:.3g}, {b.diverged} diverged)"),
                            values={"a": a.rel, "b": b.rel, "se": se}))
    return rows


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    rows = claims_fig4(select(runs, p, "fig4"), theory, p)
    rows += claims_fig5(select(runs, p, "fig5"), theory, p)
    rows += claims_kernel(select(runs, p, "kernel"), p)
    return frame(rows)
