"""Claims of Huang, Xu, Du, Zeng, Zhao 2019, "Mean field theory for deep dropout networks"
(arXiv:1912.09132) Sec. 4.1-4.2: Eq. 12 predicts g_aa in linear nets (Fig. 2a), g_ab decays at
chi_1 (Eq. 13), not chi_2 (Fig. 2b-d), and g_aa, g~_ab decay at chi_1 for nonlinear nets
(Fig. 3).

Rows (the claims contract of :mod:`sigprop.claims`); every claim here is an equivalence and
states its ``margin`` (:func:`sigprop.claims.row`: a pass whose detectable exceeds the margin is
``inconclusive``):

- ``eq12_predicts_g_aa[linear, rho]`` (claim): one joint test over the layers, which share the
  instantiations: max |mean g_aa^l - Eq. 12| / SE over the layers against its bootstrap null
  (:func:`sigprop.claims.max_abs_z_bootstrap`); detectable: a common relative offset; margin
  ``claims.margin`` (a 10 % relative offset).
- ``g_ab_follows_chi1[linear, rho<1]`` (claim): the fitted per-layer decay factor is within
  ``z_max`` bootstrap SE of chi_1 and closer to chi_1 than to chi_2; the test resolves the two
  only when ``z_max`` SE is below half their gap, else ``inconclusive``; margin: that half gap
  |chi_1 - chi_2| / 2 (the rule as it was, stated as a margin).
- ``{g_aa,g_ab_abs}_decays_at_chi1[act, rho]`` (claim): |rate - chi_1| <= max(z_max SE,
  rate_rel_tolerance chi_1); a pass needs ``z_max`` SE <= rate_rel_tolerance chi_1 (else the
  design cannot resolve a deviation of that size: ``inconclusive``); margin: rate_rel_tolerance
  chi_1 (the same rule, stated as a margin).
- ``g_ab_abs_decays_at_chi1[act, rho=1]`` where c* = 1 (sanity): the two inputs coincide, so
  g~_ab = g_aa at every layer of every net and the row repeats the g_aa claim: an identity,
  checked on the data, never counted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, max_abs_z_bootstrap, row, sanity, z_within
from ...claims.fits import decay_rate, fit_window
from ...measure.gradient_runs import matrix
from .analysis import profile, settings_of, theory_curve, theory_value

SOURCE_EQ12 = "000 §4.1, Eqs. 8, 12, Fig. 2(a)"
SOURCE_CHI1 = "000 §4.1, Eq. 13, Fig. 2(b-d)"
SOURCE_FIG3 = "000 §4.2, Eq. 13, Fig. 3"
IDENTITY_RTOL = 1e-12
"""g~_ab equals g_aa when the two inputs coincide (c* = 1): up to rounding."""


def rate_verdict(r: float, se: float, chi1: float, k: float, rtol: float) -> tuple[str, str, float]:
    """Fig. 3: ``|r - chi1| <= max(k SE, rtol chi1)`` passes (fail beyond), but only when the
    design resolves the scientific tolerance: ``k SE > rtol chi1`` turns a pass into
    ``inconclusive``.  Returns ``(verdict, test, detectable)``, detectable = max(k SE,
    rtol chi1) in units of the per-layer decay factor."""
    floor = rtol * chi1
    verdict, test, det = z_within(r - chi1 if np.isfinite(r) else np.nan, se, k, floor)
    test = (
        f"|rate - chi1| <= max({k:g} bootstrap SE, {rtol:g} chi1 = {floor:.4f}) "
        "(per-layer decay factor)"
    )
    if verdict == "pass" and k * se > floor:
        verdict = "inconclusive"
        test += f"; {k:g} SE > {rtol:g} chi1: the design cannot resolve the tolerance"
    return verdict, test, det


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    cl = p.claims
    study = p.study
    k = float(cl.z_max)
    rtol = float(cl.rate_rel_tolerance)
    n_boot = int(cl.n_boot)
    level, joint_boot = float(cl.joint_level), int(cl.joint_n_boot)
    margin = float(cl.margin)
    gab_from = int(cl.gab_fit_min_from_output)
    act_from = int(cl.fit_min_from_output)
    rows = []
    settings = settings_of(runs)
    # (1) Eq. 12 predicts g_aa in linear nets: one joint test over the layers
    for s in [s for s in settings if s["activation"] == "linear"]:
        v, layers = matrix(runs, s, "g_aa")
        prof = profile(runs, s, "g_aa")
        th = theory_curve(theory, s, "g_aa_eq12", layers)
        j = max_abs_z_bootstrap(v, th, n_boot=joint_boot, level=level)
        ok = np.isfinite(j["T"]) and np.isfinite(j["crit"])
        verdict = ("pass" if j["T"] <= j["crit"] else "fail") if ok else "inconclusive"
        lr = np.log(prof["mean"].to_numpy() / th)
        rows.append(
            row(
                study,
                f"eq12_predicts_g_aa[linear, rho={s['keep_rate']:g}]",
                "Eq. 12 predicts the mean g_aa^l of linear dropout networks at every layer",
                SOURCE_EQ12,
                measured=j["T"],
                expected=f"max |z| <= {j['crit']:.2f} (bootstrap {level:g} critical value)",
                tolerance=j["crit"],
                verdict=verdict,
                detail=(
                    f"L = {s['depth']}, {len(layers)} layers sharing {j['n']} instantiations; "
                    f"max |z| {j['T']:.2f}, bootstrap p = {j['p']:.2f}; max |log ratio| "
                    f"{np.nanmax(np.abs(lr)):.3f}; ratio at l = 1: {np.exp(lr[0]):.3f}, at "
                    f"l = L: {np.exp(lr[-1]):.3f}; detectable: a common relative offset of "
                    f"{j['detectable']:.3f}"
                ),
                values={"T": j["T"], "crit": j["crit"], "p": j["p"], "layers": len(layers)},
                test=(
                    f"joint max |mean - Eq. 12| / SE over {len(layers)} layers, bootstrap over "
                    f"{j['n']} shared instantiations ({joint_boot} resamples), pass at T <= the "
                    f"{level:g} quantile; detectable in relative offset from Eq. 12"
                ),
                detectable=j["detectable"],
                margin=margin,
            )
        )
    # (2) g_ab decays at chi_1, not chi_2 (linear, rho < 1), far from the output
    for s in [s for s in settings if s["activation"] == "linear" and s["keep_rate"] < 1]:
        v, layers = matrix(runs, s, "g_ab")
        use = fit_window(layers, int(s["depth"]), gab_from)
        c1, c2 = theory_value(theory, s, "chi1"), theory_value(theory, s, "chi2")
        cid = f"g_ab_follows_chi1[linear, rho={s['keep_rate']:g}]"
        half_gap = abs(c1 - c2) / 2
        test = (
            f"|rate - chi1| <= {k:g} bootstrap SE and closer to chi1 than to chi2 (per-layer "
            f"decay factor); resolves chi1 from chi2 when {k:g} SE < |chi1 - chi2| / 2 = "
            f"{half_gap:.4f}"
        )
        if use.sum() < 3:
            rows.append(
                row(
                    study,
                    cid,
                    "g_ab^l = g_ab^{l+1} chi_1, not chi_2",
                    SOURCE_CHI1,
                    measured=np.nan,
                    expected=f"chi1 = {c1:.4f}",
                    tolerance=np.nan,
                    verdict="inconclusive",
                    test=test,
                    margin=half_gap,
                    detail=f"fewer than 3 layers at least {gab_from} from the output",
                )
            )
            continue
        r, se = decay_rate(v, layers, use, n_boot)
        near = abs(r - c1) <= k * se and abs(r - c1) < abs(r - c2)
        if not (np.isfinite(r) and np.isfinite(se)):
            verdict = "inconclusive"
        elif k * se >= half_gap:
            verdict = "inconclusive"
            test += f"; here {k:g} SE = {k * se:.4f}: cannot resolve"
        else:
            verdict = "pass" if near else "fail"
        rows.append(
            row(
                study,
                cid,
                "Away from the output the mean g_ab^l of linear dropout networks decays per "
                "layer at chi_1 = sigma_w^2/rho (Eq. 13), not at chi_2 = sigma_w^2",
                SOURCE_CHI1,
                measured=r,
                expected=f"chi1 = {c1:.4f} (chi2 = {c2:.4f})",
                tolerance=k * se,
                verdict=verdict,
                detail=(
                    f"fit of log mean g_ab over layers {layers[use].min()}-{layers[use].max()} "
                    f"(>= {gab_from} from the output L = {s['depth']}), {len(v)} "
                    f"instantiations; bootstrap SE {se:.4f}; |r - chi1| = {abs(r - c1):.4f}, "
                    f"|r - chi2| = {abs(r - c2):.4f}"
                ),
                values={"rate": r, "se": se, "chi1": c1, "chi2": c2},
                test=test,
                detectable=k * se,
                margin=half_gap,
            )
        )
    # (3) Fig. 3: g_aa and g~_ab decay at chi_1 for nonlinear activations
    for s in [s for s in settings if s["activation"] != "linear"]:
        c1 = theory_value(theory, s, "chi1")
        c_star = theory_value(theory, s, "c_star")
        g_aa, _ = matrix(runs, s, "g_aa")
        for metric, label in (("g_aa", "g_aa"), ("g_ab_abs", "g~_ab")):
            v, layers = matrix(runs, s, metric)
            use = fit_window(layers, int(s["depth"]), act_from)
            r, se = decay_rate(v, layers, use, n_boot)
            cid = f"{metric}_decays_at_chi1[{s['activation']}, rho={s['keep_rate']:g}]"
            claim = f"{label}^l = {label}^{{l+1}} chi_1 for {s['activation']} dropout networks"
            detail = (
                f"fit of log mean over layers {layers[use].min()}-{layers[use].max()} "
                f"(L = {s['depth']}), {len(v)} instantiations; bootstrap SE {se:.4f}; "
                f"tolerance max({k:g} SE, {rtol:g} chi1); "
                f"chi2 = {theory_value(theory, s, 'chi2'):.4f}; c* = {c_star:.4f}"
            )
            if metric != "g_aa" and s["keep_rate"] == 1.0 and c_star >= 1.0 - 1e-12:
                # c* = 1 without dropout: both inputs are one input, g~_ab = g_aa exactly
                dev = (
                    float(np.nanmax(np.abs(v - g_aa) / np.maximum(np.abs(g_aa), 1e-300)))
                    if v.shape == g_aa.shape
                    else np.inf
                )
                rows.append(
                    sanity(
                        study,
                        cid,
                        claim + " (rho = 1, c* = 1: equals the g_aa claim)",
                        SOURCE_FIG3,
                        measured=r,
                        expected="the g_aa rate (g~_ab = g_aa when c* = 1)",
                        tolerance=IDENTITY_RTOL,
                        verdict="pass" if dev <= IDENTITY_RTOL else "fail",
                        detail=(
                            detail + f"; max relative |g~_ab - g_aa| over nets and layers "
                            f"{dev:.1e}: the same measurement as g_aa_decays_at_chi1, not "
                            "evidence for g_ab ~ xi1"
                        ),
                        values={"rate": r, "se": se, "chi1": c1, "max_rel_diff_to_g_aa": dev},
                        test=f"identity: g~_ab = g_aa at every layer (relative {IDENTITY_RTOL:g})",
                    )
                )
                continue
            verdict, test, det = rate_verdict(r, se, c1, k, rtol)
            if verdict == "inconclusive" and np.isfinite(se):
                detail += (
                    f"; {k:g} SE = {k * se:.4f} > {rtol:g} chi1 = {rtol * c1:.4f}: the "
                    f"{len(v)} instantiations cannot resolve the tolerance (about "
                    f"{int(np.ceil(len(v) * (k * se / (rtol * c1)) ** 2))} would)"
                )
            rows.append(
                row(
                    study,
                    cid,
                    claim,
                    SOURCE_FIG3,
                    measured=r,
                    expected=f"chi1 = {c1:.4f}",
                    tolerance=det,
                    verdict=verdict,
                    detail=detail,
                    values={"rate": r, "se": se, "chi1": c1},
                    test=test,
                    detectable=det,
                    margin=rtol * c1,
                )
            )
    return frame(rows)
