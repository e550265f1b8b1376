"""Trend rows: which way a claim's statistic moves as a study's budget grows along its ladder.

A study's ladder (``ladder:`` in its study file, :mod:`sigprop.config.ladder`) is a list of
rungs, each a scale of the study with a budget (steps, depth, width or data size grown toward
the paper's setup).  Every rung's claims table gives, per claim, the measured statistic and,
where its test has one, its standard error.  :func:`trend_rows` fits, per claim, the statistic
on the natural log of the budget by weighted least squares (weights 1 / SE^2,
:func:`weighted_slope`) and reads the slope against the direction of the paper's value:

* ``toward``: the slope points toward the paper's value by more than ``z`` of its SEs;
* ``away``: it points away by more than ``z`` SEs (a finding, reported with its numbers), or
  the lowest rung sits on the paper's value and the slope moves off it by more than ``z`` SEs;
* ``flat``: the slope is within ``z`` SEs of zero and ``z`` SEs are less than the slope that
  would carry the statistic from the lowest rung to the paper's value by the paper's budget
  (``needed``): a trend of that size would have been seen;
* ``inconclusive``: neither (too few resolved rungs, no SE, or a slope SE too wide to
  distinguish ``needed`` from zero).

The direction of the paper's value is ``sign(expected - measured)`` at the lowest rung, or what
the study file declares for the claim (``ladder.toward``: ``up`` or ``down``, for one-sided
claims whose pass side is not the side of ``expected``).  Trend rows are their own kind of
evidence: they say whether the quick design's reading moves with budget, never whether the
paper's statement holds, and they never enter a paper's claim tally
(:func:`sigprop.claims.tally` counts ``claim`` rows only).

A rung whose statistic has no SE (a rank test, a count) is fitted unweighted, with the slope's
SE from the residuals and a Student-t quantile at the same one-sided level as ``z``; with three
rungs that leaves one degree of freedom, and such a trend is almost always ``inconclusive``.
"""

from __future__ import annotations

import fnmatch
import math

import numpy as np
import pandas as pd

TREND_VERDICTS = ("toward", "away", "flat", "inconclusive")
TREND_COLUMNS = ["study", "claim_id", "kind", "rungs", "budgets", "measured", "se", "verdicts",
                 "expected", "direction", "slope", "slope_se", "detectable_slope", "needed",
                 "weighted", "trend", "top_verdict", "top_rung", "paper_budget"]
"""Columns of a trend table: per claim, the rungs' names, budgets, measured values, SEs and
verdicts (lists, lowest rung first), the paper's value and its direction (+1 up, -1 down),
the fitted slope per unit of ln(budget) with its SE, the smallest slope the test resolves
(``detectable_slope``), the slope that reaches the paper's value by the paper's budget
(``needed``), whether the fit was weighted by the SEs, the trend verdict, and the top rung's
own verdict of the claim."""

Z = 3.0
"""Slope SEs that decide a trend (the one-sided level of the studies' ``seed_z``)."""


