"""Study: training speed on the critical line χ1 = 1 (000 §5.1, Fig. 6).

tanh fully connected networks with σ_w² on χ1 = 1 (000 Eq. 10; the config's
``derived: {sigma_w2: {chi1: 1.0}}``) are trained by SGD over a log-spaced
learning-rate grid and several depths L, for keep rates ρ ∈ {1, 0.99, 0.98}.
Each run stops when its test accuracy reaches p (``target_acc``); τ is that
step (:mod:`sigprop.measure.speed`).  The paper's findings (000 Fig. 6 and
§5.1): without dropout the curves collapse as τ = f1(ηL) (panel a); with
ρ = 0.99 (0.98) they collapse as τ = f2(η), without rescaling, up to L = 120
(55), and a deeper net (L = 300, 200) departs (panels b, c).

Theory: per keep rate, the mean-field fixed point at the runs' σ_w² (q*, c*,
χ1 = 1, χ2) and the depth scale ξ2 = 1/|ln χ2| (000 Eq. 6) with 6ξ2 and 12ξ2
(000 Table 1), from :mod:`sigprop.theory.meanfield`; ξ1 = 1/|ln χ1| is
infinite on this line.  For ρ = 1, χ2 = 1 as well and ξ2 = ∞.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claims import frame, row
from ..figures.training_speed import tau_curves
from ..measure import speed
from ..theory import meanfield

TASK = "train"
FIGURES = {"training_speed": tau_curves}
CAPTIONS = {
    "training_speed": (
        "Steps τ for tanh networks on the critical line χ1 = 1 to reach test accuracy p, against "
        "the learning rate (000 Fig. 6). Top row, the paper's scalings: (a) ρ = 1 against ηL, "
        "(b) ρ = 0.99 and (c) ρ = 0.98 against η; colours run from the shallowest (black) to the "
        "deepest collapse-set depth (green), the deep comparison depth of each ρ < 1 in blue (in "
        "(a), light/dark blue: dropout-free controls at those depths, where run), and "
        "the legend gives each depth in units of the mean-field depth scale ξ2 = 1/|ln χ2| "
        "(Gauss–Hermite quadrature; ξ2 = ∞ at ρ = 1). Open triangles above the dotted line: runs "
        "that never reached p within the step budget (censored, τ > T); crosses: diverged runs. "
        "Bottom row, faint: the other scaling (η for ρ = 1, ηL for ρ < 1) for comparison. "
        "D: the dispersion of the depth curves (mean pairwise |Δ ln τ| on their overlap)."),
}
SOURCE = "000 §5.1, Fig. 6"
SETTING = ["activation", "sigma_w2", "sigma_b2", "keep_rate"]


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """Per setting (the runs' activation, σ_w², σ_b², ρ): ``sigma_w2_chi1`` (σ_w² re-solved on
    χ1 = 1), ``q_star``, ``c_star``, ``chi1``, ``chi2``, ``xi2``, ``6xi2``, ``12xi2``.

    ξ2 is +inf where χ2 = 1 to within 1e-9 (ρ = 1, where the quadrature gives
    1 − 1e-16 and 1/|ln χ2| would read ~1e16).
    """
    rows = []
    for s in settings:
        act, sw, sb, rho = s["activation"], float(s["sigma_w2"]), float(s["sigma_b2"]), float(s["keep_rate"])
        f = meanfield.fixed_point_summary(sw, sb, rho, act)
        chi2 = float(f["chi2"])
        xi2 = np.inf if abs(chi2 - 1.0) < 1e-9 else float(f["xi2"])
        vals = {"sigma_w2_chi1": float(meanfield.sigma_w2_for_chi1(1.0, sb, rho, act)),
                "q_star": float(f["q_star"]), "c_star": float(f["c_star"]),
                "chi1": float(f["chi1"]), "chi2": chi2,
                "xi2": xi2, "6xi2": 6 * xi2, "12xi2": 12 * xi2}
        base = {"study": study, "activation": act, "sigma_w2": sw, "sigma_b2": sb, "keep_rate": rho}
        rows += [{**base, "quantity": k, "value": v} for k, v in vals.items()]
    cols = ["study", "quantity", "value"] + SETTING
    return pd.DataFrame(rows, columns=cols)


def theory_value(theory: pd.DataFrame, keep_rate: float, quantity: str) -> float:
    """A theory quantity at a keep rate (the study has one σ_w² per keep rate); NaN if absent."""
    t = theory[(theory.quantity == quantity) & np.isclose(theory.keep_rate, keep_rate)]
    return float(t.value.iloc[0]) if len(t) else float("nan")


def panels(c: pd.DataFrame, controls=()) -> list[dict]:
    """The figure's and claims' panels: per keep rate, the depths, the collapse set and the outlier.

    ρ = 1: every depth is in the collapse set (scaling ηL) except the
    ``controls`` (``analysis.control_depths``: dropout-free runs at the ρ < 1
    comparison depths, drawn but not part of the collapse test).  ρ < 1: the
    deepest depth is the comparison ("outlier") depth when there are at least
    three depths, the others form the collapse set (scaling η).
    """
    controls = {int(d) for d in controls}
    out = []
    for rho in sorted(c.keep_rate.unique(), reverse=True):
        depths = sorted(int(d) for d in c[c.keep_rate == rho].depth.unique())
        base = {"keep_rate": float(rho), "depths": depths, "by_depth": bool(rho >= 1.0)}
        if rho >= 1.0:
            out.append({**base, "outlier": None,
                        "collapse": [d for d in depths if d not in controls],
                        "controls": [d for d in depths if d in controls]})
        elif len(depths) < 3:
            out.append({**base, "collapse": depths, "outlier": None, "controls": []})
        else:
            out.append({**base, "collapse": depths[:-1], "outlier": depths[-1], "controls": []})
    return out


def departs(g: dict, ratio: float, min_gap: float) -> str:
    """'yes' when D_out ≥ ratio·D_in and D_out ≥ min_gap, 'no' when D_out ≤ D_in, else 'unclear'."""
    if np.isnan(g["D_out"]) or np.isnan(g["D_in"]):
        return "unclear"
    if g["D_out"] >= ratio * g["D_in"] and g["D_out"] >= min_gap:
        return "yes"
    if g["D_out"] <= g["D_in"]:
        return "no"
    return "unclear"


def _paper_depth(an: dict, key: str, rho: float):
    d = {float(k): v for k, v in (an.get(key) or {}).items()}
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


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> pd.DataFrame:
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
    an = cfg.get("analysis", {})
    study = cfg["name"]
    min_ov = float(an.get("min_overlap_decades", 0.3))
    step = float(an.get("grid_step_decades", 0.01))
    cr = float(an.get("collapse_ratio", 0.5))
    orat = float(an.get("outlier_ratio", 2.0))
    ogap = float(an.get("outlier_min_gap", 0.3))
    c = speed.curves(speed.tau_table(runs))
    p = float(c.target_acc.iloc[0]) if "target_acc" in c else float("nan")
    rows = []
    rho1 = ""   # ρ = 1's D(η)/D(ηL), quoted in the ρ < 1 rows (panels come in decreasing ρ)
    for pan in panels(c, an.get("control_depths") or ()):
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
                  f"{n_cens}/{len(cc)} (L, η) points never reached p = {p:g} in {T} steps "
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
        pd_ = _paper_depth(an, "paper_collapse_depth", rho)
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
        po = _paper_depth(an, "paper_outlier_depth", rho)
        rows.append(row(
            study, f"outlier_departs[rho={rho:g}]",
            f"With dropout ρ = {rho:g} a deeper net (L = {o}; paper: L = {po}) departs from the "
            "collapsed τ(η) curve", SOURCE,
            measured=r, expected=f"D_out/D_in ≥ {orat:g} and D_out ≥ {ogap:g}; a ρ = 1 control "
            "at that depth, where run, does not depart", tolerance=orat, verdict=verdict,
            detail=(f"L = {o} = {o / xi2:.2g} ξ2 against {depths}: D_out = {_fmt(g['D_out'])} over "
                    f"{g['n_out']} (depth, η) points, D_in = {_fmt(g['D_in'])} over {g['n_in']}; "
                    f"L = {o} reached p = {p:g} at {g['out_reached']}/{g['out_points']} learning "
                    f"rates within {int(allc.steps.max())} steps (a censored point counts as "
                    f"ln(T/τ_j), a lower bound){ctext}")))
    return frame(rows)
