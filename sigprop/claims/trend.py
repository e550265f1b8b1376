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
* ``flat``: the slope is within ``z`` SEs of zero and ``z`` SEs are less than ``needed``
  (:func:`needed_slope`: the claim's own detectable effect at the lowest rung spread over the
  ladder's span of ln budget): a move the claim's test could see would have been seen;
* ``inconclusive``: neither (too few resolved rungs, no SE, or a slope SE too wide to
  distinguish ``needed`` from zero).

The direction of the paper's statement and its value come from the study file's
``ladder.targets`` (per claim-id pattern: ``side`` ``up`` or ``down``, the side of the pass
region, and ``value``, the statement's threshold in the statistic's units), declared with the
rungs; a claim no pattern matches moves toward a numeric ``expected`` of its row, and without
either it can only read ``flat`` or ``inconclusive``.  Trend rows are their own kind of
evidence: they say whether the quick design's reading moves with budget, never whether the
paper's statement holds, and they never enter a paper's claim tally
(:func:`sigprop.claims.tally` counts ``claim`` rows only).

An SE of 0 at a rung (seeds that agree exactly) is floored at the smallest positive SE of the
same claim on the other rungs (:func:`floored_se`).  A rung whose statistic has no SE (a rank
test) makes the fit unweighted, with the slope's SE from the residuals and a Student-t quantile at the same one-sided level as ``z``; with three
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

LIST_COLUMNS = ("rungs", "budgets", "measured", "se", "verdicts")
"""The columns that hold one value per rung (stored as JSON text in ``trend.parquet``)."""

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


def declared_target(claim_id: str, targets: dict | None) -> tuple[int, float]:
    """``(direction, value)`` where the study file's ``ladder.targets`` names the claim (first
    matching pattern): +1 for ``side: up``, -1 for ``down``, and the statement's threshold in
    the statistic's units; ``(0, nan)`` where none matches."""
    for pattern, t in (targets or {}).items():
        if fnmatch.fnmatchcase(claim_id, pattern):
            return {"up": 1, "down": -1}[t["side"]], float(t["value"])
    return 0, math.nan


def _number(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def needed_slope(detectable: float, target: float, m0: float, budgets, paper_budget: float
                 ) -> float:
    """The slope a trend must be able to resolve for ``flat`` to mean something: the claim's
    own detectable effect at the lowest rung spread over the ladder's span of ln budget (a
    statistic that moved by less than that over the rungs did not move, as far as the claim's
    test can tell); without a finite detectable effect, the slope that would carry the lowest
    rung's value to the target by the paper's budget."""
    span = math.log(budgets[-1] / budgets[0]) if len(budgets) > 1 else math.nan
    if np.isfinite(detectable) and detectable > 0 and np.isfinite(span) and span > 0:
        return detectable / span
    to_paper = math.log(paper_budget / budgets[0]) if budgets and paper_budget > budgets[0] \
        else math.nan
    if np.isfinite(target) and np.isfinite(m0) and target != m0 and np.isfinite(to_paper):
        return abs(target - m0) / to_paper
    return math.nan


def floored_se(se) -> np.ndarray:
    """The rungs' SEs for the weights: an SE of 0 (seeds that agree exactly, as counts of cells
    often do) is no infinite precision, so it takes the smallest positive SE of the same claim
    on the other rungs; with none positive, the SEs stay as they are (an unweighted fit)."""
    s = np.asarray(se, float)
    pos = s[np.isfinite(s) & (s > 0)]
    if len(pos):
        s = np.where(np.isfinite(s) & (s == 0), pos.min(), s)
    return s


def trend_rows(tables: list[tuple[str, float, pd.DataFrame]], paper_budget: float,
               targets: dict | None = None, z: float = Z) -> pd.DataFrame:
    """Trend table of a study from its rungs' claims tables, lowest rung first: ``tables`` are
    ``(rung name, budget, claims table)``; ``targets``: the study file's ``ladder.targets``.
    One row per ``claim`` or ``beyond`` row of the lowest rung (a claim missing from a rung, or
    measured NaN at one, is fitted on the rungs that have it and needs three)."""
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
        s = floored_se([ses[i] for i in ok])
        slope, slope_se, weighted = weighted_slope(x, y, s) if len(ok) >= 3 else \
            (math.nan, math.nan, False)
        direction, expected = declared_target(c.claim_id, targets)
        if direction == 0:
            expected = _number(c.expected)
        m0 = next((m for m in ms if np.isfinite(m)), math.nan)
        if direction == 0 and np.isfinite(expected) and np.isfinite(m0) and expected != m0:
            direction = 1 if expected > m0 else -1
        needed = needed_slope(float(c.detectable) if pd.notna(c.detectable) else math.nan,
                              expected, m0, bs, paper_budget)
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


def encode(t: pd.DataFrame) -> pd.DataFrame:
    """A trend table as stored in ``trend.parquet``: the per-rung columns as JSON text."""
    import json
    return t.assign(**{c: t[c].map(json.dumps) for c in LIST_COLUMNS})[TREND_COLUMNS]


def decode(stored: pd.DataFrame) -> pd.DataFrame:
    """The inverse of :func:`encode`."""
    import json
    t = stored.copy()
    for c in LIST_COLUMNS:
        t[c] = t[c].map(json.loads)
    return t[TREND_COLUMNS]


def read_trend(path) -> pd.DataFrame:
    """A committed ``trend.parquet`` (``docs/evidence/ladder/<study>/``, written by
    :func:`sigprop.steps.ladder.write_trend`), checked to be unedited and made from the rungs
    committed beside it (:func:`sigprop.claims.committed.verified_trend`), with its per-rung
    columns decoded."""
    from .committed import verified_trend
    return decode(verified_trend(path))


def top_reading(t) -> str:
    """How a trend row's top-rung verdict reads: every rung sits below the paper's budget
    (:func:`sigprop.config.ladder.ladder_of` refuses one that does not), so a fail there is
    "not reproduced at <rung>", never a contradiction of the paper."""
    words = {"pass": "supported", "fail": "not reproduced",
             "inconclusive": "inconclusive"}.get(str(t.top_verdict), str(t.top_verdict))
    return f"{words} at {t.top_rung}"
