"""Claims of Huang et al. 2019 (arXiv:1912.09132) §4.2: the variance of the gradient metrics
over network instantiations grows as the square of their mean (V ∝ m^2), whatever the
activation, keep rate (Fig. 4) and width (Fig. 5)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, row
from .analysis import (
    METRICS,
    SETTING,
    expected_power,
    fig4_groups,
    fig5_groups,
    group_fits,
    pooled_fits,
)

SOURCE_FIG4 = "000 §4.2, Fig. 4"
SOURCE_FIG5 = "000 §4.2, Fig. 5"


def verdict(p: float, se: float, n_layers: int, want: float, c) -> tuple[float, str]:
    """Tolerance ``max(z_max SE, abs_tolerance)`` and verdict: ``fail`` when ``|p - want|``
    exceeds it (or no fit), ``inconclusive`` when it would pass but the tolerance exceeds
    ``inconclusive_tolerance`` (the SE is too large to tell the power), else ``pass``.
    ``c``: the study's ``claims:`` parameters."""
    se_tol = float(c.z_max) * se if np.isfinite(se) else 0.0
    tol = max(se_tol, float(c.abs_tolerance))
    if not (np.isfinite(p) and n_layers >= int(c.min_layers) and abs(p - want) <= tol):
        return tol, "fail"
    return tol, "inconclusive" if tol > float(c.inconclusive_tolerance) else "pass"


def _detail(f: dict, verdict_: str) -> str:
    d = (f"{f['n_layers']} layers (L = {f['depth']}), {f['n_inst']} instantiations; bootstrap SE "
         f"{f['se']:.3f}; fit V = {f['a']:.3g} m^{f['p']:.3f}; m spans {f['m_decades']:.2f} "
         f"decades; V/m^2 at l = 1: {f['rel_var_first']:.3g}, at l = L: {f['rel_var_last']:.3g}")
    if verdict_ == "fail" and np.isfinite(f["p"]):
        trend = "grows" if f["rel_var_first"] > f["rel_var_last"] else "shrinks"
        d += (f"; V/m^2 is not constant over the layers (it {trend} with the distance from the "
              "output), so V is not ∝ m^2 within the group")
    if verdict_ == "inconclusive":
        d += "; tolerance above inconclusive_tolerance: the SE is too large to tell the power"
    if f["metric"] != "g_aa" and f["keep_rate"] == 1.0 and f.get("c_star", 0.0) >= 1.0:
        d += "; rho = 1 and c* = 1: the two inputs coincide, so this metric equals g_aa"
    return d


def _group_rows(study: str, fits: pd.DataFrame, c, want: float, what: str,
                source: str) -> list[dict]:
    rows = []
    for f in fits.to_dict("records"):
        tol, v = verdict(f["p"], f["se"], f["n_layers"], want, c)
        label = METRICS[f["metric"]]
        cid = (f"power2[{f['metric']}, {f['activation']}, rho={f['keep_rate']:g}]" if what == "activation"
               else f"power2_width[{f['metric']}, N={f['width']}]")
        who = (f"{f['activation']} (sigma_w^2 = {f['sigma_w2']:g}), rho = {f['keep_rate']:g}, "
               f"N = {f['width']}")
        rows.append(row(study, cid, f"Var over instantiations of {label}^l ∝ (mean {label}^l)^2 "
                        f"across layers, {who}", source, measured=f["p"], expected=f"p = {want:g}",
                        tolerance=tol, verdict=v, detail=_detail(f, v)))
    return rows


def _pooled_rows(study: str, fits: pd.DataFrame, c, want: float, tag: str, who: str,
                 source: str) -> list[dict]:
    rows = []
    for f in fits.to_dict("records"):
        tol, v = verdict(f["p"], f["se"], f["n_layers"], want, c)
        label = METRICS[f["metric"]]
        rows.append(row(study, f"power2_pooled_{tag}[{f['metric']}]",
                        f"All groups' points (V^l, m^l) of {label} collapse on V ∝ m^2, {who}", source,
                        measured=f["p"], expected=f"p = {want:g}", tolerance=tol, verdict=v,
                        detail=(f"one fit over {f['n_layers']} points of {f['n_groups']} groups "
                                f"(>= {f['n_inst']} instantiations each); bootstrap SE {f['se']:.3f}; "
                                f"fit V = {f['a']:.3g} m^{f['p']:.3f}; m spans {f['m_decades']:.1f} "
                                "decades (the pooled fit is dominated by the groups whose m spans "
                                "the most decades)")))
    return rows


def _overall(study: str, group_rows: list[dict], cid: str, claim: str, source: str) -> dict:
    """Fraction of a figure's groups whose power is consistent with 2; passes only if all are."""
    v = [r["verdict"] for r in group_rows]
    frac = float(np.mean([x == "pass" for x in v])) if v else np.nan
    failed = [r["claim_id"] for r in group_rows if r["verdict"] == "fail"]
    unsure = [r["claim_id"] for r in group_rows if r["verdict"] == "inconclusive"]
    return row(study, cid, claim, source, measured=frac, expected="1 (every group consistent with p = 2)",
               tolerance=0.0, verdict="pass" if v and frac == 1.0 else "fail",
               detail=(f"{v.count('pass')} of {len(v)} groups pass, {len(failed)} fail, "
                       f"{len(unsure)} inconclusive"
                       + (f"; failing: {', '.join(failed)}" if failed else "")
                       + (f"; inconclusive: {', '.join(unsure)}" if unsure else "")))


def _with_c_star(fits: pd.DataFrame, theory: pd.DataFrame) -> pd.DataFrame:
    t = theory[theory.quantity == "c_star"][SETTING + ["value"]].rename(columns={"value": "c_star"})
    if fits.empty or t.empty:
        return fits.assign(c_star=np.nan)
    return fits.merge(t, on=SETTING, how="left")


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    """Per group and metric: fitted power of ``V ∝ m^p`` against 2 (000 §4.2), tolerance
    ``max(z_max SE, abs_tolerance)``; per figure the fraction of groups passing and, per
    metric, the power of one fit through all groups' points."""
    c = p.claims
    study = p.study
    fit = {"n_boot": c.n_boot, "min_layers": c.min_layers}
    want = expected_power(theory)
    rows = []
    g4 = fig4_groups(runs)
    r4 = _group_rows(study, _with_c_star(group_fits(runs, g4, **fit), theory), c, want,
                     "activation", SOURCE_FIG4)
    rows += r4 + [_overall(study, r4, "power2_all_activations",
                           "V ∝ m^2 for g_aa, g_ab, g~_ab regardless of activation and keep rate",
                           SOURCE_FIG4)]
    rows += _pooled_rows(study, pooled_fits(runs, g4, **fit), c, want, "activations",
                         "all activations and keep rates", SOURCE_FIG4)
    g5 = fig5_groups(runs, p)
    if len({g["width"] for g in g5}) > 1:
        r5 = _group_rows(study, _with_c_star(group_fits(runs, g5, **fit), theory), c, want,
                         "width", SOURCE_FIG5)
        rows += r5 + [_overall(study, r5, "power2_all_widths",
                               "V ∝ m^2 for g_aa, g_ab, g~_ab regardless of the width N "
                               "(tanh, rho = 0.9)", SOURCE_FIG5)]
        rows += _pooled_rows(study, pooled_fits(runs, g5, **fit), c, want, "widths",
                             "all widths (tanh, rho = 0.9)", SOURCE_FIG5)
    return frame(rows)
