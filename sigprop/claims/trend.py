"""Trend rows: which way a claim's statistic moves as a study's budget grows along its ladder.

A study's ladder (``ladder:`` in its study file, :mod:`sigprop.config.ladder`) is a list of
rungs, each a scale of the study with a budget (steps, depth, width or data size grown toward
the paper's setup) and the number of seeds behind its standard errors.  Every rung's claims
table gives, per claim, the measured statistic and, where its test has one, its standard error
over the rung's seeds.  :func:`trend_rows` fits, per claim, the statistic on the natural log of
the budget by weighted least squares (weights 1 / SE^2, :func:`weighted_slope`) and reads the
slope against the direction of the claim's reference value (below):

* ``toward``: the slope points toward the reference value by more than ``crit`` of its SEs;
* ``away``: it points away by more than ``crit`` SEs (a finding, reported with its numbers),
  or the lowest rung sits on the reference value and the slope moves off it by more than
  ``crit`` SEs;
* ``flat``: neither, and ``crit`` SEs are less than ``needed`` (:func:`needed_slope`: the slope
  that carries the lowest rung's value to the reference value by the paper's budget,
  ``|reference - m0| / ln(paper budget / lowest budget)``): a slope reaching the paper's value
  (or, where the paper states none, the threshold) by the paper's budget would have been seen,
  and was not;
* ``inconclusive``: neither (too few resolved rungs, no SE, a lowest rung on the reference
  value that does not leave it, or a slope SE too wide to tell ``needed`` from zero).

The critical multiple ``crit`` (:func:`critical`): a rung's SE is the SD of its seeds' values
over sqrt(seeds), an estimate with ``seeds - 1`` degrees of freedom, not a known variance, so a
weighted fit's slope is read against the Student t quantile with ``min(seeds) - 1`` degrees of
freedom over the fitted rungs at the one-sided level of ``z`` (``t.ppf(Phi(z), df)``; 19.2 for
three seeds at ``z = 3``), the conservative choice: the slope's SE combines the rungs' variance
estimates, and the Welch-Satterthwaite degrees of freedom of such a combination are at least
the smallest of theirs (Satterthwaite 1946, Biometrics Bull. 2, 110; Welch 1947, Biometrika 34,
28).  Every SE of the committed ladders is one over seeds (the claims' tests say "over 3 seeds"), so
no row is read with the normal quantile.  The fit's goodness is checked too: ``chi2``, the
weighted sum of squared residuals, has ``n - 2`` degrees of freedom for ``n`` rungs when the
straight line in ln budget and the SEs are right; where ``chi2 / (n - 2)`` exceeds 1 the
slope's SE is inflated by its square root (the Birge ratio; Birge 1932, Phys. Rev. 40, 207),
so that a ladder the line does not fit reads less certain, never more.  A rung whose statistic
has no SE (a rank test) makes the fit unweighted, with the slope's SE from the residuals and a
t quantile with ``n - 2`` degrees of freedom; with three rungs that leaves one, and such a trend
is almost always ``inconclusive``.

The reference value and the direction come from the study file's ``ladder.targets`` (per
claim-id pattern: ``side`` ``up`` or ``down``, the side of the claim's pass region, ``value``,
the test's threshold, and ``paper``, the paper's own value in the statistic's units where the
paper states one), declared with the rungs.  With ``paper``, the reference is the paper's value
and the direction is ``sign(paper - m0)`` (``m0``: the lowest rung's value), so a statistic that
passes beyond the paper's value and falls back toward it moves toward the paper; without it,
the reference is the threshold and the direction is the pass side.  A claim no pattern matches
moves toward a numeric ``expected`` of its row; without either it has no reference and reads
``inconclusive``.  The ``reference`` column says which: ``paper value``, ``pass
threshold``, ``claim expected`` or ``none``.  Trend rows are their own kind of evidence: they
say whether the quick design's reading moves with budget, never whether the paper's statement
holds, and they never enter a paper's claim tally (:func:`sigprop.claims.tally` counts
``claim`` rows only).

An SE of 0 at a rung (seeds that agree exactly) is floored at the smallest positive SE of the
same claim on the other rungs (:func:`floored_se`).
"""

