"""Claims of Littwin & Wolf 2020 (arXiv:2001.10460) Figs. 4-5: Thm. 4's moment identities and
bounds, Eq. 152, the depth scaling of Var/E^2 at n = 10 L (Thms. 5-6, Cors. 1-2); and, beyond
the paper, the kernel regime in training."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import beyond, frame, max_abs_z_bootstrap, row, sanity
from .analysis import (
    ARCH_NAMES,
    c4_of,
    fig4_points,
    fig4_samples,
    kernel_groups,
    kernel_scaled,
    loglog_slope,
    ratio_stats,
    select,
    stack_independent,
    theory_on,
    totals,
    wide,
    widths_of,
)

SOURCE_THM41 = "001 §5.1, Thm. 4.1, Fig. 4(a)"
SOURCE_THM42 = "001 §5.1, Thm. 4.2, Fig. 4(b)"
SOURCE_EQ152 = "001 App. A.6, Eq. 152"
SOURCE_FIG5 = "001 §5.1, Thms. 5-6, Cors. 1-2, Fig. 5"
SOURCE_THM3 = "001 §5.1, Thm. 3, Eqs. 36, 38"


def _joint_zero(samples: np.ndarray, n_boot: int) -> dict:
    """Joint test that every column of ``samples`` (paired differences, rows = networks) has
    mean 0: :func:`sigprop.claims.max_abs_z_bootstrap` against a zero theory."""
    return max_abs_z_bootstrap(samples, np.zeros(samples.shape[1]), n_boot=n_boot, seed=0)


def claims_fig4(runs: pd.DataFrame, theory: pd.DataFrame, p) -> list[dict]:
    """001 Thm. 4 and Eq. 152.  Every (k, h) matrix of one depth is measured on the same
    networks (and both matrices of branch k share f_(k)), so each claim is ONE joint test over
    all (depth, k, h) points: the maximum |z| against its bootstrap critical value over the
    networks (depths are independent networks; :func:`stack_independent`)."""
    study = p.study
    k = float(p.analysis.z_max)
    nb = int(p.claims.n_boot_joint)
    margin = float(p.claims.margin)
    c4 = c4_of(theory)
    pts = fig4_points(runs, c4)
    smp = fig4_samples(runs)
    if not len(pts) or not smp:
        return [
            row(
                study,
                cid,
                "001 Fig. 4 (Thm. 4, Eq. 152)",
                SOURCE_THM41,
                measured=np.nan,
                expected="",
                tolerance=np.nan,
                verdict="inconclusive",
                detail="no ResNet runs with per-matrix Jacobians and reduced outputs",
                test="joint max |z| over (depth, k, h) points; not computed",
            )
            for cid in (
                "thm4_1_second_moment",
                "thm4_2_fourth_moment_bounds",
                "eq152_reduced_output_mean",
            )
        ]
    keys = sorted(smp)
    depths = [key[0] for key in keys]
    ns = [smp[key]["J2"].shape[0] for key in keys]
    n_used = min(ns)
    where = (
        f"{sum(smp[key]['J2'].shape[1] for key in keys)} (depth, k, h) points, depths "
        f"{depths}, {min(ns)}-{max(ns)} networks per depth ({n_used} used per depth in the "
        f"joint bootstrap)"
    )
    joint_test = (
        f"joint test over all (depth, k, h) points: T = max |z| <= the 95 % quantile "
        f"of T bootstrapped over networks ({nb} resamples, recentred; the matrices of a "
        f"depth share its networks, depths are independent)"
    )
    rows = []
    # Thm. 4.1: E||J^(k,h)||^2 - E f_(k)^2 = 0 at every point
    d2 = stack_independent([smp[key]["J2"] - smp[key]["F2"] for key in keys])
    f2 = stack_independent([smp[key]["F2"] for key in keys])
    jt = _joint_zero(d2, nb)
    se = d2.std(0, ddof=1) / np.sqrt(d2.shape[0])
    det = float(jt["crit"] * np.median(se / f2.mean(0)))
    ratio = (pts.J2 / pts.f2).to_numpy()
    rows.append(
        row(
            study,
            "thm4_1_second_moment",
            "E||df/dW^(k,h)||^2 = E f_(k)^2 (reduced network) at every depth, branch k and matrix h",
            SOURCE_THM41,
            measured=jt["T"],
            expected="max |z| of the paired differences <= its 95 % bootstrap critical value",
            tolerance=jt["crit"],
            verdict="pass" if jt["T"] <= jt["crit"] else "fail",
            detail=(
                f"{where}; T = {jt['T']:.2f}, critical value {jt['crit']:.2f} (p = {jt['p']:.3f}); "
                f"E J2 / E f2 per point in [{np.nanmin(ratio):.3f}, {np.nanmax(ratio):.3f}], pooled "
                f"{pts.J2.sum() / pts.f2.sum():.3f}; points within {k:g} paired SE (uncorrected, "
                f"not the verdict): {np.mean(np.abs(pts.d_J2_f2 / pts.se_d_J2_f2) <= k):.2f}"
            ),
            values={"T": jt["T"], "crit": jt["crit"], "p": jt["p"], "points": d2.shape[1]},
            test=(
                f"paired J2 - f2 per network; {joint_test}; detectable: critical value x median "
                "paired SE / E f_(k)^2 (a common relative offset of E||J||^2 from E f_(k)^2)"
            ),
            detectable=det,
            margin=margin,
        )
    )
    # Thm. 4.2: E f^4 / c4 <= E J^4 <= E f^4 at every point (one-sided at both ends)
    j4 = stack_independent([smp[key]["J2"] ** 2 for key in keys])
    f4 = stack_independent([smp[key]["F2"] ** 2 for key in keys])
    lo, hi = j4 - f4 / c4, j4 - f4  # want lo >= 0 and hi <= 0
    both = np.concatenate([lo, hi], axis=1)
    m_, s_ = both.mean(0), both.std(0, ddof=1) / np.sqrt(both.shape[0])
    P = lo.shape[1]
    viol = np.concatenate([-m_[:P] / s_[:P], m_[P:] / s_[P:]])  # > 0: on the wrong side
    crit = max_abs_z_bootstrap(both, m_, n_boot=nb, seed=0)["crit"]  # null spread of max |z|
    T4 = float(np.nanmax(viol))
    det4 = float(crit * np.median(s_[P:] / f4.mean(0)))
    r4 = (pts.J4 / pts.f4).to_numpy()
    rows.append(
        row(
            study,
            "thm4_2_fourth_moment_bounds",
            "E f_(k)^4 / c4 <= E||df/dW^(k,h)||^4 <= E f_(k)^4 at every depth, branch k and matrix h",
            SOURCE_THM42,
            measured=T4,
            expected=f"largest one-sided z of a bound violation <= the joint critical value (c4 = {c4:g})",
            tolerance=crit,
            verdict="fail" if T4 > crit else "pass",
            detail=(
                f"{where}; largest violation z {T4:+.2f} (negative: every point inside), "
                f"critical value {crit:.2f}; below f4/c4 by > {k:g} SE: "
                f"{int((viol[:P] > k).sum())}, above f4 by > {k:g} SE: {int((viol[P:] > k).sum())}; "
                f"E J4 / E f4 per point in [{np.nanmin(r4):.3f}, {np.nanmax(r4):.3f}], pooled "
                f"{pts.J4.sum() / pts.f4.sum():.3f} (bounds {1 / c4:.3f}, 1)"
            ),
            values={"T": T4, "crit": crit, "pooled_J4_over_f4": float(pts.J4.sum() / pts.f4.sum())},
            test=(
                f"paired J4 - f4/c4 and J4 - f4 per network; one-sided z of the violation at each "
                f"of the 2 x {P} bound points, its maximum against the bootstrap 95 % critical value "
                f"of max |z| over all of them ({nb} resamples over networks; two-sided, so "
                "conservative); detectable: critical value x median SE / E f_(k)^4 (relative to "
                f"the upper bound); its margin is the band between the bounds, 1 - 1/c4 = "
                f"{1 - 1 / c4:.3f}: a design that cannot resolve a violation that large is inconclusive"
            ),
            detectable=det4,
            margin=1 - 1 / c4,
        )
    )
    # Eq. 152: E f_(k)^2 = alpha^m (1 + alpha^m)^(L-1) at every (depth, k)
    th = theory[theory.quantity == "f2_eq152"]
    cols, thv = [], []
    for key in keys:
        L, alpha, _w = key
        s0 = smp[key]
        first = s0["sub"] == s0["sub"].min()  # one column per branch k
        m0 = int(runs[(runs.depth == L) & np.isclose(runs.alpha, alpha)].branch_depth.iloc[0])
        t = th[(th.depth == L) & np.isclose(th.alpha, alpha) & (th.branch_depth == m0)]
        cols.append(s0["F2"][:, first])
        thv += [float(t.value.iloc[0]) if len(t) else np.nan] * int(first.sum())
    thv = np.array(thv)
    if not np.isfinite(thv).all():
        rows.append(
            row(
                study,
                "eq152_reduced_output_mean",
                "E f_(k)^2 = alpha^m (1 + alpha^m)^(L-1) Sigma^0 for the reduced ResNet",
                SOURCE_EQ152,
                measured=np.nan,
                expected="",
                tolerance=np.nan,
                verdict="inconclusive",
                detail="no Eq. 152 theory for some (depth, alpha)",
                test="joint max |z| over (depth, k); not computed",
            )
        )
        return rows
    fr = stack_independent(cols)
    jr = max_abs_z_bootstrap(fr, thv, n_boot=nb, seed=0)
    zr = (fr.mean(0) - thv) / (fr.std(0, ddof=1) / np.sqrt(fr.shape[0]))
    rows.append(
        row(
            study,
            "eq152_reduced_output_mean",
            "E f_(k)^2 = alpha^m (1 + alpha^m)^(L-1) Sigma^0 for the reduced ResNet (Sigma^0 = x.x/d = 1)",
            SOURCE_EQ152,
            measured=jr["T"],
            expected="max |z| over (depth, k) <= its 95 % bootstrap critical value",
            tolerance=jr["crit"],
            verdict="pass" if jr["T"] <= jr["crit"] else "fail",
            detail=(
                f"{fr.shape[1]} (depth, k) points, depths {depths}, {n_used} networks per depth; "
                f"T = {jr['T']:.2f}, critical value {jr['crit']:.2f} (p = {jr['p']:.3f}); mean / "
                f"Eq. 152 in [{np.min(fr.mean(0) / thv):.3f}, {np.max(fr.mean(0) / thv):.3f}]; "
                f"points within {k:g} SE (uncorrected, not the verdict): {np.mean(np.abs(zr) <= k):.2f}"
            ),
            values={
                "T": jr["T"],
                "crit": jr["crit"],
                "p": jr["p"],
                "max_abs_z": float(np.max(np.abs(zr))),
            },
            test=(
                f"f_(k)^2 per network against Eq. 152; joint test over all (depth, k) points: T = "
                f"max |z| <= the 95 % quantile of T bootstrapped over networks ({nb} resamples); "
                "detectable: critical value x median relative SE (a common relative offset)"
            ),
            detectable=jr["detectable"],
            margin=margin,
        )
    )
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
            rows.append(
                row(
                    study,
                    cid,
                    f"{name}: Var/E^2 of ||J||^2 against depth at n = 10 L",
                    SOURCE_FIG5,
                    measured=np.nan,
                    expected="",
                    tolerance=np.nan,
                    verdict="inconclusive",
                    detail="fewer than 2 depths measured",
                    test="log-log slope of Var/E^2 against depth; not computed",
                )
            )
            continue
        s = ratio_stats(samples, n_boot)
        pred = theory_on(theory, arch, "ratio_shape", s["depth"], widths_of(runs, arch, s["depth"]))
        pslope = loglog_slope(s["depth"], pred) if np.all(np.isfinite(pred)) else np.nan
        extra = ""
        if arch == "densenet_fc":
            p187 = theory_on(
                theory, arch, "ratio_shape_eq187", s["depth"], widths_of(runs, arch, s["depth"])
            )
            if np.all(np.isfinite(p187)):
                extra = f" (Eq. 42 with log(L)^2); with Eq. 187's H_L^2: {loglog_slope(s['depth'], p187):.3f}"
        base = (
            f"depths {[int(v) for v in s['depth']]}, {int(s['n'].min())} networks each; Var/E^2 = "
            + ", ".join(f"{v:.4g}" for v in s["ratio"])
            + f"; bootstrap SE of the slope {s['slope_se']:.3f}; slope of the predicted shape "
            f"over the same depths {pslope:.3f}{extra}"
        )
        vals = {"slope": s["slope"], "slope_se": s["slope_se"], "predicted_slope": pslope}
        if arch == "fc":
            a, kse = abs(s["slope"]), k * s["slope_se"]
            if not np.isfinite(kse):
                verdict = "inconclusive"
            elif a - kse > flat:
                verdict = "fail"
            else:  # row() makes a pass inconclusive when k SE > the tolerance
                verdict = "pass" if a <= flat else "inconclusive"
            rows.append(
                row(
                    study,
                    cid,
                    "The vanilla (ReLU, He init) network's Var(||J||^2)/E^2 stays constant with "
                    "depth when n = 10 L (fixed L/n; Hanin & Nica)",
                    SOURCE_FIG5,
                    measured=s["slope"],
                    expected="log-log slope 0",
                    tolerance=flat,
                    verdict=verdict,
                    detail=base + (f"; {k:g} SE = {kse:.3f} against the tolerance {flat:g}"),
                    values=vals,
                    test=(
                        f"log-log slope of Var/E^2 over {len(s['depth'])} depths (independent "
                        f"networks; SE from {n_boot} bootstrap resamples per depth): pass if "
                        f"|slope| <= {flat:g} and {k:g} SE <= {flat:g} (the design resolves "
                        f"the tolerance); fail if |slope| - {k:g} SE > {flat:g}; else "
                        f"inconclusive; detectable: {k:g} SE (slope units), the slope the "
                        "design resolves"
                    ),
                    detectable=kse,
                    margin=flat,
                )
            )
        else:
            sl, se = s["slope"], s["slope_se"]
            if not (np.isfinite(sl) and np.isfinite(se)):  # e.g. too few networks per depth
                verdict = "inconclusive"
            else:
                verdict = "pass" if sl + k * se < 0 else ("fail" if sl >= 0 else "inconclusive")
            rows.append(
                row(
                    study,
                    cid,
                    f"The {name}'s Var(||J||^2)/E^2 decreases with depth when n = 10 L "
                    f"(convergence to the NTK; {'Thm. 5, Cor. 1' if arch == 'resnet_fc' else 'Thm. 6, Cor. 2'})",
                    SOURCE_FIG5,
                    measured=sl,
                    expected=f"log-log slope < 0 by more than {k:g} SE",
                    tolerance=k * se,
                    verdict=verdict,
                    detail=base + "; inconclusive when negative but within the SE band",
                    values=vals,
                    test=(
                        f"log-log slope of Var/E^2 over {len(s['depth'])} depths (independent "
                        f"networks; SE from {n_boot} bootstrap resamples per depth): pass if "
                        f"slope < -{k:g} SE, fail if slope >= 0, else inconclusive; "
                        f"detectable: {k:g} SE (slope units)"
                    ),
                    detectable=k * se,
                )
            )
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
    src = (
        "beyond the paper: our test of 001's §6 remark that residual nets operate closer to "
        "the kernel regime (001 measures no training)"
    )
    for (L, n), d in g.groupby(["depth", "width"]):
        van = d[d.arch == "fc"]
        res = d[d.arch == "resnet_fc"]
        scaled = res[[kernel_scaled(a, L, p) for a in res.alpha]]
        const = res[[not kernel_scaled(a, L, p) for a in res.alpha]]
        pairs = [
            ("resnet_scaled_below_vanilla", scaled, van),
            ("densenet_below_vanilla", d[d.arch == "densenet_fc"], van),
            ("resnet_scaled_below_constant_alpha", scaled, const),
        ]
        for cid, a_, b_ in pairs:
            if len(a_) != 1 or len(b_) != 1:
                continue
            a, b = a_.iloc[0], b_.iloc[0]
            diff, se = a.rel - b.rel, float(np.hypot(a.se, b.se))
            verdict = "pass" if diff + k * se < 0 else ("fail" if diff >= 0 else "inconclusive")
            rows.append(
                beyond(
                    study,
                    f"kernel_{cid}[L={int(L)}, n={int(n)}]",
                    f"{a.group} changes its empirical NTK less than {b.group} during SGD "
                    f"(depth {int(L)}, width {int(n)})",
                    src,
                    measured=diff,
                    expected=f"rel. change difference < 0 by more than {k:g} SE",
                    tolerance=k * se,
                    verdict=verdict,
                    detail=(
                        f"||Theta_T - Theta_0||_F / ||Theta_0||_F: {a.group} {a.rel:.4g} "
                        f"± {a.se:.2g} ({int(a.n)} nets, train MSE {a.loss_init:.3g} -> "
                        f"{a.loss_final:.3g}, {a.diverged} diverged); {b.group} {b.rel:.4g} ± "
                        f"{b.se:.2g} ({int(b.n)} nets, MSE {b.loss_init:.3g} -> "
                        f"{b.loss_final:.3g}, {b.diverged} diverged)"
                    ),
                    values={"a": a.rel, "b": b.rel, "se": se},
                    test=(
                        f"difference of mean relative NTK change between two independent "
                        f"groups of trained networks ({int(a.n)} and {int(b.n)} seeds), SE = "
                        f"hypot of the SEs over seeds: pass if < -{k:g} SE, fail if >= 0, "
                        f"else inconclusive; detectable: {k:g} SE (relative change units)"
                    ),
                    detectable=k * se,
                )
            )
    return rows


def claims_thm3(runs: pd.DataFrame, p) -> list[dict]:
    """001 Thm. 3 (Eq. 38): E f_(k)^m = E (f^k)^m for even m, where f_(k) is the reduced
    network's output and f^k the full output's paths through W^k (Eq. 36; measured as
    <W^{k,1}, df/dW^{k,1}>, :func:`sigprop.studies.jacobian_moments.jacobians.output_and_jacobians`).  The two
    differ network by network (different activation patterns, Fig. 3); only their moments
    should agree.  One joint test per m over all (depth, k) points: the paired differences
    f_(k)^m - (f^k)^m of a depth share its networks.  A sanity row checks Eq. 36's f^k on the
    data: the paths through W^{k,1} are those through W^{k,2} (each path of branch k crosses
    both), so the two Euler sums agree to rounding."""
    study = p.study
    nb = int(p.claims.n_boot_joint)
    margin = float(p.claims.margin)
    blocks: dict[int, list] = {2: [], 4: []}
    ref: dict[int, list] = {2: [], 4: []}
    same_gap, n_pts, depths = 0.0, 0, []
    for L, d in runs.groupby("depth"):
        P, F = wide(d, "f_path"), wide(d, "f_reduced")
        if P.empty or F.empty:
            continue
        common = P.index.intersection(F.index).sort_values()
        P, F = P.loc[common], F.loc[common]
        ks = sorted({k for k, _h in P.columns})
        fk = np.stack([P[(k, 1)].to_numpy(float) for k in ks], axis=1)
        fr = np.stack([F[(k, 0)].to_numpy(float) for k in ks], axis=1)
        if (ks[0], 2) in P.columns:
            f2 = np.stack([P[(k, 2)].to_numpy(float) for k in ks], axis=1)
            same_gap = max(same_gap, float(np.max(np.abs(fk - f2) / np.maximum(np.abs(fk), 1e-12))))
        for m in (2, 4):
            blocks[m].append(fr**m - fk**m)
            ref[m].append(fr**m)
        n_pts += len(ks)
        depths.append(int(L))
    if not n_pts:
        return [
            row(
                study,
                f"thm3_moments_equal[m={m}]",
                "001 Thm. 3",
                SOURCE_THM3,
                measured=np.nan,
                expected="",
                tolerance=np.nan,
                verdict="inconclusive",
                detail="no ResNet runs with f^k (metric f_path)",
                test="joint max |z| over (depth, k) points; not computed",
            )
            for m in (2, 4)
        ]
    rows = []
    for m in (2, 4):
        diff = stack_independent(blocks[m])
        base = stack_independent(ref[m])
        jt = max_abs_z_bootstrap(diff, np.zeros(diff.shape[1]), n_boot=nb, seed=0)
        se = diff.std(0, ddof=1) / np.sqrt(diff.shape[0])
        det = float(jt["crit"] * np.median(se / base.mean(0)))
        pooled = float(base.mean(0).sum() / (base - diff).mean(0).sum())
        rows.append(
            row(
                study,
                f"thm3_moments_equal[m={m}]",
                f"E f_(k)^{m} = E (f^k)^{m}: the reduced network's output and the full output's paths "
                "through W^k have equal moments (Eq. 38)",
                SOURCE_THM3,
                measured=jt["T"],
                expected="max |z| of the paired differences <= its 95 % bootstrap critical value",
                tolerance=jt["crit"],
                verdict="fail" if jt["T"] > jt["crit"] else "pass",
                detail=(
                    f"{n_pts} (depth, k) points, depths {depths}, {diff.shape[0]} networks per "
                    f"depth; T = {jt['T']:.2f}, critical value {jt['crit']:.2f} (p = "
                    f"{jt['p']:.3f}); pooled E f_(k)^{m} / E (f^k)^{m} = {pooled:.3f}"
                ),
                values={"T": jt["T"], "crit": jt["crit"], "p": jt["p"], "pooled_ratio": pooled},
                test=(
                    f"paired f_(k)^{m} - (f^k)^{m} per network; joint max |z| over all (depth, k) "
                    f"points against its 95 % bootstrap critical value ({nb} resamples over "
                    "networks); detectable: critical value x median paired SE / E f_(k)^"
                    f"{m} (a common relative offset)"
                ),
                detectable=det,
                margin=margin,
            )
        )
    rows.append(
        sanity(
            study,
            "thm3_paths_through_both_branch_matrices",
            "Eq. 36's f^k is the same through W^{k,1} and W^{k,2} (every path of branch k crosses "
            "both)",
            SOURCE_THM3,
            measured=same_gap,
            expected="relative difference <= 1e-9",
            tolerance=1e-9,
            verdict="pass" if same_gap <= 1e-9 else "fail",
            detail=f"largest relative difference over {n_pts} (depth, k) points and every network",
            test="identity of the measurement (Euler sums over the two matrices of a branch)",
        )
    )
    return rows


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    rows = claims_fig4(select(runs, p, "fig4"), theory, p)
    rows += claims_thm3(select(runs, p, "fig4"), p)
    rows += claims_fig5(select(runs, p, "fig5"), theory, p)
    rows += claims_kernel(select(runs, p, "kernel"), p)
    return frame(rows)
