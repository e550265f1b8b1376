"""Claims of Huang, Xu, Du, Zeng, Zhao 2019, "Mean field theory for deep dropout networks"
(arXiv:1912.09132) §4.2: the variance of the gradient metrics (Eq. 8) over network
instantiations grows as the square of their mean (V ∝ m^2), whatever the activation, keep rate
(Fig. 4) and width (Fig. 5).

The statistics of the claims declared in ``CLAIMS`` (``__init__.py``; a group row's detail
adds ``FIT_NOTES`` when it fails or is inconclusive, a copy's texts are ``COPY``), built into
the claims table by :func:`sigprop.claims.declared.build`, one row per distinct measurement:

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

from ...claims.declared import build, result
from ...measure.gradient_runs import matrix
from . import CLAIMS, COPY, FIT_NOTES, SOURCE
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


def _fields(f: dict, c, want: float) -> dict:
    """The slots of a fit's texts: the fit ``f`` (its SE as ``boot_se``), the test's
    thresholds, ``|drift| / span`` and the drift the test could flag."""
    k, floor, se, span = float(c.z_max), float(c.abs_tolerance), f["se"], f["span_decades"]
    drift, tol = f["drift_decades"], max(k * se, floor) if np.isfinite(se) else floor
    fit = np.isfinite(f["p"]) and np.isfinite(se)
    return {
        **{key: v for key, v in f.items() if key != "se"},
        "label": METRICS[f["metric"]],
        "boot_se": se,
        "k": k,
        "floor": floor,
        "want": want,
        "ratio": abs(drift) / span if np.isfinite([drift, span]).all() and span > 0 else np.nan,
        "tol": tol,
        "flag": tol * span,
        "off": abs(f["p"] - 2),
        "trend": "grows" if drift > 0 else "shrinks",
        "k_se": k * se,
        "need": int(np.ceil(f["n_inst"] * (k * se / floor) ** 2)) if fit else 0,
        "fit": fit,
    }


def _fit(claim: str, qualifier: str, f: dict, c, want: float, notes: bool = True) -> dict:
    """The row of one fitted power (a group's, or with ``notes=False`` the pooled one)."""
    tol, v = verdict(f["p"], f["se"], f["n_layers"], want, c)
    fields = _fields(f, c, want)
    note = {"fail": "fail", "inconclusive": "unresolved" if fields["fit"] else "no fit"}.get(v)
    keys = ("p", "se", "n_layers", "n_inst", "n_groups", "span_decades", "span_se")
    keys += ("drift_decades", "drift_se")
    return result(
        claim,
        qualifier,
        measured=f["p"],
        tolerance=tol,
        verdict=v,
        values={**{key: f[key] for key in keys if key in f}, "drift_over_span": fields["ratio"]},
        detectable=tol,
        margin=float(c.abs_tolerance),
        texts={"detail": CLAIMS[claim].detail + FIT_NOTES[note]} if note and notes else None,
        **fields,
    )


def _copy_of(f: dict, fig4: list[dict], claim: str) -> tuple[str, str, str] | None:
    """``(claim id of the original, its metric, why)`` when group fit ``f`` repeats another
    claim row's measurement, else None."""
    if claim == "power2_width" and any(all(g[k] == f[k] for k in GROUP) for g in fig4):
        orig = f"power2[{f['metric']}, {f['activation']}, rho={f['keep_rate']:g}]"
        return (
            orig,
            f["metric"],
            "the Fig. 5 group at the Fig. 4 width is the Fig. 4 group (same runs)",
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
            if claim == "power2"
            else f"power2_width[g_aa, N={f['width']}]"
        )
        why = "rho = 1 and c* = 1: the two inputs coincide, so this metric equals g_aa"
        return orig, "g_aa", why
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


def _groups(runs, fits, c, want, claim, fig4, done) -> tuple[list[dict], list[tuple]]:
    """One result per group and metric of ``claim`` (``power2`` or ``power2_width``), and the
    (claim id, verdict) of each measurement the figure's summary counts: its claim rows, then
    the groups counted in another figure with their verdict there (copies within the figure
    are left out).  ``done``: claim id -> verdict of the rows already made (a copy refers to
    its original there)."""
    out, counted, elsewhere = [], [], []
    for f in fits.to_dict("records"):
        q = (
            f"{f['metric']}, {f['activation']}, rho={f['keep_rate']:g}"
            if claim == "power2"
            else f"{f['metric']}, N={f['width']}"
        )
        cid, copy = f"{claim}[{q}]", _copy_of(f, fig4, claim)
        if copy is not None and copy[0] in done:
            orig, orig_metric, why = copy
            done[cid] = done[orig]
            dev = _identity(runs, f, orig_metric)
            if not any(r["claim_id"] == orig for r in out):
                elsewhere.append((orig, done[orig]))
            out.append(
                result(
                    claim,
                    q,
                    measured=f["p"],
                    tolerance=IDENTITY_RTOL,
                    verdict="pass" if dev <= IDENTITY_RTOL else "fail",
                    values={"p": f["p"], "se": f["se"], "max_rel_diff": dev},
                    kind="sanity",
                    texts=COPY,
                    orig=orig,
                    why=why,
                    dev=dev,
                    there=done[orig],
                    **_fields(f, c, want),
                )
            )
            continue
        out.append(_fit(claim, q, f, c, want))
        done[cid] = out[-1]["stats"]["verdict"]
        counted.append((cid, done[cid]))
    return out, counted + elsewhere


def _overall(claim: str, items: list[tuple]) -> dict:
    """A figure's claim rows together (a summary, never counted): pass only if every one
    passes, fail if any fails, else inconclusive."""
    v = [x for _, x in items]
    failed = [i for i, x in items if x == "fail"]
    unsure = [i for i, x in items if x == "inconclusive"]
    return result(
        claim,
        measured=float(np.mean([x == "pass" for x in v])) if v else np.nan,
        tolerance=0.0,
        verdict="fail" if failed else "inconclusive" if unsure or not v else "pass",
        n=len(v),
        n_pass=v.count("pass"),
        n_fail=len(failed),
        n_unsure=len(unsure),
        listed=(f"; failing: {', '.join(failed)}" if failed else "")
        + (f"; inconclusive: {', '.join(unsure)}" if unsure else ""),
    )


def _with_c_star(fits: pd.DataFrame, theory: pd.DataFrame) -> pd.DataFrame:
    t = theory[theory.quantity == "c_star"][SETTING + ["value"]].rename(columns={"value": "c_star"})
    if fits.empty or t.empty:
        return fits.assign(c_star=np.nan)
    return fits.merge(t, on=SETTING, how="left")


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    """Per group and metric: fitted power of ``V ∝ m^p`` against 2 (000 §4.2), see the module
    docstring for the rule; per figure a summary of its claim rows and, per metric, the power
    of one fit through all groups' points (summaries).  Fig. 5 only with several widths."""
    c, want = p.claims, expected_power(theory)
    fit = {"n_boot": c.n_boot, "min_layers": c.min_layers}
    g4, g5 = fig4_groups(runs), fig5_groups(runs, p)
    results, done = [], {}
    figures = (
        ("power2", g4, "power2_all_activations", "power2_pooled_activations"),
        ("power2_width", g5, "power2_all_widths", "power2_pooled_widths"),
    )
    for claim, groups, overall, pooled in figures:
        if claim == "power2_width" and len({g["width"] for g in g5}) < 2:
            break
        fits = _with_c_star(group_fits(runs, groups, **fit), theory)
        rows, items = _groups(runs, fits, c, want, claim, g4, done)
        results += rows + [_overall(overall, items)]
        for f in pooled_fits(runs, groups, **fit).to_dict("records"):
            results.append(_fit(pooled, f["metric"], f, c, want, notes=False))
    return build(p.study, CLAIMS, results, SOURCE)
