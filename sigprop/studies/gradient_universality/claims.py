"""Claims of Huang, Xu, Du, Zeng, Zhao 2019, "Mean field theory for deep dropout networks"
(arXiv:1912.09132) §4.2: the variance of the gradient metrics (Eq. 8) over network
instantiations grows as the square of their mean (V ∝ m^2), whatever the activation, keep rate
(Fig. 4) and width (Fig. 5).

Rows (the claims contract of :mod:`sigprop.claims`), one per distinct measurement:

- ``power2[metric, act, rho]``, ``power2_width[metric, N]`` (an equivalence): the fitted
  power p of ``V^l ∝ (m^l)^p`` over the layers, bootstrap SE over the instantiations; fail when
  ``|p - 2| > max(z_max SE, abs_tolerance)``; a pass needs ``z_max SE <= abs_tolerance`` (else
  the design cannot resolve a deviation of ``abs_tolerance`` and the row is ``inconclusive``);
  detectable: ``max(z_max SE, abs_tolerance)`` in units of the power; margin: ``abs_tolerance``
  (the same rule, stated as the margin of :func:`sigprop.claims.row`).  One group of nets is
  one measurement: the study file's ``corroborations`` make its ``g_ab`` and ``g~_ab`` rows
  summary rows that corroborate its ``g_aa`` claim (applied by the claims job and when the
  committed paper-scale table is read).  000 states no tolerance (the
  powers are "consistent with 2" against a line drawn on a log-log plot), so
  ``abs_tolerance`` is the project's choice (the study file's ``tolerance_sources``): a fail
  reads "departs beyond our tolerance", not "contradicts the paper".
- Each of these rows also states, next to the power, how many decades of ``m`` the fitted
  layers span and by how many decades ``V/m^2`` drifts across them
  (:func:`.analysis.span_decades`, :func:`.analysis.drift_decades`, with bootstrap SEs; in
  ``values`` as ``span_decades``, ``drift_decades``): ``p - 2`` is the slope of ``log(V/m^2)``
  on ``log m``, so ``|p - 2| ≈ |drift| / span``.  The same drift of ``V/m^2`` moves the power
  by less the more decades ``m`` spans (many in linear and ReLU nets, whose ``chi_1`` is far
  from 1; few in tanh and hard tanh nets, near ``chi_1 = 1``): a fail reads as "V/m^2 drifts
  by more than ``tolerance x span`` decades", a pass as "by less", not as an effect of the
  activation as such.
- Copies (sanity rows, never counted): at rho = 1 with c* = 1 the two inputs coincide, so
  g_ab = g~_ab = g_aa in every net and layer and their fits repeat the g_aa claim; the Fig. 5
  group at the Fig. 4 width is the Fig. 4 tanh group (same runs).  Each sanity row checks the
  identity on the data.
- ``power2_all_*`` and ``power2_pooled_*`` (summary, never counted): the conjunction of a
  figure's claim rows, and one fit through all its groups' points (the collapse the figure
  shows, with the margin ``abs_tolerance``, its span over all points and the median of the
  groups' drifts); they pool measurements that claim rows already test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, pooled, row, sanity
from ...measure.gradient_runs import matrix
from .analysis import (
    GROUP,
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
IDENTITY_RTOL = 1e-12
"""A copy's measurement equals the original's up to rounding."""


def verdict(p: float, se: float, n_layers: int, want: float, c) -> tuple[float, str]:
    """Tolerance (= detectable) ``max(z_max SE, abs_tolerance)`` and verdict: ``inconclusive``
    without a fit (fewer than ``min_layers`` layers, or no spread of m) or without an SE;
    ``fail`` when ``|p - want|`` exceeds the tolerance; ``inconclusive`` when it would pass but
    ``z_max SE > abs_tolerance`` (the design cannot resolve a deviation of ``abs_tolerance``);
    else ``pass``.  ``c``: the study's ``claims:`` parameters."""
    k, floor = float(c.z_max), float(c.abs_tolerance)
    if not (np.isfinite(p) and n_layers >= int(c.min_layers) and np.isfinite(se)):
        return (max(k * se, floor) if np.isfinite(se) else np.nan), "inconclusive"
    tol = max(k * se, floor)
    if abs(p - want) > tol:
        return tol, "fail"
    return tol, "inconclusive" if k * se > floor else "pass"


