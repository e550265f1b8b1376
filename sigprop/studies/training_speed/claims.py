"""Claims of Huang, Xu, Du, Zeng, Zhao 2019, "Mean field theory for deep dropout networks"
(arXiv:1912.09132) §5.1 / Fig. 6: the τ(η) curves of different depths collapse as τ = f1(ηL)
without dropout and as τ = f2(η) with dropout up to a depth, and a deeper net departs.

Every statistic is computed per seed (each seed's runs give one set of depth curves) and judged
on its mean over the seeds with SE = SD / √n (``claims.seed_z`` standard errors to decide; 3 SE
with 3 seeds is about the one-sided 95 % point of Student's t with 2 degrees of freedom, 2.92).
The ρ < 1 claims are compared with the dropout-free control (ρ = 1) at the same depths: at
quick scale ρ = 1 collapses in η as well, so a collapse in η, or a departure of the deep net,
is evidence for a dropout effect only where it exceeds the control's by more than its SE.
The claims' texts are declared in ``CLAIMS`` (``__init__.py``); this module computes the
statistics that fill them (:func:`sigprop.claims.declared.build`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import false_pass_z, z_above
from ...claims.declared import build, result
from . import CLAIMS, SOURCE, speed
from .analysis import panels, theory_value

NO_CURVES = {
    "statement": "The τ(η) curves of different depths collapse (Fig. 6)",
    "expected": "",
    "test": "not computed: fewer than 2 depths with τ curves at this keep rate (a collapse "
    "needs two)",
    "detail": "depths with curves: {curves}",
}
"""The texts of a collapse row at a keep rate with fewer than 2 depths: nothing to test."""

NO_COMPARISON = {
    "statement": "With dropout ρ = {rho:g} a deeper net (paper: L = {paper}) departs from the "
    "collapsed τ(η) curve, which the dropout-free net at that depth does not",
    "expected": "",
    "test": "not computed: no comparison depth at this scale (a departure needs a net deeper "
    "than the collapse set, and its dropout-free control)",
    "detail": "depths at ρ = {rho:g}: {curves}",
}
"""The texts of an outlier row at a keep rate without a comparison depth (fewer than 3 depths,
or ``analysis.compare_deepest`` off at this scale): nothing to test."""


def departs(g: dict, ratio: float, min_gap: float) -> str:
    """'yes' when D_out ≥ ratio·D_in and D_out ≥ min_gap, 'no' when D_out ≤ D_in, else 'unclear'."""
    if np.isnan(g["D_out"]) or np.isnan(g["D_in"]):
        return "unclear"
    if g["D_out"] >= ratio * g["D_in"] and g["D_out"] >= min_gap:
        return "yes"
    if g["D_out"] <= g["D_in"]:
        return "no"
    return "unclear"


def band_verdict(
    mean: float, se: float, n: int, k: float, pass_below: float, fail_above: float
) -> str:
    """A seed-mean statistic with a pass band and a fail band: 'pass' when mean + k SE ≤
    ``pass_below``, 'fail' when mean − k SE ≥ ``fail_above``, else (or with fewer than 2 seeds,
    a non-finite mean or SE, or an SE of 0: seeds that agree exactly, e.g. at τ's resolution,
    show no spread, which is no resolution) 'inconclusive'."""
    if n < 2 or not (np.isfinite(mean) and np.isfinite(se)) or se <= 0:
        return "inconclusive"
    if mean + k * se <= pass_below:
        return "pass"
    if mean - k * se >= fail_above:
        return "fail"
    return "inconclusive"


def resolution(k: float, se: float) -> float:
    """The smallest effect k SE resolves: NaN without an SE, inf with an SE of 0 (no spread
    over seeds is no resolution: nothing is detectable)."""
    if not np.isfinite(se):
        return float("nan")
    return float(k * se) if se > 0 else float("inf")


def mean_se(x) -> tuple[float, float, int]:
    """Mean, SE = SD/√n (ddof 1) and n over the finite entries; SE NaN with fewer than 2."""
    x = np.asarray([v for v in x if np.isfinite(v)], float)
    n = len(x)
    if n == 0:
        return float("nan"), float("nan"), 0
    se = float(x.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return float(x.mean()), se, n


def _paper_depth(by_rate: dict, rho: float):
    d = {float(k): v for k, v in by_rate.items()}
    return next((v for k, v in d.items() if np.isclose(k, rho)), None)


def _log_ratio(a: float, b: float) -> float:
    """ln(a / b); NaN when either is NaN or not positive (no overlap, or a perfect 0)."""
    if not (np.isfinite(a) and np.isfinite(b)) or a <= 0 or b <= 0:
        return float("nan")
    return float(np.log(a / b))


def per_seed_curves(runs: pd.DataFrame) -> dict:
    """``{seed: speed.curves of that seed's runs}`` (one seed 0 when the table has no seed)."""
    taus = speed.tau_table(runs)
    if "seed" not in taus.columns:
        taus = taus.assign(seed=0)
    return {int(s): speed.curves(g) for s, g in taus.groupby("seed", sort=True)}


def _select(c: pd.DataFrame, rho: float, depths) -> pd.DataFrame:
    return c[np.isclose(c.keep_rate, rho) & c.depth.isin(list(depths))]


def _dispersions(c: pd.DataFrame, min_ov: float, step: float) -> dict:
    """D of the depth curves against η ("eta") and against ηL ("etaL")."""
    return {x: speed.dispersion(c, x == "etaL", min_ov, step)["D"] for x in ("eta", "etaL")}


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    """The collapse claims of 000 §5.1 / Fig. 6, one row per keep rate (and deep depth).

    Per seed s, D_s(x) is the dispersion of the depth curves ln τ(x) of
    :func:`sigprop.studies.training_speed.speed.dispersion`, x = η or ηL.  With k = ``seed_z``:

    * ``collapse_etaL[rho=1]``: r_s = ln(D_s(ηL) / D_s(η)) over the depths of ρ = 1 (not the
      controls); pass when mean r + k SE ≤ ln ``collapse_ratio``, fail when mean r − k SE ≥
      ln ``collapse_fail_ratio`` (the ratio is resolved above the one a collapse needs; the
      pass threshold mirrored), else inconclusive.
    * ``collapse_eta[rho=ρ]`` (ρ < 1): r_s = ln(D_s(η) / D_s(ηL)) over the collapse set, and
      the same statistic r1_s of the ρ = 1 control at the same depths; the measured effect is
      δ = mean(r1_s − r_s) (how much better the dropout nets collapse in η than the control).
      Pass when ρ collapses in η (mean r + k SE ≤ ln ``collapse_ratio``) and δ > k SE(δ); fail
      when ρ does not collapse in η (mean r − k SE ≥ ln ``collapse_fail_ratio``) or the
      control collapses in η better (δ < −k SE); otherwise inconclusive (also without a
      control at the same depths).
    * ``outlier_departs[rho=ρ]`` (ρ < 1): D_out and D_in of
      :func:`sigprop.studies.training_speed.speed.outlier_gap` per seed (a censored deep point counts as its
      lower bound ln(T/τ_j)); the ρ = 1 control at the same depth gives D_ctrl against the same
      ρ curves.  The measured effect is e = mean(D_out − D_ctrl).  Fail when the deep net does
      not depart (mean D_out ≤ mean D_in, or mean(D_out − D_in) < −k SE); pass when it departs
      (mean D_out ≥ ``outlier_ratio`` · mean D_in, mean D_out ≥ ``outlier_min_gap`` and
      mean(D_out − D_in) > k SE) and e > k SE(e); otherwise inconclusive (also without a
      control run at that depth).  Censoring (:func:`censored_pairs`): a seed where the deep
      net and its control both sit at the censoring bound (τ ≥ T at every η) gives both the
      same lower bound, so it is left out of e; with fewer than 2 informative seeds, or
      informative differences of zero spread, the comparison is censored: detectable = inf and
      the row is inconclusive (neither pass nor fail).
    """
    an, cl = p.analysis, p.claims
    min_ov, step = float(an.min_overlap_decades), float(an.grid_step_decades)
    k, cr, fr = float(cl.seed_z), float(cl.collapse_ratio), float(cl.collapse_fail_ratio)
    lcr, lfr = float(np.log(cr)), float(np.log(fr))
    by_seed = per_seed_curves(runs)
    seeds = sorted(by_seed)
    c = speed.curves(speed.tau_table(runs))
    target = float(c.target_acc.iloc[0]) if "target_acc" in c else float("nan")
    T = int(c.steps.max())
    results = []
    pans = panels(c, an.control_depths, an.compare_deepest)
    rho1 = next((q for q in pans if q["by_depth"]), None)
    rho1_depths = set(rho1["depths"]) if rho1 else set()
    for pan in pans:
        rho = pan["keep_rate"]
        claim = "collapse_etaL" if pan["by_depth"] else "collapse_eta"
        if len(pan["collapse"]) < 2:  # nothing to collapse: said, not skipped
            results.append(
                result(
                    claim,
                    f"rho={rho:g}",
                    measured=np.nan,
                    tolerance=cr,
                    verdict="inconclusive",
                    texts=NO_CURVES,
                    curves=list(pan["collapse"]),
                )
            )
            if not pan["by_depth"]:
                results.append(_no_comparison(pan, cl))
            continue
        cc = _select(c, rho, pan["collapse"])
        disp = {
            s: _dispersions(_select(by_seed[s], rho, pan["collapse"]), min_ov, step) for s in seeds
        }
        d_eta = mean_se([disp[s]["eta"] for s in seeds])
        d_etaL = mean_se([disp[s]["etaL"] for s in seeds])
        # the texts' fields shared by the rows of this keep rate
        f = dict(rho=rho, k=k, cr=cr, fr=fr, T=T, target=target, seeds=len(seeds), n_points=len(cc))
        f |= dict(d_eta=d_eta[0], d_eta_se=d_eta[1], d_etaL=d_etaL[0], d_etaL_se=d_etaL[1])
        f |= dict(depths="L ∈ {" + ", ".join(map(str, pan["collapse"])) + "}")
        f |= dict(n_cens=int((~cc.reached).sum()))
        if pan["by_depth"]:
            m, se, n = mean_se([_log_ratio(disp[s]["etaL"], disp[s]["eta"]) for s in seeds])
            results.append(
                result(
                    claim,
                    f"rho={rho:g}",
                    measured=m,
                    tolerance=cr,
                    verdict=band_verdict(m, se, n, k, lcr, lfr),
                    detectable=resolution(k, se),
                    se=se,
                    false_pass=false_pass_z(k, n - 1),
                    values=dict(ln_ratio=m, se=se, n_seeds=n, D_eta=d_eta[0], D_etaL=d_etaL[0]),
                    **f,
                    **dict(lcr=lcr, n=n, m=m, m_se=se, ratio=float(np.exp(m))),
                )
            )
            continue
        xi2 = theory_value(theory, rho, "xi2")
        paper = _paper_depth(cl.paper_collapse_depth, rho)
        top = max(pan["collapse"])
        paper_xi2 = "" if paper is None else f", the paper's L ≤ {paper} = {paper / xi2:.2g} ξ2"
        r = {s: _log_ratio(disp[s]["eta"], disp[s]["etaL"]) for s in seeds}
        m, se, n = mean_se(r.values())
        own = band_verdict(m, se, n, k, lcr, lfr)
        has_ctrl = set(pan["collapse"]) <= rho1_depths
        dm = dse = m1 = se1 = float("nan")
        dn, ctrl = 0, "inconclusive"
        if has_ctrl:
            r1 = {}
            for s in seeds:
                d1 = _dispersions(_select(by_seed[s], 1.0, pan["collapse"]), min_ov, step)
                r1[s] = _log_ratio(d1["eta"], d1["etaL"])
            dm, dse, dn = mean_se([r1[s] - r[s] for s in seeds])
            m1, se1, _ = mean_se(r1.values())
            if dn >= 2 and np.isfinite(dse) and dse > 0:
                ctrl = z_above(dm, dse, k)[0]
        if own == "fail":
            verdict = "fail"
            why = f"the dropout curves do not collapse in η by the ratio {fr:g} (r − k SE ≥ ln {fr:g})"
        elif not has_ctrl:
            verdict = "inconclusive"
            why = "no ρ = 1 control at the same depths, so a collapse in η cannot be attributed to "
            why += "dropout"
        elif ctrl == "fail":
            verdict = "fail"
            why = "the dropout-free control collapses in η better than the dropout nets (δ < −k SE)"
        elif own == "pass" and ctrl == "pass":
            verdict, why = "pass", "collapse in η, and better than the ρ = 1 control's"
        elif own == "pass":
            verdict = "inconclusive"
            why = "the dropout curves collapse in η, but the ρ = 1 control at the same depths "
            why += "collapses in η as well (δ within k SE): not evidence for a dropout effect"
        else:
            verdict, why = "inconclusive", "the collapse in η is not resolved at k SE"
        results.append(
            result(
                claim,
                f"rho={rho:g}",
                measured=dm,
                tolerance=cr,
                verdict=verdict,
                detectable=resolution(k, dse),
                se=dse,
                false_pass=false_pass_z(k, n - 1),
                values=dict(ln_ratio=m, se=se, ln_ratio_control=m1, se_control=se1, delta=dm)
                | dict(se_delta=dse, n_seeds=n),
                **f,
                **dict(n=n, m=m, m_se=se, ratio=float(np.exp(m)), m1=m1, se1=se1, why=why),
                **dict(dm=dm, dse=dse, dn=dn, top=top, top_xi2=top / xi2, paper=paper),
                **dict(xi2=xi2, xi2_6=6 * xi2, xi2_12=12 * xi2, paper_xi2=paper_xi2),
            )
        )
        if pan["outlier"] is not None:
            results.append(_outlier(pan, by_seed, seeds, c, cl, k, xi2, f))
        else:
            results.append(_no_comparison(pan, cl))
    return build(p.study, CLAIMS, results, SOURCE)


def _no_comparison(pan: dict, cl) -> dict:
    """The ``outlier_departs`` row of a keep rate ρ < 1 without a comparison depth at this scale:
    inconclusive, said rather than left out."""
    rho = pan["keep_rate"]
    return result(
        "outlier_departs",
        f"rho={rho:g}",
        measured=np.nan,
        tolerance=float(cl.outlier_ratio),
        verdict="inconclusive",
        texts=NO_COMPARISON,
        rho=rho,
        paper=_paper_depth(cl.paper_outlier_depth, rho),
        curves=list(pan["depths"]),
    )


def _at_bound(c: pd.DataFrame, T: float) -> bool:
    """True when every point of these curves sits at the censoring bound: τ never below the step
    budget T (never reached, or reached only at the last evaluation, where |ln τ − ln τ_j| equals
    the bound ln(T/τ_j) that :func:`sigprop.studies.training_speed.speed.outlier_gap` counts for a censored
    point).  Such a side's D is that bound, not a measurement (False without points)."""
    tau = c.tau.to_numpy(float)
    return bool(len(tau)) and bool(np.all(~(tau < T)))


def censored_pairs(out_bound: dict, ctrl_bound: dict, excess: dict) -> dict:
    """Which paired seeds carry information on the excess e = D_out − D_ctrl.

    A seed where both the deep net and its control sit at the censoring bound at every η
    (``out_bound[s]`` and ``ctrl_bound[s]``) gives both sides the same lower bound, so its e is
    0 by construction, not a measurement: it is left out.  The comparison is *censored* (no
    effect of any size is detectable, detectable = inf, and it can neither pass nor fail) when
    fewer than 2 informative seeds remain, or when their differences have zero spread (an SE of
    0 is no resolution).  Returns ``informative`` (seeds), ``censored`` (bool), ``left_out`` (seeds
    dropped) and ``mean_se`` of e over the informative seeds (NaN when censored)."""
    seeds = sorted(excess)
    left = [s for s in seeds if out_bound.get(s, False) and ctrl_bound.get(s, False)]
    inf = [s for s in seeds if s not in left]
    m = mean_se([excess[s] for s in inf])
    censored = m[2] < 2 or not (np.isfinite(m[1]) and m[1] > 0)
    if censored:
        m = (float("nan"), float("nan"), m[2])
    return {"informative": inf, "censored": bool(censored), "left_out": left, "mean_se": m}


def _outlier(pan, by_seed, seeds, c, cl, k, xi2, f) -> dict:
    """The ``outlier_departs`` result of one keep rate; ``f``: that keep rate's text fields."""
    rho, T, o = pan["keep_rate"], f["T"], pan["outlier"]
    orat, ogap = float(cl.outlier_ratio), float(cl.outlier_min_gap)
    ref_depths = list(pan["collapse"]) + [o]
    has_ctrl = bool(((np.isclose(c.keep_rate, 1.0)) & (c.depth == o)).any())
    g, gc, out_bound, ctrl_bound = {}, {}, {}, {}
    for s in seeds:
        cs = by_seed[s]
        mine = _select(cs, rho, ref_depths)
        if o not in set(mine.depth):
            continue
        g[s] = speed.outlier_gap(mine, o)
        out_bound[s] = _at_bound(_select(cs, rho, [o]), T)
        ctrl = _select(cs, 1.0, [o])
        if has_ctrl and len(ctrl):
            gc[s] = speed.outlier_gap(
                pd.concat([_select(cs, rho, pan["collapse"]), ctrl], ignore_index=True), o
            )
            ctrl_bound[s] = _at_bound(ctrl, T)
    d_out = mean_se([g[s]["D_out"] for s in g])
    d_in = mean_se([g[s]["D_in"] for s in g])
    gap = mean_se([g[s]["D_out"] - g[s]["D_in"] for s in g])
    own_gap = z_above(gap[0], gap[1], k)[0] if gap[2] >= 2 and gap[1] > 0 else "inconclusive"
    dep = departs({"D_out": d_out[0], "D_in": d_in[0]}, orat, ogap)
    if dep == "no" or own_gap == "fail":
        own = "fail"
    elif dep == "yes" and own_gap == "pass":
        own = "pass"
    else:
        own = "inconclusive"
    censored = False
    if gc:
        d_ctrl = mean_se([gc[s]["D_out"] for s in gc])
        cp = censored_pairs(
            out_bound, ctrl_bound, {s: g[s]["D_out"] - gc[s]["D_out"] for s in gc if s in g}
        )
        exc, censored = cp["mean_se"], cp["censored"]
        ctrl = "inconclusive" if censored else z_above(exc[0], exc[1], k)[0]
        left = cp["left_out"]
        control = (
            f"; control ρ = 1 at L = {o}: reached p at {sum(gc[s]['out_reached'] for s in gc)}/"
            f"{sum(gc[s]['out_points'] for s in gc)} (seed, η) points, D_ctrl = "
            f"{d_ctrl[0]:.3g} ± {d_ctrl[1]:.3g} against the same ρ = {rho:g} curves"
        )
        if left:
            control += (
                f"; {len(left)} of {len(left) + len(cp['informative'])} paired seeds left out "
                f"of e (seeds {left}: the deep net and its control both at the censoring bound "
                f"τ ≥ T = {T} at every η, so both D are the same lower bound)"
            )
        control += "; excess e = D_out − D_ctrl = " + (
            f"{exc[0]:.3g} ± {exc[1]:.3g} over {exc[2]} seeds"
            if not censored
            else f"not measured: {exc[2]} informative seeds"
            + (" with differences of zero spread" if exc[2] >= 2 else "")
        )
    else:
        d_ctrl = exc = (float("nan"), float("nan"), 0)
        ctrl = "inconclusive"
        control = f"; no ρ = 1 run at L = {o} to check that the departure is due to dropout"
    if censored:
        verdict = "inconclusive"
        why = (
            "the comparison with the dropout-free control is censored: where the deep net and "
            "its control both sit at the censoring bound (τ ≥ T at every η; a τ equal to T "
            "counts as the bound), their D are the same lower bound, and too few seeds remain "
            "to separate them; a departure read off a lower bound cannot fail either"
        )
    elif own == "fail":
        verdict, why = "fail", "the deep net does not depart from the collapsed curves"
    elif not gc:
        verdict, why = "inconclusive", "no dropout-free control at this depth"
    elif own == "pass" and ctrl == "pass":
        verdict, why = "pass", "it departs, and more than the dropout-free control"
    elif own == "pass":
        verdict = "inconclusive"
        why = (
            "it departs, but the dropout-free control at the same depth departs as much (e "
            "within k SE, or below): the departure is not specific to dropout here (the "
            "paper's ρ = 1 nets collapse up to L = 400)"
        )
    else:
        verdict, why = "inconclusive", "the departure is not resolved at k SE"
    return result(
        "outlier_departs",
        f"rho={rho:g}",
        measured=exc[0],
        tolerance=orat,
        verdict=verdict,
        # inf: no effect of any size is detectable (both sides are the same censoring bound)
        detectable=np.inf if censored else resolution(k, exc[1]),
        se=exc[1],
        values=dict(D_out=d_out[0], D_in=d_in[0], D_ctrl=d_ctrl[0], excess=exc[0])
        | dict(se_excess=exc[1], n_seeds=len(g), censored=float(censored)),
        **f,
        **dict(o=o, paper=_paper_depth(cl.paper_outlier_depth, rho), o_xi2=o / xi2, n=len(g)),
        **dict(orat=orat, ogap=ogap, d_out=d_out[0], d_out_se=d_out[1], d_in=d_in[0]),
        **dict(d_in_se=d_in[1], gap=gap[0], gap_se=gap[1], control=control, why=why),
        reached=sum(g[s]["out_reached"] for s in g),
        points=sum(g[s]["out_points"] for s in g),
    )
