"""Paper claims as checks over Parquet tables: each returns rows of
``sigprop.tables.CLAIM_COLUMNS`` with a measured value, what the paper expects, a tolerance, a
verdict (pass / fail / inconclusive), the test used and the smallest effect it could detect.

Three kinds of row (:data:`KINDS`): a ``claim`` tests a paper's statement against measurement
and could come out either way; a ``sanity`` row is an identity, a theorem or a control that must
hold if the apparatus is right; a ``summary`` pools measurements that claim rows already test
(e.g. all panels at once, as a paper's plot does).  Sanity and summary rows are shown apart and
never counted in a tally (:func:`tally`): one measurement, one counted row.  Statistical helpers here state their power: :func:`z_within` and
:func:`z_above` (the deviation that ``k`` standard errors can resolve), :func:`rank_claim`
(Kendall's tau with its attainable levels and its chance of passing under no association) and
:func:`max_abs_z_bootstrap` (one joint test over points that share initializations).
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pandas as pd

from ..tables import CLAIM_COLUMNS

KINDS = ("claim", "sanity", "summary")
VERDICTS = ("pass", "fail", "inconclusive", "smoke")
MIN_ORDERED_ITEMS = 4
"""An ordering claim ("rises with") needs at least this many ordered items, or a stated reason
(with 3 items Kendall's tau takes only the values +-1/3 and +-1)."""


def row(study, claim_id, claim, source, measured, expected, tolerance, verdict, detail="",
        values: dict | None = None, *, kind: str = "claim", test: str = "",
        detectable: float = float("nan")) -> dict:
    """One row.  ``values``: named numbers behind the verdict (e.g. both fit errors), kept as
    JSON so that paper tables (:mod:`sigprop.papers`) can be built from claims.  ``test``: the
    test in words (statistic, threshold, how many independent units); ``detectable``: the
    smallest effect it could detect at the configured seeds, in the units of ``measured``
    (:func:`check_table` requires both on every ``claim`` row)."""
    if kind not in KINDS:
        raise ValueError(f"claim {claim_id}: kind must be one of {KINDS}, not {kind!r}")
    return dict(study=study, claim_id=claim_id, claim=claim, source=source, measured=measured,
                expected=expected, tolerance=tolerance, verdict=verdict, detail=detail,
                values=json.dumps({k: float(v) for k, v in (values or {}).items()}, sort_keys=True),
                kind=kind, test=test, detectable=float(detectable), exploratory=False)


def sanity(study, claim_id, claim, source, measured, expected, tolerance, verdict, detail="",
           values: dict | None = None, *, test: str = "", detectable: float = float("nan")) -> dict:
    """A sanity row (identity, theorem or control): reported, never tallied."""
    return row(study, claim_id, claim, source, measured, expected, tolerance, verdict, detail,
               values, kind="sanity", test=test or "sanity check", detectable=detectable)


def values(claim: pd.Series) -> dict:
    """The named numbers of one claim row (``{}`` when it has none)."""
    v = claim.get("values", "")
    return json.loads(v) if isinstance(v, str) and v else {}


def frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=CLAIM_COLUMNS)
    df["exploratory"] = df["exploratory"].astype(bool)
    df["detectable"] = df["detectable"].astype(float)
    return df


def pooled(study, claim_id, claim, source, measured, expected, tolerance, verdict, detail="",
           values: dict | None = None, *, test: str = "",
           detectable: float = float("nan")) -> dict:
    """A pooled row over measurements that claim rows already test: reported, never tallied."""
    return row(study, claim_id, claim, source, measured, expected, tolerance, verdict, detail,
               values, kind="summary", test=test, detectable=detectable)