def weighted_slope(x, y, se=None) -> tuple[float, float, bool]:
    """Slope of ``y`` on ``x`` with its SE, and whether the fit was weighted.

    With every ``se`` finite and positive: weighted least squares with known variances
    (weights 1 / se^2); the slope's SE is ``1 / sqrt(sum w (x - xbar_w)^2)``.  Otherwise
    ordinary least squares with the slope's SE from the residuals (``n - 2`` degrees of
    freedom); NaN with fewer than three points."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    if n < 2 or np.ptp(x) == 0:
        return math.nan, math.nan, False
    if se is not None:
        s = np.asarray(se, float)
        if np.all(np.isfinite(s)) and np.all(s > 0):
            w = 1.0 / s ** 2
            xb = np.sum(w * x) / np.sum(w)
            sxx = np.sum(w * (x - xb) ** 2)
            slope = np.sum(w * (x - xb) * (y - np.sum(w * y) / np.sum(w))) / sxx
            return float(slope), float(1.0 / math.sqrt(sxx)), True
    xb, yb = x.mean(), y.mean()
    sxx = np.sum((x - xb) ** 2)
    slope = np.sum((x - xb) * (y - yb)) / sxx
    if n < 3:
        return float(slope), math.nan, False
    resid = y - (yb + slope * (x - xb))
    return float(slope), float(math.sqrt(np.sum(resid ** 2) / (n - 2) / sxx)), False


def critical(weighted: bool, n: int, z: float = Z) -> float:
    """The multiple of the slope's SE that decides: ``z`` for a weighted fit (known variances),
    the Student-t quantile with ``n - 2`` degrees of freedom at the same one-sided level
    otherwise."""
    if weighted:
        return z
    from scipy import stats
    if n < 3:
        return math.inf
    return float(stats.t.ppf(stats.norm.cdf(z), n - 2))


def trend_verdict(slope: float, slope_se: float, direction: int, needed: float,
                  crit: float) -> str:
    """``toward``, ``away``, ``flat`` or ``inconclusive`` (the module's rule)."""
    if not (np.isfinite(slope) and np.isfinite(slope_se)):
        return "inconclusive"
    resolve = crit * slope_se
    if direction == 0:               # the lowest rung sits on the paper's value
        if abs(slope) > resolve:
            return "away"
    elif slope * direction > resolve:
        return "toward"
    elif slope * direction < -resolve:
        return "away"
    if np.isfinite(needed) and needed > 0 and resolve < needed:
        return "flat"
    return "inconclusive"


def declared_direction(claim_id: str, toward: dict | None) -> int:
    """+1 or -1 where the study file's ``ladder.toward`` names the claim (first matching
    pattern), else 0."""
    for pattern, way in (toward or {}).items():
        if fnmatch.fnmatchcase(claim_id, pattern):
            return {"up": 1, "down": -1}[way]
    return 0


def trend_rows(tables: list[tuple[str, float, pd.DataFrame]], paper_budget: float,
               toward: dict | None = None, z: float = Z) -> pd.DataFrame:
    """Trend table of a study from its rungs' claims tables, lowest rung first: ``tables`` are
    ``(rung name, budget, claims table)``.  One row per ``claim`` or ``beyond`` row present at
    every rung (a claim missing from a rung, or measured NaN at one, is fitted on the rungs
    that have it and needs three)."""
    if len(tables) < 2:
        raise ValueError("a ladder needs at least two rungs to show a trend")
    budgets = [float(b) for _, b, _ in tables]
    if any(b <= 0 for b in budgets) or sorted(budgets) != budgets or len(set(budgets)) != len(budgets):
        raise ValueError(f"ladder budgets must be positive and increasing, not {budgets}")
    first = tables[0][2]
    keep = first[first.kind.isin(["claim", "beyond"])]
    out = []
    for _, c in keep.iterrows():
        names, bs, ms, ses, vs = [], [], [], [], []
        for name, b, t in tables:
            hit = t[t.claim_id == c.claim_id]
            if hit.empty:
                continue
            h = hit.iloc[0]
            names.append(name), bs.append(b), ms.append(float(h.measured))
            ses.append(float(h.se) if "se" in h and pd.notna(h.se) else math.nan)
            vs.append(str(h.verdict))
        ok = [i for i, m in enumerate(ms) if np.isfinite(m)]
        x = np.log([bs[i] for i in ok])
        y = np.array([ms[i] for i in ok])
        s = np.array([ses[i] for i in ok])
        slope, slope_se, weighted = weighted_slope(x, y, s) if len(ok) >= 3 else \
            (math.nan, math.nan, False)
        expected = float(c.expected) if pd.notna(c.expected) else math.nan
        m0 = ms[0] if ms else math.nan
        direction = declared_direction(c.claim_id, toward)
        if direction == 0 and np.isfinite(expected) and np.isfinite(m0) and expected != m0:
            direction = 1 if expected > m0 else -1
        span = math.log(paper_budget / bs[0]) if bs and paper_budget > bs[0] else math.nan
        gap = abs(expected - m0) if np.isfinite(expected) and np.isfinite(m0) else math.nan
        if not gap and np.isfinite(float(c.tolerance)):
            gap = abs(float(c.tolerance))
        needed = gap / span if np.isfinite(span) and span > 0 else math.nan
        crit = critical(weighted, len(ok), z)
        verdict = trend_verdict(slope, slope_se, direction, needed, crit)
        out.append({"study": c.study, "claim_id": c.claim_id, "kind": c.kind, "rungs": names,
                    "budgets": bs, "measured": ms, "se": ses, "verdicts": vs,
                    "expected": expected, "direction": direction, "slope": slope,
                    "slope_se": slope_se, "detectable_slope": crit * slope_se,
                    "needed": needed, "weighted": weighted, "trend": verdict,
                    "top_verdict": vs[-1] if names and names[-1] == tables[-1][0] else "-",
                    "top_rung": tables[-1][0], "paper_budget": float(paper_budget)})
    return pd.DataFrame(out, columns=TREND_COLUMNS)