from __future__ import annotations

import fnmatch
import math

import numpy as np
import pandas as pd

TREND_VERDICTS = ("toward", "away", "flat", "inconclusive")
REFERENCES = ("paper value", "pass threshold", "claim expected", "none")
TREND_COLUMNS = [
    "study",
    "claim_id",
    "kind",
    "rungs",
    "budgets",
    "measured",
    "se",
    "verdicts",
    "expected",
    "reference",
    "direction",
    "slope",
    "slope_se",
    "chi2",
    "crit",
    "detectable_slope",
    "needed",
    "weighted",
    "trend",
    "top_verdict",
    "top_rung",
    "paper_budget",
]
"""Columns of a trend table: per claim, the rungs' names, budgets, measured values, SEs and
verdicts (lists, lowest rung first), the reference value (``expected``) and what it is
(``reference``: one of :data:`REFERENCES`), its direction from the lowest rung (+1 up, -1 down,
0 on it), the fitted slope per unit of ln(budget) with its SE (inflated where the fit is poor),
the weighted fit's chi-square (NaN unweighted), the critical multiple of the SE (``crit``), the
smallest slope the fit resolves (``detectable_slope = crit * slope_se``), the slope that reaches
the reference value by the paper's budget (``needed``), whether the fit was weighted by the
SEs, the trend verdict, and the top rung's own verdict of the claim."""

LIST_COLUMNS = ("rungs", "budgets", "measured", "se", "verdicts")
"""The columns that hold one value per rung (stored as JSON text in ``trend.parquet``)."""

Z = 3.0
"""The one-sided level of a trend, as a normal quantile (that of the studies' ``seed_z``)."""