def describe_test(
    c, n_inst: int, n_layers: int, f: dict | None = None, pooled_: bool = False
) -> str:
    """The test in words; with the fit ``f``, the span of m and the drift of V/m^2 next to the
    power (``|p - 2| ≈ |drift| / span``) and the drift the test could flag."""
    k, floor = float(c.z_max), float(c.abs_tolerance)
    t = (
        f"|p - 2| <= max({k:g} bootstrap SE, {floor:g}) for the power p of a least-squares "
        f"fit of log V on log m over {n_layers} layers (SE: bootstrap over {n_inst} "
        f"instantiations); a pass needs {k:g} SE <= {floor:g}, else inconclusive; "
        "detectable in units of the power"
    )
    if f is None:
        return t
    span, drift = f["span_decades"], f["drift_decades"]
    tol = max(k * f["se"], floor) if np.isfinite(f["se"]) else floor
    where = (
        "over all groups' points and the groups' V/m^2 drift a median of"
        if pooled_
        else "over the fitted layers and V/m^2 drifts"
    )
    return (
        t + "; p - 2 is the slope of log(V/m^2) on log m, so a drift of V/m^2 by D decades "
        "across layers over which m spans S decades shows as |p - 2| ~ D / S (exactly so where "
        f"log m is linear in the layer): here m spans {span:.2f} decades "
        f"{where} {drift:+.2f} decades across their layers (least-squares line of "
        "log10(V/m^2) on the layer, farthest minus nearest to the output), D / S = "
        f"{_ratio(drift, span):.3f}; the test flags a drift only above {tol:.3g} x "
        f"{span:.2f} = {tol * span:.2f} decades"
    )


def _ratio(drift: float, span: float) -> float:
    return abs(drift) / span if np.isfinite(drift) and np.isfinite(span) and span > 0 else np.nan


def _span_values(f: dict) -> dict:
    return {
        "span_decades": f["span_decades"],
        "span_se": f["span_se"],
        "drift_decades": f["drift_decades"],
        "drift_se": f["drift_se"],
        "drift_over_span": _ratio(f["drift_decades"], f["span_decades"]),
    }


def _detail(f: dict, verdict_: str, c) -> str:
    d = (
        f"{f['n_layers']} layers (L = {f['depth']}), {f['n_inst']} instantiations; bootstrap SE "
        f"{f['se']:.3f}; fit V = {f['a']:.3g} m^{f['p']:.3f}; m spans {f['span_decades']:.2f} "
        f"± {f['span_se']:.2f} decades over the fitted layers; V/m^2 drifts "
        f"{f['drift_decades']:+.2f} ± {f['drift_se']:.2f} decades across them (|drift| / span "
        f"= {_ratio(f['drift_decades'], f['span_decades']):.3f}, |p - 2| = "
        f"{abs(f['p'] - 2):.3f}); V/m^2 at l = 1: {f['rel_var_first']:.3g}, at l = L: "
        f"{f['rel_var_last']:.3g}"
    )
    if verdict_ == "fail" and np.isfinite(f["p"]):
        trend = "grows" if f["drift_decades"] > 0 else "shrinks"
        d += (
            f"; V/m^2 is not constant over the layers (it {trend} with the distance from the "
            "output), so V is not ∝ m^2 within the group"
        )
    if verdict_ == "inconclusive":
        if np.isfinite(f["p"]) and np.isfinite(f["se"]):
            k, floor = float(c.z_max), float(c.abs_tolerance)
            need = int(np.ceil(f["n_inst"] * (k * f["se"] / floor) ** 2))
            d += (
                f"; {k:g} SE = {k * f['se']:.3f} > {floor:g}: the SE over {f['n_inst']} "
                f"instantiations cannot resolve the power (about {need} would)"
            )
        else:
            d += "; no fit or no SE"
    return d


def _copy_of(f: dict, fig4: list[dict], what: str) -> tuple[str, str, str] | None:
    """``(claim id of the original, its metric, why)`` when group fit ``f`` repeats another
    claim row's measurement, else None."""
    if what == "width" and any(all(g[k] == f[k] for k in GROUP) for g in fig4):
        orig = f"power2[{f['metric']}, {f['activation']}, rho={f['keep_rate']:g}]"
        return (
            orig,
            f["metric"],
            ("the Fig. 5 group at the Fig. 4 width is the Fig. 4 group (same runs)"),
        )
    c_star = f.get("c_star", 0.0)
    if (
        f["metric"] != "g_aa"
        and f["keep_rate"] == 1.0
        and np.isfinite(c_star)
        and c_star >= 1.0 - 1e-12
    ):
        orig = (
            f"power2[g_aa, {f['activation']}, rho=1]"
            if what == "activation"
            else f"power2_width[g_aa, N={f['width']}]"
        )
        return (
            orig,
            "g_aa",
            ("rho = 1 and c* = 1: the two inputs coincide, so this metric equals g_aa"),
        )
    return None


