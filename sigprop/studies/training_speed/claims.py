"""Claims of Huang et al. 2019 (arXiv:1912.09132) §5.1 / Fig. 6: the τ(η) curves of different
depths collapse as τ = f1(ηL) without dropout and as τ = f2(η) with dropout up to a depth, and
a deeper net departs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, row
from ...measure import speed
from . import SOURCE
from .analysis import panels, theory_value


def departs(g: dict, ratio: float, min_gap: float) -> str:
    """'yes' when D_out ≥ ratio·D_in and D_out ≥ min_gap, 'no' when D_out ≤ D_in, else 'unclear'."""
    if np.isnan(g["D_out"]) or np.isnan(g["D_in"]):
        return "unclear"
    if g["D_out"] >= ratio * g["D_in"] and g["D_out"] >= min_gap:
        return "yes"
    if g["D_out"] <= g["D_in"]:
        return "no"
    return "unclear"


def _paper_depth(by_rate: dict, rho: float):
    d = {float(k): v for k, v in by_rate.items()}
    return next((v for k, v in d.items() if np.isclose(k, rho)), None)


def _fmt(x: float) -> str:
    return "nan" if np.isnan(x) else f"{x:.3g}"


def _ratio(a: float, b: float) -> float:
    """a / b with 0/0 = NaN and a/0 = +inf (a > 0)."""
    if np.isnan(a) or np.isnan(b):
        return float("nan")
    if b == 0:
        return float("inf") if a > 0 else float("nan")
    return float(a / b)


def _pairs_text(res: dict) -> str:
    return (f"{res['n_compared']}/{res['n_pairs']} depth pairs overlap enough")


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    """The collapse claims of 000 §5.1 / Fig. 6, one row per keep rate (and outlier).

    * ``collapse_etaL[rho=1]``: R = D(ηL) / D(η) over all depths of ρ = 1, with D
      the dispersion of :func:`sigprop.measure.speed.dispersion`; pass when
      R ≤ ``collapse_ratio``, fail when R ≥ 1 (η collapses them at least as
      well), inconclusive between or when a D cannot be computed.
    * ``collapse_eta[rho=ρ]`` (ρ < 1): R = D(η) / D(ηL) over the collapse set
      (every depth but the deepest); same verdict rule.
    * ``outlier_departs[rho=ρ]`` (ρ < 1): R = D_out / D_in of
      :func:`sigprop.measure.speed.outlier_gap` (a censored outlier point counts
      as its lower bound ln(T/τ_j)); pass when D_out ≥ ``outlier_ratio``·D_in and
      D_out ≥ ``outlier_min_gap`` (:func:`departs`), fail when D_out ≤ D_in (R ≤ 1,
      including 0 = 0), else inconclusive.  When ρ = 1 runs exist at the outlier
      depth they are a control: if they depart from the same collapsed curves by
      the same criterion, the departure is not due to dropout and a pass becomes
      inconclusive.
    """
    an, cl = p.analysis, p.claims
    study = p.study
    min_ov = float(an.min_overlap_decades)
    step = float(an.grid_step_decades)
    cr = float(cl.collapse_ratio)
    orat = float(cl.outlier_ratio)
    ogap = float(cl.outlier_min_gap)
    c = speed.curves(speed.tau_table(runs))
    target = float(c.target_acc.iloc[0]) if "target_acc" in c else float("nan")
    rows = []
    rho1 = ""   # ρ = 1's D(η)/D(ηL), quoted in the ρ < 1 rows (panels come in decreasing ρ)
    for pan in panels(c, an.control_depths):
        rho = pan["keep_rate"]
        cc = c[np.isclose(c.keep_rate, rho) & c.depth.isin(pan["collapse"])]
        if len(pan["collapse"]) < 2:
            continue
        d_eta = speed.dispersion(cc, False, min_ov, step)
        d_etaL = speed.dispersion(cc, True, min_ov, step)
        n_cens = int((~cc.reached).sum())
        T = int(cc.steps.max())
        depths = "L ∈ {" + ", ".join(str(d) for d in pan["collapse"]) + "}"
        xi2 = theory_value(theory, rho, "xi2")
        common = (f"{depths}; D(η) = {_fmt(d_eta['D'])} ({_pairs_text(d_eta)}), "
                  f"D(ηL) = {_fmt(d_etaL['D'])} ({_pairs_text(d_etaL)}); "
                  f"{n_cens}/{len(cc)} (L, η) points never reached p = {target:g} in {T} steps "
                  f"(excluded from D)")
        if pan["by_depth"]:
            rho1 = f"; for comparison ρ = 1 here has D(η)/D(ηL) = {_fmt(_ratio(d_eta['D'], d_etaL['D']))}"
            ratio = _ratio(d_etaL["D"], d_eta["D"])
            rows.append(row(
                study, f"collapse_etaL[rho={rho:g}]",
                "Without dropout the τ(η) curves of different depths collapse when η is rescaled "
                "by L: τ = f1(ηL)", SOURCE, measured=ratio,
                expected=f"D(ηL)/D(η) ≤ {cr:g}", tolerance=cr,
                verdict=speed.ratio_verdict(ratio, cr), detail=common))
            continue
        ratio = _ratio(d_eta["D"], d_etaL["D"])
        pd_ = _paper_depth(cl.paper_collapse_depth, rho)
        top = max(pan["collapse"])
        scale = (f"; depth scale ξ2 = {xi2:.3g} (6ξ2 = {6 * xi2:.3g}, 12ξ2 = {12 * xi2:.3g}): "
                 f"collapse set up to L = {top} = {top / xi2:.2g} ξ2 here")
        if pd_ is not None:
            scale += f", the paper's L ≤ {pd_} = {pd_ / xi2:.2g} ξ2"
        rows.append(row(
            study, f"collapse_eta[rho={rho:g}]",
            f"With dropout ρ = {rho:g} the τ(η) curves of depths up to L = {top} collapse without "
            f"rescaling, τ = f2(η) (paper: up to L = {pd_})", SOURCE, measured=ratio,
            expected=f"D(η)/D(ηL) ≤ {cr:g}", tolerance=cr,
            verdict=speed.ratio_verdict(ratio, cr), detail=common + scale + rho1))
        if pan["outlier"] is None:
            continue
        o = pan["outlier"]
        allc = c[np.isclose(c.keep_rate, rho)]
        g = speed.outlier_gap(allc, o)
        r = _ratio(g["D_out"], g["D_in"])
        dep = departs(g, orat, ogap)
        verdict = {"yes": "pass", "no": "fail", "unclear": "inconclusive"}[dep]
        ctrl = c[np.isclose(c.keep_rate, 1.0) & (c.depth == o)]
        if ctrl.empty:
            ctext = f"; no ρ = 1 run at L = {o} to check that the departure is due to dropout"
        else:
            ref = pd.concat([cc, ctrl], ignore_index=True)
            gc = speed.outlier_gap(ref, o)
            dc = departs(gc, orat, ogap)
            ctext = (f"; control ρ = 1 at L = {o}: reached p at {gc['out_reached']}/{gc['out_points']} "
                     f"learning rates, D_ctrl = {_fmt(gc['D_out'])} against the same curves")
            if dc == "yes" and verdict == "pass":
                verdict = "inconclusive"
                ctext += (" — it departs as well, so the departure is not specific to dropout "
                          "here (the paper's ρ = 1 nets collapse up to L = 400)")
        po = _paper_depth(cl.paper_outlier_depth, rho)
        rows.append(row(
            study, f"outlier_departs[rho={rho:g}]",
            f"With dropout ρ = {rho:g} a deeper net (L = {o}; paper: L = {po}) departs from the "
            "collapsed τ(η) curve", SOURCE,
            measured=r, expected=f"D_out/D_in ≥ {orat:g} and D_out ≥ {ogap:g}; a ρ = 1 control "
            "at that depth, where run, does not depart", tolerance=orat, verdict=verdict,
            detail=(f"L = {o} = {o / xi2:.2g} ξ2 against {depths}: D_out = {_fmt(g['D_out'])} over "
                    f"{g['n_out']} (depth, η) points, D_in = {_fmt(g['D_in'])} over {g['n_in']}; "
                    f"L = {o} reached p = {target:g} at {g['out_reached']}/{g['out_points']} learning "
                    f"rates within {int(allc.steps.max())} steps (a censored point counts as "
                    f"ln(T/τ_j), a lower bound){ctext}")))
    return frame(rows)
