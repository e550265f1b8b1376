"""Claims of Baldi & Sadowski 2014 (002; Artificial Intelligence 210:78-122,
doi:10.1016/j.artint.2014.02.004, no arXiv id) Secs. 2-3, 8, 9.3-9.4: the exact moments of deep
linear dropout networks (Eqs. 24-25), the Eq. 87 bounds and second-order approximations of
E - NWGM, and the sampling distributions of E_S and NWGM_S (Figs. 9.1-9.2).

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

from ...claims import below_fraction, control, false_pass_z, frame, row, sanity, z_above, z_within
from . import SOURCE_BOUNDS, SOURCE_EQ85, SOURCE_EQ202, SOURCE_LINEAR, SOURCE_SAMPLING, SOURCE_SIDES
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


def _linear_claims(study, runs, p, k) -> list[dict]:
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
    size = (
        f"{len(c)} networks ({int(c.width.iloc[0])} wide, {int(c.depth.iloc[0])} hidden layers, "
        f"keep {c.keep_rate.iloc[0]:g} hidden / "
        f"{simulations(p)['linear'].input_keep if 'linear' in simulations(p) else '?'} "
        f"inputs), {int(c.mc_samples.iloc[0])} masks per input; exact moments by "
        "theory.ensembles.linear_dropout_expectation"
    )
    rows = []
    for cid, claim, z, eq in (
        (
            "linear_mean_eq24",
            (
                "The dropout expectation of every unit of a deep linear network is "
                "the deterministic network with weights scaled by the keep "
                "probabilities"
            ),
            u.z_mean,
            "Eq. 24",
        ),
        (
            "linear_var_eq25",
            (
                "The dropout variances of a deep linear network follow the "
                "recursion of Eq. 25 (Eq. 16 for one layer)"
            ),
            u.z_var,
            "Eqs. 16, 25",
        ),
        (
            "linear_cov_eq25",
            (
                "The dropout covariances of pairs of units follow the recursion of "
                "Eq. 25 (Eq. 17 for one layer)"
            ),
            pr.z_cov,
            "Eqs. 17, 25",
        ),
    ):
        z = np.asarray(z, float)
        frac = mc.within_fraction(z, k)
        rows.append(
            sanity(
                study,
                cid,
                claim + " (exact theorem checked by Monte Carlo)",
                SOURCE_LINEAR,
                measured=frac,
                expected=f">= {want:g} of values within {k:g} SE of {eq}",
                tolerance=0.0,
                verdict="pass" if frac >= want else "fail",
                detail=(
                    f"{len(z)} values; max |z| {np.max(np.abs(z)):.2f}, RMS z "
                    f"{np.sqrt(np.mean(z**2)):.3f}; {size}"
                ),
                values={
                    "n": len(z),
                    "max_abs_z": np.max(np.abs(z)),
                    "rms_z": np.sqrt(np.mean(z**2)),
                },
                test=f"fraction of |z| <= {k:g} over {len(z)} values >= {want:g} "
                "(values of one network share its masks)",
            )
        )
    fn = mc.within_fraction(u.z_naive, k)
    # binomial SE over units: optimistic, as units of one network share its masks
    verdict, res = below_fraction(fn, len(u), want, k)
    rows.append(
        control(
            study,
            "linear_unscaled_rejected",
            "Control: the test that accepts Eq. 24 rejects the unscaled network (Eq. 8: "
            "without multiplying the weights by the keep probabilities the expectation "
            "is wrong)",
            SOURCE_LINEAR,
            measured=fn,
            expected=f"< {want:g} of units within {k:g} SE of the unscaled network",
            tolerance=0.0,
            verdict=verdict,
            detail=(
                f"{len(u)} units; median |z| of the unscaled network "
                f"{np.median(np.abs(u.z_naive)):.1f} (Eq. 24: "
                f"{np.median(np.abs(u.z_mean)):.2f}); {size}"
            ),
            values={"median_abs_z_unscaled": np.median(np.abs(u.z_naive))},
            test=(
                f"power control of linear_mean_eq24: fraction of units within "
                f"{k:g} SE of the unscaled network below {want:g} by more than "
                f"{k:g} binomial SE over {len(u)} units (pass), above it by more "
                "(fail), else inconclusive"
            ),
            detectable=res,
        )
    )
    return rows


def _bounds_claims(study, runs, theory, p, k) -> list[dict]:
    an = p.claims.bounds
    want = float(an.within_fraction)
    ftol = float(an.fraction_tolerance)
    s_small = float(an.small_spread)
    asym = float(p.analysis.bounds.min_asymmetry)
    rtol = float(an.ratio_tolerance)
    w = bounds_sets(runs, p)
    rows = []
    if len(w):
        m = with_labels(runs, p)
        m = m[m.part == "bounds"]
        n = len(w)
        sizes = (
            f"{n} sets of {int(m.width.iloc[0])} outputs, s in "
            f"[{w.sd_S.min():.2f}, {w.sd_S.max():.2f}], mu in [{w.mu_S.min():.2f}, {w.mu_S.max():.2f}]"
        )
        hi = w.sd_S >= np.quantile(w.sd_S, 0.75)
        frac = {q: mc.bound_fraction(w["diff"], w[q]) for q in ("bound1", "bound2", "bound3")}
        # Bound 1 (1 - 2V >= 1 - 2E(1-E) since V <= E(1-E)) is the tightest of the three curves
        # and Bound 2 <= 2E(1-E)|1-2E| (1 - 2E(1-E) >= 1/2): the claim is Bound 1; the looser
        # curves of Figs. 8.1-8.2 follow from it and are sanity rows (their nesting).
        thr = want - ftol
        se = float(np.sqrt(thr * (1 - thr) / n))
        q = "bound1"
        frac_hi = mc.bound_fraction(w["diff"][hi], w[q][hi])
        excess = np.max(np.abs(w["diff"]) - w[q])
        verdict, test, det = z_above(frac[q] - thr, se, k)
        rows.append(
            row(
                study,
                "bound1_eq87",
                "|E - NWGM| <~ E(1-E)|1-2E|/(1-2V) (Bound 1, the "
                "tightest curve of Eq. 87) for logistic outputs",
                SOURCE_BOUNDS,
                measured=frac[q],
                expected=(
                    f">= {thr:g} of the sets within the curve (the paper: 'well within "
                    f"the bounds', i.e. all sets, {want:g}, up to {ftol:g})"
                ),
                tolerance=ftol,
                verdict=verdict,
                test=(
                    f"fraction of {n} independent sets within the curve minus {thr:g}: "
                    + test
                    + f" (binomial SE at {thr:g}: {se:.4f}); units: fraction of sets"
                ),
                detectable=det,
                false_pass=false_pass_z(k),
                detail=(
                    f"{sizes}; within for the quarter with the largest s "
                    f"(s >= {np.quantile(w.sd_S, 0.75):.2f}): {frac_hi:.4f}; "
                    f"largest excess |E - NWGM| - bound {excess:.2e}; within Bound 2 "
                    f"{frac['bound2']:.4f}, within 2E(1-E)|1-2E| {frac['bound3']:.4f}"
                ),
                values={"fraction_largest_s_quarter": frac_hi, "max_excess": excess},
            )
        )
        for cid, q, tighter, claim, src in (
            (
                "bound2_fig81",
                "bound2",
                "bound1",
                (
                    "Bound 2 E(1-E)|1-2E|/(1-2E(1-E)) (Fig. 8.1) holds for at least the sets within "
                    "Bound 1 (Bound 1 <= Bound 2 since V <= E(1-E))"
                ),
                SOURCE_BOUNDS + " (Fig. 8.1)",
            ),
            (
                "bound3_fig82",
                "bound3",
                "bound2",
                (
                    "2E(1-E)|1-2E| (Fig. 8.2) holds for at least the sets within Bound 2 "
                    "(1 - 2E(1-E) >= 1/2)"
                ),
                SOURCE_BOUNDS + " (Fig. 8.2)",
            ),
        ):
            nested = bool(
                np.all(
                    (np.abs(w["diff"]) <= w[tighter] + 1e-12) <= (np.abs(w["diff"]) <= w[q] + 1e-12)
                )
            )
            rows.append(
                sanity(
                    study,
                    cid,
                    claim,
                    src,
                    measured=frac[q],
                    expected=f"fraction >= that within {tighter} ({frac[tighter]:.4f}), set by set",
                    tolerance=0.0,
                    verdict="pass" if nested else "fail",
                    detail=(
                        f"{sizes}; fraction within {q} {frac[q]:.4f} (a looser curve "
                        f"than {tighter}: implied by bound1_eq87, not counted)"
                    ),
                    test="nesting of the Eq. 87 curves, set by set",
                )
            )
        sel = (w.sd_S <= s_small) & (np.abs(1 - 2 * w.E) >= asym)
        d, e85, e202 = (w["diff"][sel].to_numpy(), w.eq85[sel].to_numpy(), w.eq202[sel].to_numpy())
        inv = (1.0 / (2 * w.E * (1 - w.E)))[sel]
        for cid, approx, claim, src in (
            (
                "eq85_second_order",
                e85,
                "To second order E - NWGM ~ V(1-2E)/(1-2V) (Eq. 85)",
                SOURCE_EQ85,
            ),
            (
                "eq202_second_order",
                e202,
                (
                    "To second order (expansion around E) "
                    "E - NWGM ~ E - (E - V/2E)/(1 - V/(2E(1-E))) "
                    "(Eq. 202)"
                ),
                SOURCE_EQ202,
            ),
        ):
            rat = d / approx
            med = float(np.median(rat)) if len(rat) else np.nan
            se = _boot_se(np.median, rat) if len(rat) else np.nan
            verdict, test, det = _band(med - 1, se, rtol, k)
            rows.append(
                row(
                    study,
                    cid,
                    claim,
                    src,
                    measured=med,
                    expected="median (E - NWGM)/approximation = 1",
                    tolerance=rtol,
                    verdict=verdict,
                    test=(
                        f"median ratio - 1 over {len(rat)} independent sets: "
                        + test
                        + f" (bootstrap SE of the median {se:.3g}); units: ratio"
                    ),
                    detectable=det,
                    margin=rtol,
                    detail=(
                        f"{int(sel.sum())} sets with s <= {s_small:g} and |1-2E| >= {asym:g}; "
                        f"quartiles of the ratio {np.quantile(rat, 0.25):.3f}-"
                        f"{np.quantile(rat, 0.75):.3f}; median 1/(2E(1-E)) over these sets "
                        f"{np.median(inv):.3f} (the factor by which Eq. 85 drops the "
                        f"consistent second-order term, cf. Eq. 202)"
                    )
                    if len(rat)
                    else "no sets in the second-order regime",
                    values={
                        "median_inv_2E1mE": float(np.median(inv)) if len(inv) else np.nan,
                        "se_median": se,
                    },
                )
            )
        low, high = w.O_max <= 0.5, w.O_min >= 0.5
        ok_low = (w.NWGM <= w.E + SIDE_ATOL)[low]
        ok_high = (w.NWGM >= w.E - SIDE_ATOL)[high]
        n_side = int(low.sum() + high.sum())
        frac_side = float((ok_low.sum() + ok_high.sum()) / n_side) if n_side else np.nan
        rows.append(
            sanity(
                study,
                "nwgm_side_eqs81_82",
                "If all O_i <= 0.5 then NWGM <= E; if all O_i >= 0.5 then NWGM >= E "
                "(Ky Fan's inequality: a theorem)",
                SOURCE_SIDES,
                measured=frac_side,
                expected="all such sets (exact inequality)",
                tolerance=0.0,
                verdict="pass" if n_side and frac_side == 1.0 else "fail",
                detail=f"{int(low.sum())} consistently low and {int(high.sum())} consistently "
                f"high sets (of {n}); comparison to {SIDE_ATOL:g}",
                test="exact inequality on every set",
            )
        )
    # maximisers of the curves (text after Eq. 87), against the tabulated curves: our own
    # analytic curve against its closed form, no data
    for q, fig in (("bound2", "8.1"), ("bound3", "8.2")):
        t = theory[(theory.quantity == q) & (theory.x <= 0.5)].sort_values("x")
        if not len(t):
            continue
        x = t.x.to_numpy()
        grid = float(x[t.value.to_numpy().argmax()])
        formula = theory_value(theory, f"argmax_{q}")
        h = float(np.diff(x).max())
        rows.append(
            sanity(
                study,
                f"{q}_argmax",
                f"The maximum of the Fig. {fig} curve over [0, 0.5] is "
                f"at E = {'0.5 - sqrt(sqrt5 - 2)/2' if q == 'bound2' else '0.5 - sqrt(3)/6'}",
                SOURCE_BOUNDS,
                measured=grid,
                expected=f"{formula:.6f}",
                tolerance=h,
                verdict="pass" if abs(grid - formula) <= h else "fail",
                detail=f"argmax of the tabulated curve on a grid of spacing {h:.1e}",
                test="argmax of our analytic curve against its closed form (no data)",
            )
        )
    return rows


def _sampling_claims(study, runs, theory, p, k) -> list[dict]:
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
    rows = []
    order = sampling_labels(p)
    for label in [d for d in order if len(s) and d in set(s.distribution)]:
        g = s[s.distribution == label].sort_values("m")
        ms = g.m.to_numpy()
        n = f"{int(g.n.min())}-{int(g.n.max())} samples per m, m = {', '.join(map(str, ms))}"
        tag = f"[{label}]"
        indep = f"{len(ms)} m values, each an independent run"
        rmin = float(g.r.min())
        verdict, det = _all_above(g.r - r_min, g.r_se, k)
        rows.append(
            row(
                study,
                f"corr_close_to_one{tag}",
                "The Pearson correlation between E_S and NWGM_S is close to 1",
                SOURCE_SAMPLING + " (Fig. 9.2 left)",
                measured=rmin,
                expected=f"r >= {r_min:g} at every m",
                tolerance=0.0,
                verdict=verdict,
                test=(
                    f"r - {r_min:g} > {k:g} SE(r) at every m (fail if below -{k:g} SE at "
                    f"any m; {indep}); units: r"
                ),
                detectable=det,
                false_pass=false_pass_z(k),
                detail=f"min r at m = {int(ms[g.r.argmin()])}; r = "
                + ", ".join(f"{v:.4f}" for v in g.r)
                + f"; SE(r) <= {g.r_se.max():.4f}; {n}",
            )
        )
        spread = float(g.r.max() - g.r.min())
        se_spread = float(np.hypot(g.r_se.iloc[int(g.r.argmax())], g.r_se.iloc[int(g.r.argmin())]))
        verdict, test, det = z_above(r_range - spread, se_spread, k)
        rows.append(
            row(
                study,
                f"corr_constant_in_m{tag}",
                "The Pearson correlation is roughly constant in the sample size m",
                SOURCE_SAMPLING + " (Fig. 9.2 left)",
                measured=spread,
                expected=f"max r - min r <= {r_range:g}",
                tolerance=0.0,
                verdict=verdict,
                test=(
                    f"{r_range:g} - (max r - min r): "
                    + test
                    + f" (SE of the range {se_spread:.4f}; {indep}); units: r"
                ),
                detectable=det,
                false_pass=false_pass_z(k),
                detail=f"r from {g.r.iloc[0]:.4f} (m = {ms[0]}) to {g.r.iloc[-1]:.4f} "
                f"(m = {ms[-1]}); SE of r <= {g.r_se.max():.4f}; {n}",
            )
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
        verdict, test, det = _band(slope + 1, slope_se, stol, k)
        rows.append(
            sanity(
                study,
                f"cov_decays_as_inv_m{tag}",
                "The covariance of E_S and "
                "NWGM_S decreases to 0 inversely to the sample size (order V/m) (holds "
                "by construction for means of m iid draws: a check of the sampler, not "
                "counted)",
                SOURCE_SAMPLING + " (Eqs. 106-108, Fig. 9.2 right)",
                measured=slope,
                expected="log-log slope -1",
                tolerance=stol,
                verdict=verdict,
                test=(
                    f"slope + 1 (weighted log-log fit over {len(fit)} independent m >= "
                    f"{fit_min}, SE {slope_se:.3g}): " + test + "; units: slope"
                ),
                detectable=det,
                detail=f"fit over m >= {fit_min}; m Cov = "
                + ", ".join(f"{c * m:.4g}" for c, m in zip(g["cov"], ms))
                + f"; unweighted slope {mc.loglog_slope(fit.m, fit['cov']):.3f}; {n}"
                if len(fit) >= 2 and (fit["cov"] > 0).all()
                else n,
            )
        )
        last = g.iloc[-1]
        c2 = theory_value(theory, "C2_eq104", label)
        var_o = theory_value(theory, "var_O", label)
        meas_c2 = float(last.var_NWGM * last.m)
        rel = meas_c2 / c2 - 1
        vals = sampling_values(runs, p, label, int(last.m))
        ev = vals[["E_S", "NWGM_S"]].to_numpy()
        # SE of a sample variance relative to itself: sqrt((excess kurtosis + 2) / n)
        rel_se = float(np.sqrt((last.kurt_NWGM + 2) / last.n)) * (1 + rel)
        verdict, test, det = _band(rel, rel_se, vtol, k)
        rows.append(
            row(
                study,
                f"var_nwgm_eq104{tag}",
                "Var(NWGM_S) ~ t^2 sigma_S^2 / m with t = sigma'(mu_S) (Eq. 104)",
                SOURCE_SAMPLING + " (Eq. 104)",
                measured=meas_c2,
                expected=f"{c2:.5g}",
                tolerance=vtol * c2,
                verdict=verdict,
                test=(
                    f"relative gap m Var(NWGM_S)/C2 - 1 at m = {int(last.m)} "
                    f"({int(last.n)} samples, SE {rel_se:.3g}): " + test + "; units: relative gap"
                ),
                detectable=det,
                margin=vtol,
                detail=f"m Var(NWGM_S) at m = {int(last.m)} ({int(last.n)} samples), "
                f"relative gap {rel:+.3f}; C1 = m Var(E_S) = {last.var_E * last.m:.5g} "
                f"vs sigma_O^2 = {var_o:.5g}",
            )
        )
        if var_o <= small_var:
            c1 = float(last.var_E * last.m)
            relc = meas_c2 / c1 - 1
            se_c = _boot_se(lambda a: a[:, 1].var(ddof=1) / a[:, 0].var(ddof=1), ev)
            verdict, test, det = _band(relc, se_c, vtol, k)
            rows.append(
                row(
                    study,
                    f"c1_equals_c2{tag}",
                    "sigma_O^2 = C1 ~ C2 when sigma_O^2 is "
                    "small (Var(E_S) ~ C1/m, Var(NWGM_S) ~ C2/m)",
                    SOURCE_SAMPLING + " (Sec. 9.3)",
                    measured=relc,
                    expected="C2/C1 - 1 = 0",
                    tolerance=vtol,
                    verdict=verdict,
                    test=(
                        f"C2/C1 - 1 at m = {int(last.m)} (bootstrap SE over samples "
                        f"{se_c:.3g}): " + test + "; units: relative gap"
                    ),
                    detectable=det,
                    margin=vtol,
                    detail=f"at m = {int(last.m)}: C1 = {c1:.5g}, C2 = {meas_c2:.5g}; "
                    f"sigma_O^2 = {var_o:.5g} <= {small_var:g}",
                )
            )
        h = g[g.m == hist_m]
        if not len(h):
            continue
        h = h.iloc[0]
        mu_o = theory_value(theory, "mu_O", label)
        sd_o = float(np.sqrt(var_o))
        if abs(mu_o - 0.5) < 1e-9:
            verdict, test, det = z_within(float(h.bias), float(h.bias_se), k)
            rows.append(
                sanity(
                    study,
                    f"no_bias_at_half{tag}",
                    "With mu_O = 0.5, NWGM_S and E_S have "
                    "the same mean (sigma(mu_S) = mu_O); a symmetry: the distribution of O "
                    "is symmetric about 1/2 and NWGM(1 - O) = 1 - NWGM(O)",
                    SOURCE_SAMPLING + " (Sec. 9.3, Fig. 9.1)",
                    measured=float(h.bias),
                    expected="0",
                    tolerance=k * float(h.bias_se),
                    verdict=verdict,
                    test=test,
                    detectable=det,
                    detail=f"mean NWGM_S - E_S at m = {hist_m}, {int(h.n)} samples, "
                    f"SE {h.bias_se:.2e}",
                )
            )
        else:
            eq104 = theory_value(theory, "nwgm_mean_eq104", label) - mu_o
            verdict, test, det = z_above(sd_o - abs(float(h.bias)), float(h.bias_se), k)
            rows.append(
                row(
                    study,
                    f"bias_small{tag}",
                    "Away from 0.5 a bias NWGM_S - E_S appears but is "
                    "small: smaller than the error sigma_O of a single random sample",
                    SOURCE_SAMPLING + " (Sec. 9.3, Fig. 9.1; Sec. 8 end)",
                    measured=float(h.bias),
                    expected=f"|bias| < sigma_O = {sd_o:.4f}",
                    tolerance=sd_o,
                    verdict=verdict,
                    test=(
                        f"sigma_O - |bias| ({int(h.n)} independent samples): "
                        + test
                        + "; units: bias"
                    ),
                    detectable=det,
                    false_pass=false_pass_z(k),
                    detail=f"mean NWGM_S - E_S at m = {hist_m} ({int(h.n)} samples, SE "
                    f"{h.bias_se:.1e}); population sigma(mu_S) - mu_O = {eq104:.4f}; "
                    f"|bias|/sigma_O = {abs(h.bias) / sd_o:.3f}",
                )
            )
        se_sk, se_ku = float(np.sqrt(6 / h.n)), float(np.sqrt(24 / h.n))
        verdict, _ = _all_above(
            [skew_max - abs(h.skew_NWGM), kurt_max - abs(h.kurt_NWGM)], [se_sk, se_ku], k
        )
        rows.append(
            row(
                study,
                f"nwgm_approx_normal{tag}",
                "NWGM_S is approximately normally distributed",
                SOURCE_SAMPLING + " (Sec. 9.2, Eq. 104, Fig. 9.1)",
                measured=float(h.skew_NWGM),
                expected=f"|skewness| <= {skew_max:g} and |excess kurtosis| <= {kurt_max:g}",
                tolerance=skew_max,
                verdict=verdict,
                test=(
                    f"{skew_max:g} - |skewness| > {k:g} SE (SE {se_sk:.3f}) and "
                    f"{kurt_max:g} - |excess kurtosis| > {k:g} SE (SE {se_ku:.3f}), "
                    f"{int(h.n)} samples; fail if either is below -{k:g} SE; units: skewness"
                ),
                detectable=k * se_sk,
                detail=f"m = {hist_m}, {int(h.n)} samples: skewness {h.skew_NWGM:+.3f} "
                f"(SE ~{se_sk:.3f}), excess kurtosis {h.kurt_NWGM:+.3f} "
                f"(SE ~{se_ku:.3f})",
                values={"excess_kurtosis": float(h.kurt_NWGM)},
            )
        )
    return rows


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    study = p.study
    k = float(p.claims.z_max)
    rows = (
        _bounds_claims(study, runs, theory, p, k)
        + _sampling_claims(study, runs, theory, p, k)
        + _linear_claims(study, runs, p, k)
    )
    return frame(rows)
