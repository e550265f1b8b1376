"""Claims of Baldi & Sadowski 2014 (002; Artificial Intelligence 210:78-122,
doi:10.1016/j.artint.2014.02.004, no arXiv id) Secs. 2-3, 8, 9.3-9.4: the exact moments of deep
linear dropout networks (Eqs. 24-25), the Eq. 87 bounds and second-order approximations of
E - NWGM, and the sampling distributions of E_S and NWGM_S (Figs. 9.1-9.2).  Each claim is
declared once in ``CLAIMS`` (``__init__.py``); this module computes the statistics of its rows
and fills the declared texts (:func:`sigprop.claims.declared.build`).

Two kinds of row.  ``claim`` rows test a statement of the paper against simulation
and state their test and the smallest effect it detects: one-sided thresholds pass only when the
measurement clears the threshold by ``claims.z_max`` standard errors (fail when it misses it by
as much, else inconclusive); "approximately equal" claims pass when the deviation is within the
tolerance AND ``z_max`` SE fit inside it (otherwise the design cannot resolve the tolerance:
inconclusive), and pass the tolerance as their equivalence ``margin`` (so
:func:`sigprop.claims.row` and :func:`sigprop.claims.check_table` enforce that rule too).
Every simulated set / sample / m is an independent draw, so SEs are binomial,
bootstrap or moment SEs over those draws.  ``sanity`` rows hold if the apparatus is right:
theorems checked by Monte Carlo (Eqs. 24-25 of linear networks, Ky Fan's inequality behind
Eqs. 81-82, the symmetry that makes E(NWGM_S) = 1/2 when the distribution of O is symmetric
about 1/2), the maximisers of our own Eq. 87 curves against their closed forms, the nesting
Bound 1 <= Bound 2 <= 2E(1-E)|1-2E| and the control that rejects the unscaled linear network.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import below_fraction, false_pass_z, z_above, z_within
from ...claims.declared import build, result
from . import CLAIMS, SAMPLES
from . import monte_carlo as mc
from .analysis import (
    bounds_sets,
    linear_table,
    sampling_labels,
    sampling_table,
    sampling_values,
    simulations,
    theory_value,
    with_labels,
)

SIDE_ATOL = 1e-12
N_BOOT = 400


def _band(dev: float, se: float, tol: float, k: float) -> tuple[str, str, float]:
    """An "approximately equal" claim: ``|dev| <= tol`` with ``k SE <= tol`` passes (the design
    resolves the tolerance); ``|dev| > tol + k SE`` fails; anything else is inconclusive.
    Detectable: ``max(k SE, tol)`` (the smallest deviation the test can flag)."""
    test = f"|deviation| <= {tol:g} with {k:g} SE <= {tol:g}; fail above {tol:g} + {k:g} SE"
    if not (np.isfinite(dev) and np.isfinite(se)):
        return "inconclusive", test + "; no SE", np.nan
    if k * se > tol:
        v = "fail" if abs(dev) > tol + k * se else "inconclusive"
        return v, test + f"; {k:g} SE = {k * se:.3g} > tolerance: cannot resolve it", float(k * se)
    v = "pass" if abs(dev) <= tol else ("fail" if abs(dev) > tol + k * se else "inconclusive")
    return v, test, float(max(k * se, tol))


def _all_above(effects, ses, k: float) -> tuple[str, float]:
    """Intersection of one-sided tests ("at every m"): pass when every effect exceeds ``k`` of
    its SE, fail when any falls below ``-k`` SE, else inconclusive; detectable ``k`` x the
    largest SE."""
    e, se = np.asarray(effects, float), np.asarray(ses, float)
    if not (len(e) and np.isfinite(e).all() and np.isfinite(se).all()):
        return "inconclusive", np.nan
    v = "pass" if (e > k * se).all() else ("fail" if (e < -k * se).any() else "inconclusive")
    return v, float(k * se.max())


def _boot_se(stat, x: np.ndarray, n_boot: int = N_BOOT, seed: int = 0) -> float:
    """Bootstrap SE of ``stat`` over the rows of ``x`` (independent draws)."""
    x = np.asarray(x)
    if len(x) < 3:
        return np.nan
    rng = np.random.default_rng(seed)
    b = [stat(x[rng.integers(0, len(x), len(x))]) for _ in range(n_boot)]
    return float(np.std(b, ddof=1))


def _linear_claims(runs, p, k) -> list[dict]:
    """Eqs. 24-25 are exact for linear networks (linearity of expectation and independent
    masks; :func:`sigprop.theory.ensembles.linear_dropout_expectation` derives them), so the
    Monte Carlo comparison is a check of the apparatus: sanity rows.  The fraction of units
    within ``k`` SE is reported with its binomial SE over units (units of one network share its
    masks, so that SE is optimistic; the verdict rule is unchanged)."""
    want = float(p.claims.linear.within_fraction)
    t = linear_table(runs, p)
    u, pr, c = t["units"], t["pairs"], t["cost"]
    if not len(u):
        return []
    sims = simulations(p)
    nets = dict(
        k=k,
        want=want,
        nets=len(c),
        width=int(c.width.iloc[0]),
        depth=int(c.depth.iloc[0]),
        keep=c.keep_rate.iloc[0],
        input_keep=sims["linear"].input_keep if "linear" in sims else "?",
        masks=int(c.mc_samples.iloc[0]),
    )
    out = []
    for cid, z in (
        ("linear_mean_eq24", u.z_mean),
        ("linear_var_eq25", u.z_var),
        ("linear_cov_eq25", pr.z_cov),
    ):
        z = np.asarray(z, float)
        frac = mc.within_fraction(z, k)
        vals = {"n": len(z), "max_abs_z": np.max(np.abs(z)), "rms_z": np.sqrt(np.mean(z**2))}
        verdict = "pass" if frac >= want else "fail"
        out.append(
            result(cid, measured=frac, tolerance=0.0, verdict=verdict, values=vals, **vals, **nets)
        )
    fn = mc.within_fraction(u.z_naive, k)
    # binomial SE over units: optimistic, as units of one network share its masks
    verdict, res = below_fraction(fn, len(u), want, k)
    med_naive = np.median(np.abs(u.z_naive))
    out.append(
        result(
            "linear_unscaled_rejected",
            measured=fn,
            tolerance=0.0,
            verdict=verdict,
            values={"median_abs_z_unscaled": med_naive},
            detectable=res,
            n=len(u),
            med_naive=med_naive,
            med=np.median(np.abs(u.z_mean)),
            **nets,
        )
    )
    return out


def _bounds_claims(runs, theory, p, k) -> list[dict]:
    an = p.claims.bounds
    want, ftol = float(an.within_fraction), float(an.fraction_tolerance)
    s_small, rtol = float(an.small_spread), float(an.ratio_tolerance)
    asym = float(p.analysis.bounds.min_asymmetry)
    w = bounds_sets(runs, p)
    out = []
    if len(w):
        m = with_labels(runs, p)
        n = len(w)
        sets = dict(
            n=n,
            width=int(m[m.part == "bounds"].width.iloc[0]),
            s_lo=w.sd_S.min(),
            s_hi=w.sd_S.max(),
            mu_lo=w.mu_S.min(),
            mu_hi=w.mu_S.max(),
        )
        s_q = np.quantile(w.sd_S, 0.75)
        frac = {q: mc.bound_fraction(w["diff"], w[q]) for q in ("bound1", "bound2", "bound3")}
        # Bound 1 (1 - 2V >= 1 - 2E(1-E) since V <= E(1-E)) is the tightest of the three curves
        # and Bound 2 <= 2E(1-E)|1-2E| (1 - 2E(1-E) >= 1/2): the claim is Bound 1; the looser
        # curves of Figs. 8.1-8.2 follow from it and are sanity rows (their nesting).
        thr = want - ftol
        bse = float(np.sqrt(thr * (1 - thr) / n))
        frac_hi = mc.bound_fraction(w["diff"][w.sd_S >= s_q], w.bound1[w.sd_S >= s_q])
        excess = np.max(np.abs(w["diff"]) - w.bound1)
        verdict, rule, det = z_above(frac["bound1"] - thr, bse, k)
        out.append(
            result(
                "bound1_eq87",
                measured=frac["bound1"],
                tolerance=ftol,
                verdict=verdict,
                detectable=det,
                false_pass=false_pass_z(k),
                values={"fraction_largest_s_quarter": frac_hi, "max_excess": excess},
                **sets,
                **dict(thr=thr, want=want, ftol=ftol, rule=rule, bse=bse, s_q=s_q),
                **dict(frac_hi=frac_hi, excess=excess, frac2=frac["bound2"], frac3=frac["bound3"]),
            )
        )
        within = {q: np.abs(w["diff"]) <= w[q] + 1e-12 for q in frac}
        for cid, q, tighter in (
            ("bound2_fig81", "bound2", "bound1"),
            ("bound3_fig82", "bound3", "bound2"),
        ):
            nested = bool(np.all(within[tighter] <= within[q]))
            out.append(
                result(
                    cid,
                    measured=frac[q],
                    tolerance=0.0,
                    verdict="pass" if nested else "fail",
                    **dict(q=q, tighter=tighter, tight=frac[tighter], frac=frac[q], **sets),
                )
            )
        sel = (w.sd_S <= s_small) & (np.abs(1 - 2 * w.E) >= asym)
        d = w["diff"][sel].to_numpy()
        inv = (1.0 / (2 * w.E * (1 - w.E)))[sel]
        med_inv = float(np.median(inv)) if len(inv) else np.nan
        for cid, approx in (("eq85_second_order", "eq85"), ("eq202_second_order", "eq202")):
            rat = d / w[approx][sel].to_numpy()
            med = float(np.median(rat)) if len(rat) else np.nan
            bse = _boot_se(np.median, rat) if len(rat) else np.nan
            verdict, rule, det = _band(med - 1, bse, rtol, k)
            q1, q3 = np.quantile(rat, [0.25, 0.75]) if len(rat) else (np.nan, np.nan)
            out.append(
                result(
                    cid,
                    measured=med,
                    tolerance=rtol,
                    verdict=verdict,
                    detectable=det,
                    margin=rtol,
                    values={"median_inv_2E1mE": med_inv, "se_median": bse},
                    texts=None if len(rat) else {"detail": "no sets in the second-order regime"},
                    **dict(n=len(rat), rule=rule, bse=bse, s_small=s_small, asym=asym),
                    **dict(q1=q1, q3=q3, inv=med_inv),
                )
            )
        low, high = w.O_max <= 0.5, w.O_min >= 0.5
        ok = ((w.NWGM <= w.E + SIDE_ATOL)[low]).sum() + ((w.NWGM >= w.E - SIDE_ATOL)[high]).sum()
        n_side = int(low.sum() + high.sum())
        frac_side = float(ok / n_side) if n_side else np.nan
        out.append(
            result(
                "nwgm_side_eqs81_82",
                measured=frac_side,
                tolerance=0.0,
                verdict="pass" if n_side and frac_side == 1.0 else "fail",
                **dict(low=int(low.sum()), high=int(high.sum()), n=n, atol=SIDE_ATOL),
            )
        )
    # maximisers of the curves (text after Eq. 87), against the tabulated curves: our own
    # analytic curve against its closed form, no data
    for cid, q in (("bound2_argmax", "bound2"), ("bound3_argmax", "bound3")):
        t = theory[(theory.quantity == q) & (theory.x <= 0.5)].sort_values("x")
        if not len(t):
            continue
        x = t.x.to_numpy()
        grid = float(x[t.value.to_numpy().argmax()])
        formula = theory_value(theory, f"argmax_{q}")
        h = float(np.diff(x).max())
        verdict = "pass" if abs(grid - formula) <= h else "fail"
        out.append(result(cid, measured=grid, tolerance=h, verdict=verdict, formula=formula, h=h))
    return out


def _sampling_claims(runs, theory, p, k) -> list[dict]:
    an = p.claims.sampling
    hist_m = int(p.analysis.sampling.hist_m)
    r_min = float(p.analysis.sampling.r_min)
    r_range = float(an.r_range_max)
    stol = float(an.cov_slope_tolerance)
    fit_min = int(an.fit_min_m)
    vtol = float(an.var_rel_tolerance)
    small_var = float(an.small_variance)
    skew_max, kurt_max = float(an.skew_max), float(an.kurtosis_max)
    s = sampling_table(runs, p)
    out = []
    for label in [d for d in sampling_labels(p) if len(s) and d in set(s.distribution)]:
        g = s[s.distribution == label].sort_values("m")
        ms = g.m.to_numpy()
        per_m = dict(
            n_lo=int(g.n.min()),
            n_hi=int(g.n.max()),
            ms=", ".join(map(str, ms)),
            n_m=len(ms),
            k=k,
            r_se=g.r_se.max(),
        )

        def add(claim, qualifier=label, **kw):
            out.append(result(claim, qualifier, **kw))

        verdict, det = _all_above(g.r - r_min, g.r_se, k)
        rs = ", ".join(f"{v:.4f}" for v in g.r)
        add(
            "corr_close_to_one",
            measured=float(g.r.min()),
            tolerance=0.0,
            verdict=verdict,
            detectable=det,
            false_pass=false_pass_z(k),
            **dict(r_min=r_min, m_min=int(ms[g.r.argmin()]), rs=rs, **per_m),
        )
        spread = float(g.r.max() - g.r.min())
        se_spread = float(np.hypot(g.r_se.iloc[int(g.r.argmax())], g.r_se.iloc[int(g.r.argmin())]))
        verdict, rule, det = z_above(r_range - spread, se_spread, k)
        add(
            "corr_constant_in_m",
            measured=spread,
            tolerance=0.0,
            verdict=verdict,
            detectable=det,
            false_pass=false_pass_z(k),
            **dict(r_range=r_range, rule=rule, se_range=se_spread, r_first=g.r.iloc[0]),
            **dict(m_first=ms[0], r_last=g.r.iloc[-1], m_last=ms[-1], **per_m),
        )
        fit = g[g.m >= fit_min]
        slope = slope_se = np.nan
        if len(fit) >= 3 and (fit["cov"] > 0).all():
            # weighted least squares of log Cov on log m, weights 1/SE(log Cov)^2 (independent m)
            x, y = np.log(fit.m.to_numpy(float)), np.log(fit["cov"].to_numpy())
            wt = (fit["cov"].to_numpy() / fit["cov_se"].to_numpy()) ** 2
            xb = np.sum(wt * x) / wt.sum()
            sxx = float(np.sum(wt * (x - xb) ** 2))
            slope = float(np.sum(wt * (x - xb) * (y - np.sum(wt * y) / wt.sum())) / sxx)
            slope_se = float(1.0 / np.sqrt(sxx))
        verdict, rule, det = _band(slope + 1, slope_se, stol, k)
        fitted = len(fit) >= 2 and (fit["cov"] > 0).all()
        add(
            "cov_decays_as_inv_m",
            measured=slope,
            tolerance=stol,
            verdict=verdict,
            detectable=det,
            texts=None if fitted else {"detail": SAMPLES},
            n_fit=len(fit),
            fit_min=fit_min,
            slope_se=slope_se,
            rule=rule,
            m_cov=", ".join(f"{c * m:.4g}" for c, m in zip(g["cov"], ms)),
            slope_u=mc.loglog_slope(fit.m, fit["cov"]) if fitted else np.nan,
            **per_m,
        )
        last = g.iloc[-1]
        c2_eq104 = theory_value(theory, "C2_eq104", label)
        var_o = theory_value(theory, "var_O", label)
        c2 = float(last.var_NWGM * last.m)
        c1 = float(last.var_E * last.m)
        rel = c2 / c2_eq104 - 1
        # SE of a sample variance relative to itself: sqrt((excess kurtosis + 2) / n)
        rel_se = float(np.sqrt((last.kurt_NWGM + 2) / last.n)) * (1 + rel)
        verdict, rule, det = _band(rel, rel_se, vtol, k)
        last_m = dict(m=int(last.m), n=int(last.n), c1=c1, c2=c2, var_o=var_o)
        add(
            "var_nwgm_eq104",
            measured=c2,
            tolerance=vtol * c2_eq104,
            verdict=verdict,
            detectable=det,
            margin=vtol,
            **dict(c2_eq104=c2_eq104, rel_se=rel_se, rule=rule, rel=rel, **last_m),
        )
        if var_o <= small_var:
            ev = sampling_values(runs, p, label, int(last.m))[["E_S", "NWGM_S"]].to_numpy()
            se_c = _boot_se(lambda a: a[:, 1].var(ddof=1) / a[:, 0].var(ddof=1), ev)
            verdict, rule, det = _band(c2 / c1 - 1, se_c, vtol, k)
            add(
                "c1_equals_c2",
                measured=c2 / c1 - 1,
                tolerance=vtol,
                verdict=verdict,
                detectable=det,
                margin=vtol,
                **dict(se_c=se_c, rule=rule, small=small_var, **last_m),
            )
        h = g[g.m == hist_m]
        if not len(h):
            continue
        h = h.iloc[0]
        mu_o = theory_value(theory, "mu_O", label)
        sd_o = float(np.sqrt(var_o))
        hist = dict(m=hist_m, n=int(h.n), bias_se=h.bias_se, k=k)
        if abs(mu_o - 0.5) < 1e-9:
            verdict, rule, det = z_within(float(h.bias), float(h.bias_se), k)
            add(
                "no_bias_at_half",
                measured=float(h.bias),
                tolerance=k * float(h.bias_se),
                verdict=verdict,
                detectable=det,
                rule=rule,
                **hist,
            )
        else:
            eq104 = theory_value(theory, "nwgm_mean_eq104", label) - mu_o
            verdict, rule, det = z_above(sd_o - abs(float(h.bias)), float(h.bias_se), k)
            add(
                "bias_small",
                measured=float(h.bias),
                tolerance=sd_o,
                verdict=verdict,
                detectable=det,
                false_pass=false_pass_z(k),
                **dict(sd_o=sd_o, rule=rule, eq104=eq104, ratio=abs(h.bias) / sd_o, **hist),
            )
        se_sk, se_ku = float(np.sqrt(6 / h.n)), float(np.sqrt(24 / h.n))
        verdict, _ = _all_above(
            [skew_max - abs(h.skew_NWGM), kurt_max - abs(h.kurt_NWGM)], [se_sk, se_ku], k
        )
        add(
            "nwgm_approx_normal",
            measured=float(h.skew_NWGM),
            tolerance=skew_max,
            verdict=verdict,
            detectable=k * se_sk,
            values={"excess_kurtosis": float(h.kurt_NWGM)},
            **dict(skew_max=skew_max, kurt_max=kurt_max, se_sk=se_sk, se_ku=se_ku),
            **dict(skew=h.skew_NWGM, kurt=h.kurt_NWGM, **hist),
        )
    return out


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    k = float(p.claims.z_max)
    results = (
        _bounds_claims(runs, theory, p, k)
        + _sampling_claims(runs, theory, p, k)
        + _linear_claims(runs, p, k)
    )
    return build(p.study, CLAIMS, results)