def weighted_slope(x, y, se=None) -> tuple[float, float, bool, float]:
    """Slope of ``y`` on ``x`` with its SE, whether the fit was weighted, and its chi-square.

    With every ``se`` finite and positive: weighted least squares (weights 1 / se^2); the
    slope's SE is ``1 / sqrt(sum w (x - xbar_w)^2)`` times ``sqrt(max(1, chi2 / (n - 2)))``,
    where ``chi2 = sum w r^2`` of the residuals ``r`` (no inflation with two points).
    Otherwise ordinary least squares with the slope's SE from the residuals (``n - 2`` degrees
    of freedom; NaN with fewer than three points) and chi-square NaN."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    if n < 2 or np.ptp(x) == 0:
        return math.nan, math.nan, False, math.nan
    if se is not None:
        s = np.asarray(se, float)
        if np.all(np.isfinite(s)) and np.all(s > 0):
            w = 1.0 / s**2
            xb, yb = np.sum(w * x) / np.sum(w), np.sum(w * y) / np.sum(w)
            sxx = np.sum(w * (x - xb) ** 2)
            slope = np.sum(w * (x - xb) * (y - yb)) / sxx
            chi2 = float(np.sum(w * (y - yb - slope * (x - xb)) ** 2))
            birge = max(1.0, chi2 / (n - 2)) if n > 2 else 1.0
            return float(slope), float(math.sqrt(birge / sxx)), True, chi2
    xb, yb = x.mean(), y.mean()
    sxx = np.sum((x - xb) ** 2)
    slope = np.sum((x - xb) * (y - yb)) / sxx
    if n < 3:
        return float(slope), math.nan, False, math.nan
    resid = y - (yb + slope * (x - xb))
    return float(slope), float(math.sqrt(np.sum(resid**2) / (n - 2) / sxx)), False, math.nan


def critical(weighted: bool, n: int, seeds: float, z: float = Z) -> float:
    """The multiple of the slope's SE that decides, at the one-sided level ``Phi(z)``: for a
    weighted fit, the Student-t quantile with ``seeds - 1`` degrees of freedom (``seeds``: the
    fewest seeds behind an SE of the fitted rungs; ``z`` itself only for infinitely many); for
    an unweighted fit of ``n`` rungs, the t quantile with ``n - 2`` degrees of freedom
    (infinite below three rungs)."""
    from scipy import stats

    level = stats.norm.cdf(z)
    if weighted:
        if not seeds >= 2:
            raise ValueError(f"an SE over {seeds} seeds has no degrees of freedom")
        return z if math.isinf(seeds) else float(stats.t.ppf(level, seeds - 1))
    if n < 3:
        return math.inf
    return float(stats.t.ppf(level, n - 2))


def trend_verdict(slope: float, slope_se: float, direction: int, needed: float, crit: float) -> str:
    """``toward``, ``away``, ``flat`` or ``inconclusive`` (the module's rule)."""
    if not (np.isfinite(slope) and np.isfinite(slope_se)):
        return "inconclusive"
    resolve = crit * slope_se
    if direction == 0:  # the lowest rung sits on the reference value
        if abs(slope) > resolve:
            return "away"
    elif slope * direction > resolve:
        return "toward"
    elif slope * direction < -resolve:
        return "away"
    if np.isfinite(needed) and needed > 0 and resolve < needed:
        return "flat"
    return "inconclusive"


def declared_target(claim_id: str, targets: dict | None) -> tuple[int, float, str]:
    """``(side, value, reference)`` where the study file's ``ladder.targets`` names the claim
    (first matching pattern): the pass side (+1 ``up``, -1 ``down``) and, with ``paper``, the
    paper's value and ``"paper value"``, else the threshold and ``"pass threshold"``;
    ``(0, nan, "none")`` where none matches."""
    for pattern, t in (targets or {}).items():
        if fnmatch.fnmatchcase(claim_id, pattern):
            side = {"up": 1, "down": -1}[t["side"]]
            if t.get("paper") is not None:
                return side, float(t["paper"]), "paper value"
            return side, float(t["value"]), "pass threshold"
    return 0, math.nan, "none"


def _number(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def needed_slope(reference: float, m0: float, budget0: float, paper_budget: float) -> float:
    """The slope per unit of ln budget that carries the lowest rung's value ``m0`` (at budget
    ``budget0``) to the reference value by the paper's budget:
    ``|reference - m0| / ln(paper_budget / budget0)``; NaN without a finite reference, with
    ``m0`` on it, or with the paper's budget not above the lowest rung's."""
    if not (np.isfinite(reference) and np.isfinite(m0) and reference != m0):
        return math.nan
    if not (budget0 > 0 and paper_budget > budget0):
        return math.nan
    return abs(reference - m0) / math.log(paper_budget / budget0)


def floored_se(se) -> np.ndarray:
    """The rungs' SEs for the weights: an SE of 0 (seeds that agree exactly, as counts of cells
    often do) is no infinite precision, so it takes the smallest positive SE of the same claim
    on the other rungs; with none positive, the SEs stay as they are (an unweighted fit)."""
    s = np.asarray(se, float)
    pos = s[np.isfinite(s) & (s > 0)]
    if len(pos):
        s = np.where(np.isfinite(s) & (s == 0), pos.min(), s)
    return s


def trend_rows(
    tables: list[tuple[str, float, pd.DataFrame]],
    paper_budget: float,
    targets: dict | None = None,
    z: float = Z,
    *,
    seeds,
) -> pd.DataFrame:
    """Trend table of a study from its rungs' claims tables, lowest rung first: ``tables`` are
    ``(rung name, budget, claims table)``; ``targets``: the study file's ``ladder.targets``;
    ``seeds``: the number of seeds behind each rung's SEs (one per rung, or one for all; the
    ladder's ``seeds``).  One row per ``claim`` or ``beyond`` row of the lowest rung (a claim
    missing from a rung, or measured NaN at one, is fitted on the rungs that have it and needs
    three)."""
    if len(tables) < 2:
        raise ValueError("a ladder needs at least two rungs to show a trend")
    budgets = [float(b) for _, b, _ in tables]
    if (
        any(b <= 0 for b in budgets)
        or sorted(budgets) != budgets
        or len(set(budgets)) != len(budgets)
    ):
        raise ValueError(f"ladder budgets must be positive and increasing, not {budgets}")
    per_rung = list(seeds) if np.iterable(seeds) else [seeds] * len(tables)
    if len(per_rung) != len(tables):
        raise ValueError(f"{len(per_rung)} seed counts for {len(tables)} rungs")
    seeds_of = {name: float(n) for (name, _, _), n in zip(tables, per_rung)}
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
        slope, slope_se, weighted, chi2 = (
            weighted_slope(x, y, s) if len(ok) >= 3 else (math.nan, math.nan, False, math.nan)
        )
        side, expected, reference = declared_target(c.claim_id, targets)
        if reference == "none":
            expected = _number(c.expected)
            reference = "claim expected" if np.isfinite(expected) else "none"
        m0, b0 = next(((ms[i], bs[i]) for i in ok), (math.nan, math.nan))
        if reference in ("paper value", "claim expected"):
            direction = int(np.sign(expected - m0)) if np.isfinite(m0) else 0
        else:
            direction = side
        needed = needed_slope(expected, m0, b0, paper_budget)
        fewest = min((seeds_of[names[i]] for i in ok), default=math.nan)
        crit = critical(weighted, len(ok), fewest, z)
        verdict = (
            trend_verdict(slope, slope_se, direction, needed, crit)
            if reference != "none"
            else "inconclusive"
        )
        out.append(
            {
                "study": c.study,
                "claim_id": c.claim_id,
                "kind": c.kind,
                "rungs": names,
                "budgets": bs,
                "measured": ms,
                "se": ses,
                "verdicts": vs,
                "expected": expected,
                "reference": reference,
                "direction": direction,
                "slope": slope,
                "slope_se": slope_se,
                "chi2": chi2,
                "crit": crit,
                "detectable_slope": crit * slope_se,
                "needed": needed,
                "weighted": weighted,
                "trend": verdict,
                "top_verdict": vs[-1] if names and names[-1] == tables[-1][0] else "-",
                "top_rung": tables[-1][0],
                "paper_budget": float(paper_budget),
            }
        )
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
    :func:`sigprop.publish.ladder.write_trend`), checked to be unedited and made from the rungs
    committed beside it (:func:`sigprop.claims.committed.verified_trend`), with its per-rung
    columns decoded."""
    from .committed import verified_trend

    return decode(verified_trend(path))


def top_reading(t) -> str:
    """How a trend row's top-rung verdict reads: every rung sits below the paper's budget
    (:func:`sigprop.config.ladder.ladder_of` refuses one that does not), so a fail there is
    "not reproduced at <rung>", never a contradiction of the paper."""
    words = {"pass": "supported", "fail": "not reproduced", "inconclusive": "inconclusive"}.get(
        str(t.top_verdict), str(t.top_verdict)
    )
    return f"{words} at {t.top_rung}"


def decided(t: pd.DataFrame) -> tuple[int, int]:
    """``(decided, claims)`` of a trend table ``t`` (:func:`read_trend`): of its counted claims
    (kind ``claim``), those with a decided trend (``toward``, ``away`` or ``flat``) or a decided
    verdict at the top rung (``pass`` or ``fail``); the rest the ladder cannot yet decide."""
    c = t[t.kind == "claim"]
    ok = c.trend.isin(["toward", "away", "flat"]) | c.top_verdict.isin(["pass", "fail"])
    return int(ok.sum()), len(c)