def claims_only(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that count: ``kind == 'claim'``."""
    return df[df["kind"] == "claim"]


def tally(df: pd.DataFrame) -> dict:
    """Verdict counts over the claim rows only (sanity and summary rows never count), with how
    many of them are exploratory."""
    c = claims_only(df)
    out = {v: int((c.verdict == v).sum()) for v in ("pass", "fail", "inconclusive")}
    if (c.verdict == "smoke").any():
        out["smoke"] = int((c.verdict == "smoke").sum())
    out["claims"] = len(c)
    out["exploratory"] = int(c.exploratory.sum())
    s = df[df["kind"] == "sanity"]
    out["sanity"] = len(s)
    out["sanity_failing"] = int((s.verdict != "pass").sum())
    out["summary"] = int((df["kind"] == "summary").sum())
    return out


# -- tests that state their power -----------------------------------------------------------

def z_within(deviation: float, se: float, k: float, floor: float = 0.0) -> tuple[str, str, float]:
    """An "equals" claim: ``|deviation| <= max(k SE, floor)``.  Returns ``(verdict, test,
    detectable)``: the smallest deviation this test flags is ``max(k SE, floor)``; with no
    standard error the verdict is ``inconclusive``."""
    bound = max(k * se, floor) if np.isfinite(se) else np.nan
    if not np.isfinite(bound) or not np.isfinite(deviation):
        return "inconclusive", f"|deviation| <= max({k:g} SE, {floor:g}); no SE", np.nan
    verdict = "pass" if abs(deviation) <= bound else "fail"
    return verdict, f"|deviation| <= max({k:g} SE, {floor:g})", float(bound)


def z_above(effect: float, se: float, k: float) -> tuple[str, str, float]:
    """A "larger than" claim: ``effect > k SE`` passes, ``effect < -k SE`` fails (the opposite
    holds), in between is ``inconclusive`` (the design cannot tell).  The smallest effect it
    detects is ``k SE``."""
    if not (np.isfinite(effect) and np.isfinite(se)) or se < 0:
        return "inconclusive", f"effect > {k:g} SE (one-sided); no SE", np.nan
    bound = k * se
    verdict = "pass" if effect > bound else ("fail" if effect < -bound else "inconclusive")
    return verdict, f"effect > {k:g} SE (one-sided; fail below -{k:g} SE)", float(bound)


def kendall_levels(n: int) -> np.ndarray:
    """The values Kendall's tau can take for ``n`` untied items, ascending."""
    pairs = n * (n - 1) // 2
    return np.array(sorted({1 - 2 * d / pairs for d in range(pairs + 1)})) if pairs else np.array([])


def kendall_inversion_counts(n: int) -> list[int]:
    """How many orders of ``n`` untied items have ``k`` inversions, ``k = 0 .. n(n-1)/2`` (the
    Mahonian numbers: inserting the ``i``-th item into an order of ``i - 1`` adds 0 .. i - 1
    inversions); they sum to ``n!``."""
    counts = [1]
    for i in range(2, n + 1):
        nxt = [0] * (len(counts) + i - 1)
        for k, c in enumerate(counts):
            for j in range(i):
                nxt[k + j] += c
        counts = nxt
    return counts


def kendall_law(n: int) -> Counter:
    """The exact null law of Kendall's tau over ``n`` untied items in random order: counts of
    each value ``1 - 4k / (n(n-1))`` (a :class:`fractions.Fraction`) over the ``n!`` orders."""
    if n < 2:
        return Counter({Fraction(0): 1})
    return Counter({1 - Fraction(4 * k, n * (n - 1)): c
                    for k, c in enumerate(kendall_inversion_counts(n)) if c})


def kendall_null_pass(n: int, min_tau: float) -> float:
    """P(tau >= min_tau) when the order is random (exact, :func:`kendall_law`): the chance that
    the ordering claim passes with no association at all."""
    if n < 2:
        return float("nan")
    law = kendall_law(n)
    return sum(c for t, c in law.items() if float(t) >= min_tau - 1e-12) / math.factorial(n)


def rank_claim(x, y, min_tau: float, min_items: int = MIN_ORDERED_ITEMS,
               reason: str = "") -> dict:
    """An ordering claim: Kendall's tau between ``x`` and ``y`` (finite pairs) >= ``min_tau``
    passes, <= 0 fails, in between is inconclusive.  With fewer than ``min_items`` ordered items
    and no ``reason`` the verdict is ``inconclusive``; so is it when no attainable tau reaches
    ``min_tau``.  Returns ``measured``, ``verdict``, ``test``, ``detectable`` (the smallest
    attainable tau that passes) and ``n``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    n = int(np.unique(x[ok]).size)
    tau = kendall_tau(x, y)
    levels = kendall_levels(n)
    reach = levels[levels >= min_tau - 1e-12]
    detectable = float(reach.min()) if reach.size else float("nan")
    null = kendall_null_pass(n, min_tau) if n >= 2 else float("nan")
    lv = ", ".join(f"{v:.2g}" for v in levels[levels > 0])
    test = (f"Kendall tau >= {min_tau:g} over {n} ordered items (attainable positive tau: {lv}; "
            f"P(pass | random order) = {null:.2f}); fail at tau <= 0")
    if not np.isfinite(tau):
        verdict = "inconclusive"
    elif n < min_items and not reason:
        verdict = "inconclusive"
        test += f"; fewer than {min_items} items: inconclusive"
    elif not reach.size:
        verdict = "inconclusive"
        test += "; no attainable tau reaches the threshold"
    else:
        verdict = "pass" if tau >= min_tau else ("fail" if tau <= 0 else "inconclusive")
    if reason:
        test += f"; {n} items because {reason}"
    return dict(measured=tau, verdict=verdict, test=test, detectable=detectable, n=n)


def max_abs_z_bootstrap(samples, theory, n_boot: int = 2000, seed: int = 0,
                        level: float = 0.95) -> dict:
    """One joint test over points that share initializations (angles, layers, cells).

    ``samples``: ``[n_init, n_points]``, the measurement of each initialization at each point;
    ``theory``: ``[n_points]``.  The statistic is ``T = max_j |mean_j - theory_j| / SE_j``; its
    null distribution is bootstrapped by resampling initializations (rows) and recentring at
    the sample means, which keeps the correlation between points.  Returns ``T``, the
    ``level`` critical value, the p-value, and ``detectable``: the critical value times the
    median relative SE, i.e. the smallest common relative offset from theory the test
    resolves."""
    import warnings
    with warnings.catch_warnings():      # a point with SE 0 is NaN in the max: skipped
        warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
        return _max_abs_z_bootstrap(samples, theory, n_boot, seed, level)


def _max_abs_z_bootstrap(samples, theory, n_boot, seed, level) -> dict:
    x = np.asarray(samples, float)
    th = np.asarray(theory, float)
    n = x.shape[0]
    if n < 2:
        return dict(T=np.nan, crit=np.nan, p=np.nan, detectable=np.nan, n=n)
    mean = x.mean(0)
    se = x.std(0, ddof=1) / math.sqrt(n)
    se = np.where(se > 0, se, np.nan)
    T = float(np.nanmax(np.abs(mean - th) / se))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    boot = x[idx]                                  # [B, n, points]
    bm = boot.mean(1)
    bse = boot.std(1, ddof=1) / math.sqrt(n)
    bse = np.where(bse > 0, bse, np.nan)
    stat = np.nanmax(np.abs(bm - mean) / bse, axis=1)
    stat = stat[np.isfinite(stat)]
    crit = float(np.quantile(stat, level))
    p = float((1 + np.sum(stat >= T)) / (1 + stat.size))
    rel = np.nanmedian(se / np.maximum(np.abs(th), 1e-300))
    return dict(T=T, crit=crit, p=p, detectable=float(crit * rel), n=n)


def kendall_tau(x, y) -> float:
    """Kendall's tau-b over the pairs where both are finite, for ordering claims ("rises with",
    "falls with"): NaN with fewer than 2 distinct x (no order to test), 0 when y is constant
    (no association)."""
    from scipy.stats import kendalltau
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 2 or np.unique(x).size < 2:
        return np.nan
    if np.unique(y).size < 2:
        return 0.0
    return float(kendalltau(x, y).statistic)


# -- the table's contract ---------------------------------------------------------------------

def check_table(df: pd.DataFrame, where: str) -> None:
    """Stop with ``where`` (the study or file) named when a row breaks the claims contract: an
    unknown kind or verdict, a claim id twice, a claim row without its test, or a decided
    (pass / fail) claim without the smallest effect it could detect."""
    bad_kind = df[~df["kind"].isin(KINDS)]
    if len(bad_kind):
        r = bad_kind.iloc[0]
        raise ValueError(f"{where}: claim {r.claim_id} has kind {r.kind!r}; expected one of {KINDS}")
    bad = df[~df["verdict"].isin(VERDICTS)]
    if len(bad):
        r = bad.iloc[0]
        raise ValueError(f"{where}: claim {r.claim_id} has verdict {r.verdict!r}; expected one "
                         f"of {VERDICTS}")
    dup = df[df.duplicated("claim_id", keep=False)]
    if len(dup):
        raise ValueError(f"{where}: claim id {dup.iloc[0].claim_id} appears twice (one "
                         "measurement, one row)")
    c = claims_only(df)
    no_test = c[c["test"].fillna("").str.strip() == ""]
    if len(no_test):
        raise ValueError(f"{where}: claim {no_test.iloc[0].claim_id} does not name its test "
                         "(sigprop.claims.row(..., test=...))")
    decided = c[c.verdict.isin(["pass", "fail"])]
    no_power = decided[~np.isfinite(decided["detectable"].astype(float))]
    if len(no_power):
        raise ValueError(f"{where}: claim {no_power.iloc[0].claim_id} has a verdict but no "
                         "detectable effect (sigprop.claims.row(..., detectable=...)); a test "
                         "that cannot state its power is 'inconclusive'")


def design_changes(design: dict | None, scale: str) -> list[dict]:
    """The changes of a study's ``design:`` that apply to ``scale`` (a change names its scale,
    or applies to both)."""
    return [c for c in (design or {}).get("changes") or [] if c.get("scale", scale) == scale]


def mark_exploratory(df: pd.DataFrame, changes: list[dict]) -> pd.DataFrame:
    """``exploratory = True`` on every row whose claim id matches a pattern in a change's
    ``affects`` (shell-style, e.g. ``threshold_*``): its verdict was obtained after the design
    was changed."""
    df = df.copy()
    hit = np.zeros(len(df), bool)
    for c in changes:
        for pat in c.get("affects") or []:
            hit |= np.array([fnmatch.fnmatchcase(str(i), pat) for i in df.claim_id], bool)
    df["exploratory"] = df["exploratory"].astype(bool) | hit
    return df