def _identity(runs: pd.DataFrame, f: dict, orig_metric: str) -> float:
    """Max relative difference between this group's metric and ``orig_metric`` over nets and
    layers (the same runs)."""
    g = {k: f[k] for k in GROUP}
    a, _ = matrix(runs, g, f["metric"])
    b, _ = matrix(runs, g, orig_metric)
    if a.shape != b.shape:
        return np.inf
    return float(np.nanmax(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))) if a.size else np.inf


def _group_rows(
    study: str,
    runs: pd.DataFrame,
    fits: pd.DataFrame,
    c,
    want: float,
    what: str,
    source: str,
    fig4: list[dict],
    done: dict,
) -> list[dict]:
    """One row per group and metric; ``done``: claim id -> verdict of the rows already made
    (a copy refers to its original there)."""
    rows = []
    for f in fits.to_dict("records"):
        tol, v = verdict(f["p"], f["se"], f["n_layers"], want, c)
        label = METRICS[f["metric"]]
        cid = (
            f"power2[{f['metric']}, {f['activation']}, rho={f['keep_rate']:g}]"
            if what == "activation"
            else f"power2_width[{f['metric']}, N={f['width']}]"
        )
        who = (
            f"{f['activation']} (sigma_w^2 = {f['sigma_w2']:g}), rho = {f['keep_rate']:g}, "
            f"N = {f['width']}"
        )
        claim = f"Var over instantiations of {label}^l ∝ (mean {label}^l)^2 across layers, {who}"
        copy = _copy_of(f, fig4, what)
        if copy is not None and copy[0] in done:
            orig, orig_metric, why = copy
            done[cid] = done[orig]
            dev = _identity(runs, f, orig_metric)
            same = dev <= IDENTITY_RTOL
            rows.append(
                sanity(
                    study,
                    cid,
                    claim + f" (a copy of {orig})",
                    source,
                    measured=f["p"],
                    expected=f"the power of {orig}",
                    tolerance=IDENTITY_RTOL,
                    verdict="pass" if same else "fail",
                    detail=(
                        f"{why}; max relative difference of the per-net values {dev:.1e}; "
                        f"counted once, as {orig} (verdict there: {done[orig]})"
                    ),
                    values={"p": f["p"], "se": f["se"], "max_rel_diff": dev},
                    test=f"identity: same measurement as {orig}",
                )
            )
            # a copy of another figure's claim enters this figure's summary with that verdict
            if not any(r["claim_id"] == orig for r in rows):
                rows[-1]["_summary_verdict"] = (orig, done[orig])
            continue
        done[cid] = v
        rows.append(
            row(
                study,
                cid,
                claim,
                source,
                measured=f["p"],
                expected=f"p = {want:g}",
                tolerance=tol,
                verdict=v,
                detail=_detail(f, v, c),
                values={
                    "p": f["p"],
                    "se": f["se"],
                    "n_layers": f["n_layers"],
                    "n_inst": f["n_inst"],
                    **_span_values(f),
                },
                test=describe_test(c, f["n_inst"], f["n_layers"], f),
                detectable=tol,
                margin=float(c.abs_tolerance),
            )
        )
    return rows


def _pooled_rows(
    study: str, fits: pd.DataFrame, c, want: float, tag: str, who: str, source: str
) -> list[dict]:
    rows = []
    for f in fits.to_dict("records"):
        tol, v = verdict(f["p"], f["se"], f["n_layers"], want, c)
        label = METRICS[f["metric"]]
        rows.append(
            row(
                study,
                f"power2_pooled_{tag}[{f['metric']}]",
                f"All groups' points (V^l, m^l) of {label} collapse on V ∝ m^2, {who}",
                source,
                measured=f["p"],
                expected=f"p = {want:g}",
                tolerance=tol,
                verdict=v,
                detail=(
                    f"one fit over {f['n_layers']} points of {f['n_groups']} groups "
                    f"(>= {f['n_inst']} instantiations each); bootstrap SE "
                    f"{f['se']:.3f}; fit V = {f['a']:.3g} m^{f['p']:.3f}; m spans "
                    f"{f['span_decades']:.1f} decades over all points; the groups' "
                    f"V/m^2 drift a median {f['drift_decades']:+.2f} ± "
                    f"{f['drift_se']:.2f} decades (the pooled fit is dominated by "
                    "the groups whose m spans the most decades); a summary of the "
                    "groups' points, which the group rows test"
                ),
                values={
                    "p": f["p"],
                    "se": f["se"],
                    "n_layers": f["n_layers"],
                    "n_inst": f["n_inst"],
                    "n_groups": f["n_groups"],
                    **_span_values(f),
                },
                kind="summary",
                test=describe_test(c, f["n_inst"], f["n_layers"], f, pooled_=True)
                + " (pooled fit)",
                detectable=tol,
                margin=float(c.abs_tolerance),
            )
        )
    return rows


