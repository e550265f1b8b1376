"""The statistics of the claims of Littwin & Wolf 2020 (arXiv:2001.10460) Figs. 4-5 (declared in
``CLAIMS``, ``__init__.py``): Thm. 4's moment identities and bounds, Eq. 152 and Thm. 3 as joint
max |z| tests over Fig. 4's points, the depth scaling of Var/E^2 at n = 10 L (Thms. 5-6,
Cors. 1-2); and, beyond the paper, the kernel regime in training.  Each ``claims_*`` function
returns the results of its rows (:func:`sigprop.claims.declared.result`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import max_abs_z_bootstrap
from ...claims.declared import build, result
from . import CLAIMS, SOURCE
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


def _no_data(claim, qualifier="", *, statement, detail, test, source=None, **fields) -> dict:
    """An inconclusive row of a claim the runs give no data for."""
    texts = dict(statement=statement, expected="", detail=detail, test=test)
    fields.update(source=source, texts=texts, measured=np.nan, tolerance=np.nan)
    return result(claim, qualifier, verdict="inconclusive", **fields)


def _joint(jt: dict, **values) -> dict:
    """The arguments of a row for the joint test ``jt``
    (:func:`sigprop.claims.max_abs_z_bootstrap`): its max |z| ``T`` against the critical value
    ``crit`` (and ``values`` beside them), and both with its p-value as fields."""
    t, c, pv = jt["T"], jt["crit"], jt["p"]
    vals = dict(T=t, crit=c, p=pv, **values)
    return dict(measured=t, tolerance=c, values=vals, T=t, crit=c, pval=pv)


def claims_fig4(runs: pd.DataFrame, theory: pd.DataFrame, p) -> list[dict]:
    """001 Thm. 4 and Eq. 152.  Every (k, h) matrix of one depth is measured on the same
    networks (and both matrices of branch k share f_(k)), so each claim is ONE joint test over
    all (depth, k, h) points: the maximum |z| against its bootstrap critical value over the
    networks (depths are independent networks; :func:`stack_independent`)."""
    k, nb, margin = float(p.analysis.z_max), int(p.claims.n_boot_joint), float(p.claims.margin)
    c4 = c4_of(theory)
    pts = fig4_points(runs, c4)
    smp = fig4_samples(runs)
    if not len(pts) or not smp:
        src = CLAIMS["thm4_1_second_moment"].source
        return [
            _no_data(
                cid,
                statement="001 Fig. 4 (Thm. 4, Eq. 152)",
                source=src,
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
    ns = [smp[key]["J2"].shape[0] for key in keys]
    at = dict(k=k, nb=nb, depths=[key[0] for key in keys], n_min=min(ns), n_max=max(ns))
    at.update(n_used=min(ns), points=sum(smp[key]["J2"].shape[1] for key in keys))
    out = []
    # Thm. 4.1: E||J^(k,h)||^2 - E f_(k)^2 = 0 at every point
    d2 = stack_independent([smp[key]["J2"] - smp[key]["F2"] for key in keys])
    f2 = stack_independent([smp[key]["F2"] for key in keys])
    jt = max_abs_z_bootstrap(d2, np.zeros(d2.shape[1]), n_boot=nb, seed=0)
    se = d2.std(0, ddof=1) / np.sqrt(d2.shape[0])
    ratio = (pts.J2 / pts.f2).to_numpy()
    f = dict(lo=np.nanmin(ratio), hi=np.nanmax(ratio), pooled=pts.J2.sum() / pts.f2.sum())
    f.update(within=np.mean(np.abs(pts.d_J2_f2 / pts.se_d_J2_f2) <= k))
    out.append(
        result(
            "thm4_1_second_moment",
            **_joint(jt, points=d2.shape[1]),
            verdict="pass" if jt["T"] <= jt["crit"] else "fail",
            detectable=float(jt["crit"] * np.median(se / f2.mean(0))),
            margin=margin,
            **at,
            **f,
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
    r4 = (pts.J4 / pts.f4).to_numpy()
    pooled = float(pts.J4.sum() / pts.f4.sum())
    f = dict(c4=c4, P=P, band=1 - 1 / c4, inv_c4=1 / c4, T=T4, crit=crit, pooled=pooled)
    f.update(below=int((viol[:P] > k).sum()), above=int((viol[P:] > k).sum()))
    out.append(
        result(
            "thm4_2_fourth_moment_bounds",
            measured=T4,
            tolerance=crit,
            verdict="fail" if T4 > crit else "pass",
            values={"T": T4, "crit": crit, "pooled_J4_over_f4": pooled},
            detectable=float(crit * np.median(s_[P:] / f4.mean(0))),
            margin=1 - 1 / c4,
            **at,
            **f,
            lo=np.nanmin(r4),
            hi=np.nanmax(r4),
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
        return out + [
            _no_data(
                "eq152_reduced_output_mean",
                statement="E f_(k)^2 = alpha^m (1 + alpha^m)^(L-1) Sigma^0 for the reduced ResNet",
                detail="no Eq. 152 theory for some (depth, alpha)",
                test="joint max |z| over (depth, k); not computed",
            )
        ]
    fr = stack_independent(cols)
    jr = max_abs_z_bootstrap(fr, thv, n_boot=nb, seed=0)
    zr = (fr.mean(0) - thv) / (fr.std(0, ddof=1) / np.sqrt(fr.shape[0]))
    f = dict(
        lo=np.min(fr.mean(0) / thv), hi=np.max(fr.mean(0) / thv), within=np.mean(np.abs(zr) <= k)
    )
    out.append(
        result(
            "eq152_reduced_output_mean",
            **_joint(jr, max_abs_z=float(np.max(np.abs(zr)))),
            verdict="pass" if jr["T"] <= jr["crit"] else "fail",
            detectable=jr["detectable"],
            margin=margin,
            **dict(at, points=fr.shape[1]),
            **f,
        )
    )
    return out


def claims_fig5(runs: pd.DataFrame, theory: pd.DataFrame, p) -> list[dict]:
    k = float(p.analysis.z_max)
    flat = float(p.claims.flat_slope_tolerance)
    n_boot = int(p.analysis.n_boot)
    out = []
    for arch, cid in (
        ("fc", "fig5_vanilla_flat"),
        ("resnet_fc", "fig5_resnet_decreases"),
        ("densenet_fc", "fig5_densenet_decreases"),
    ):
        name = ARCH_NAMES[arch]
        samples = totals(runs, arch)
        if len(samples) < 2:
            out.append(
                _no_data(
                    cid,
                    statement="{name}: Var/E^2 of ||J||^2 against depth at n = 10 L",
                    detail="fewer than 2 depths measured",
                    test="log-log slope of Var/E^2 against depth; not computed",
                    name=name,
                )
            )
            continue
        s = ratio_stats(samples, n_boot)
        widths = widths_of(runs, arch, s["depth"])
        pred = theory_on(theory, arch, "ratio_shape", s["depth"], widths)
        pslope = loglog_slope(s["depth"], pred) if np.all(np.isfinite(pred)) else np.nan
        eq187 = ""
        if arch == "densenet_fc":
            p187 = theory_on(theory, arch, "ratio_shape_eq187", s["depth"], widths)
            if np.all(np.isfinite(p187)):
                eq187 = (
                    f" (Eq. 42 with log(L)^2); with Eq. 187's H_L^2: "
                    f"{loglog_slope(s['depth'], p187):.3f}"
                )
        sl, se = s["slope"], s["slope_se"]
        vals = {"slope": sl, "slope_se": se, "predicted_slope": pslope}
        fields = dict(values=vals, detectable=k * se, k=k, n_boot=n_boot, n_depths=len(s["depth"]))
        fields.update(depths=[int(v) for v in s["depth"]], networks=int(s["n"].min()), eq187=eq187)
        fields.update(ratios=", ".join(f"{v:.4g}" for v in s["ratio"]), slope_se=se, pslope=pslope)
        if arch == "fc":
            a, kse = abs(sl), k * se
            if not np.isfinite(kse):
                verdict = "inconclusive"
            elif a - kse > flat:
                verdict = "fail"
            else:  # row() makes a pass inconclusive when k SE > the tolerance
                verdict = "pass" if a <= flat else "inconclusive"
            fields.update(flat=flat, kse=kse, margin=flat)
            out.append(result(cid, measured=sl, tolerance=flat, verdict=verdict, **fields))
        else:
            if not (np.isfinite(sl) and np.isfinite(se)):  # e.g. too few networks per depth
                verdict = "inconclusive"
            else:
                verdict = "pass" if sl + k * se < 0 else ("fail" if sl >= 0 else "inconclusive")
            out.append(result(cid, measured=sl, tolerance=k * se, verdict=verdict, **fields))
    return out


def _group(x: str, r: pd.Series) -> dict:
    """The fields of one group of trained networks in a kernel row, named ``x``, ``x_rel``..."""
    f = dict(rel=r.rel, se=r.se, n=int(r.n), l0=r.loss_init, l1=r.loss_final, div=r.diverged)
    return {x: r.group, **{f"{x}_{k}": v for k, v in f.items()}}


def claims_kernel(runs: pd.DataFrame, p) -> list[dict]:
    """Beyond the paper: the scaled ResNet and the DenseNet move their NTK less than the
    vanilla net (and the scaled ResNet less than the constant-alpha one) at equal width/depth."""
    if not len(runs):
        return []
    k = float(p.analysis.z_max)
    out = []
    for (L, n), d in kernel_groups(runs).groupby(["depth", "width"]):
        van = d[d.arch == "fc"]
        res = d[d.arch == "resnet_fc"]
        scaled = res[[kernel_scaled(a, L, p) for a in res.alpha]]
        const = res[[not kernel_scaled(a, L, p) for a in res.alpha]]
        pairs = [
            ("kernel_resnet_scaled_below_vanilla", scaled, van),
            ("kernel_densenet_below_vanilla", d[d.arch == "densenet_fc"], van),
            ("kernel_resnet_scaled_below_constant_alpha", scaled, const),
        ]
        for cid, a_, b_ in pairs:
            if len(a_) != 1 or len(b_) != 1:
                continue
            a, b = a_.iloc[0], b_.iloc[0]
            diff, se = a.rel - b.rel, float(np.hypot(a.se, b.se))
            verdict = "pass" if diff + k * se < 0 else ("fail" if diff >= 0 else "inconclusive")
            out.append(
                result(
                    cid,
                    f"L={int(L)}, n={int(n)}",
                    measured=diff,
                    tolerance=k * se,
                    verdict=verdict,
                    values={"a": a.rel, "b": b.rel, "se": se},
                    detectable=k * se,
                    k=k,
                    L=int(L),
                    n=int(n),
                    **_group("a", a),
                    **_group("b", b),
                )
            )
    return out


def claims_thm3(runs: pd.DataFrame, p) -> list[dict]:
    """001 Thm. 3 (Eq. 38): E f_(k)^m = E (f^k)^m for even m, where f_(k) is the reduced
    network's output and f^k the full output's paths through W^k (Eq. 36; measured as
    <W^{k,1}, df/dW^{k,1}>, :func:`sigprop.studies.jacobian_moments.jacobians.output_and_jacobians`).  The two
    differ network by network (different activation patterns, Fig. 3); only their moments
    should agree.  One joint test per m over all (depth, k) points: the paired differences
    f_(k)^m - (f^k)^m of a depth share its networks.  A sanity row checks Eq. 36's f^k on the
    data: the paths through W^{k,1} are those through W^{k,2} (each path of branch k crosses
    both), so the two Euler sums agree to rounding."""
    nb = int(p.claims.n_boot_joint)
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
            _no_data(
                "thm3_moments_equal",
                f"m={m}",
                statement="001 Thm. 3",
                detail="no ResNet runs with f^k (metric f_path)",
                test="joint max |z| over (depth, k) points; not computed",
            )
            for m in (2, 4)
        ]
    out = []
    for m in (2, 4):
        diff = stack_independent(blocks[m])
        base = stack_independent(ref[m])
        jt = max_abs_z_bootstrap(diff, np.zeros(diff.shape[1]), n_boot=nb, seed=0)
        se = diff.std(0, ddof=1) / np.sqrt(diff.shape[0])
        pooled = float(base.mean(0).sum() / (base - diff).mean(0).sum())
        f = dict(m=m, nb=nb, points=n_pts, depths=depths, networks=diff.shape[0], pooled=pooled)
        out.append(
            result(
                "thm3_moments_equal",
                f"m={m}",
                **_joint(jt, pooled_ratio=pooled),
                verdict="fail" if jt["T"] > jt["crit"] else "pass",
                detectable=float(jt["crit"] * np.median(se / base.mean(0))),
                margin=float(p.claims.margin),
                **f,
            )
        )
    out.append(
        result(
            "thm3_paths_through_both_branch_matrices",
            measured=same_gap,
            tolerance=1e-9,
            verdict="pass" if same_gap <= 1e-9 else "fail",
            points=n_pts,
        )
    )
    return out


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    fig4 = select(runs, p, "fig4")
    results = claims_fig4(fig4, theory, p) + claims_thm3(fig4, p)
    results += claims_fig5(select(runs, p, "fig5"), theory, p)
    results += claims_kernel(select(runs, p, "kernel"), p)
    return build(p.study, CLAIMS, results, SOURCE)