def _overall(study: str, group_rows: list[dict], cid: str, claim: str, source: str) -> dict:
    """A figure's claim rows together (a summary, never counted): pass only if every one
    passes, fail if any fails, else inconclusive.  A group counted in another figure enters
    with its verdict there; copies within the figure are left out."""
    items = [(r["claim_id"], r["verdict"]) for r in group_rows if r["kind"] == "claim"]
    items += [r["_summary_verdict"] for r in group_rows if "_summary_verdict" in r]
    v = [x for _, x in items]
    frac = float(np.mean([x == "pass" for x in v])) if v else np.nan
    failed = [i for i, x in items if x == "fail"]
    unsure = [i for i, x in items if x == "inconclusive"]
    verdict_ = "fail" if failed else "inconclusive" if unsure or not v else "pass"
    return pooled(
        study,
        cid,
        claim,
        source,
        measured=frac,
        expected="1 (every group consistent with p = 2)",
        tolerance=0.0,
        verdict=verdict_,
        detail=(
            f"{v.count('pass')} of {len(v)} groups pass, {len(failed)} fail, "
            f"{len(unsure)} inconclusive (each measurement once)"
            + (f"; failing: {', '.join(failed)}" if failed else "")
            + (f"; inconclusive: {', '.join(unsure)}" if unsure else "")
        ),
        test="conjunction of the figure's claim rows",
    )


def _with_c_star(fits: pd.DataFrame, theory: pd.DataFrame) -> pd.DataFrame:
    t = theory[theory.quantity == "c_star"][SETTING + ["value"]].rename(columns={"value": "c_star"})
    if fits.empty or t.empty:
        return fits.assign(c_star=np.nan)
    return fits.merge(t, on=SETTING, how="left")


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    """Per group and metric: fitted power of ``V ∝ m^p`` against 2 (000 §4.2), see the module
    docstring for the rule; per figure a summary of its claim rows and, per metric, the power
    of one fit through all groups' points (summaries)."""
    c = p.claims
    study = p.study
    fit = {"n_boot": c.n_boot, "min_layers": c.min_layers}
    want = expected_power(theory)
    rows, done = [], {}
    g4 = fig4_groups(runs)
    r4 = _group_rows(
        study,
        runs,
        _with_c_star(group_fits(runs, g4, **fit), theory),
        c,
        want,
        "activation",
        SOURCE_FIG4,
        g4,
        done,
    )
    rows += r4 + [
        _overall(
            study,
            r4,
            "power2_all_activations",
            "V ∝ m^2 for g_aa, g_ab, g~_ab regardless of activation and keep rate",
            SOURCE_FIG4,
        )
    ]
    rows += _pooled_rows(
        study,
        pooled_fits(runs, g4, **fit),
        c,
        want,
        "activations",
        "all activations and keep rates",
        SOURCE_FIG4,
    )
    g5 = fig5_groups(runs, p)
    if len({g["width"] for g in g5}) > 1:
        r5 = _group_rows(
            study,
            runs,
            _with_c_star(group_fits(runs, g5, **fit), theory),
            c,
            want,
            "width",
            SOURCE_FIG5,
            g4,
            done,
        )
        rows += r5 + [
            _overall(
                study,
                r5,
                "power2_all_widths",
                "V ∝ m^2 for g_aa, g_ab, g~_ab regardless of the width N (tanh, rho = 0.9)",
                SOURCE_FIG5,
            )
        ]
        rows += _pooled_rows(
            study,
            pooled_fits(runs, g5, **fit),
            c,
            want,
            "widths",
            "all widths (tanh, rho = 0.9)",
            SOURCE_FIG5,
        )
    return frame(rows)
