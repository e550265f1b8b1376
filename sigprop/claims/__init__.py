"""Paper claims as checks over Parquet tables: each returns rows of
``sigprop.tables.CLAIM_COLUMNS`` with a measured value, what the paper expects, a tolerance, a
verdict (pass / fail / inconclusive), the test used and the smallest effect it could detect.

Five kinds of row (:data:`KINDS`): a ``claim`` tests a paper's statement against measurement
and could come out either way; a ``beyond`` row tests a statement the paper does not make (its
``source`` says "beyond the paper"); a ``sanity`` row is an identity or a theorem that must hold
if the apparatus is right; a ``control`` checks that a test has power, e.g. that the test which
accepts the paper's value rejects a wrong one, and like a claim states its test and the effect
it can detect, so an underpowered control reads ``inconclusive`` ("could not resolve"), not as a
broken apparatus; a ``summary`` pools measurements that claim rows already test (e.g. all panels
at once, as a paper's plot does).  Only claims are counted in a paper's tally (:func:`tally`):
one measurement, one counted row.

An equivalence claim ("equals", "matches", "within") states a ``margin``: the largest deviation
the paper's statement tolerates, in the units of ``detectable``.  Failing to find a deviation
is evidence only when the test could have found one of that size, so such a claim passes only
when ``detectable <= margin`` (:func:`row` makes it ``inconclusive`` otherwise, and
:func:`check_table` refuses a table that breaks the rule).

Statistical helpers here state their power: :func:`z_within`, :func:`z_equivalent` and
:func:`z_above` (the deviation
that ``k`` standard errors can resolve), :func:`rank_claim` (Kendall's tau with its attainable
levels and its chance of passing under no association, ties included: :func:`tau_null_law`) and
:func:`max_abs_z_bootstrap` (one joint test over points that share initializations).
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from collections import Counter
from fractions import Fraction

import numpy as np
import pandas as pd

from ..tables import CLAIM_COLUMNS

KINDS = ("claim", "beyond", "sanity", "control", "summary")
STATED = ("claim", "beyond", "control")
"""The kinds whose rows must name their test and, when decided, the effect it could detect."""
BEYOND = "beyond the paper"
"""How the ``source`` of a ``beyond`` row starts: the statement is ours, not the paper's."""
VERDICTS = ("pass", "fail", "inconclusive", "smoke")
FALSE_PASS_MAX = 0.05
"""The largest chance of passing when the claim is false that a counted pass may have."""
MIN_ORDERED_ITEMS = 4
"""An ordering claim ("rises with") needs at least this many ordered items, or a stated reason
(with 3 items Kendall's tau takes only the values +-1/3 and +-1)."""


def row(
    study,
    claim_id,
    claim,
    source,
    measured,
    expected,
    tolerance,
    verdict,
    detail="",
    values: dict | None = None,
    *,
    kind: str = "claim",
    test: str = "",
    detectable: float = float("nan"),
    margin: float = float("nan"),
    se: float = float("nan"),
    tolerance_source: str = "",
    false_pass: float = float("nan"),
) -> dict:
    """One row.  ``values``: named numbers behind the verdict (e.g. both fit errors), kept as
    JSON so that paper tables (:mod:`sigprop.papers`) can be built from claims.  ``test``: the
    test in words (statistic, threshold, how many independent units); ``detectable``: the
    smallest effect it could detect at the configured seeds, in the units of ``measured``
    (:func:`check_table` requires both on every ``claim`` and ``beyond`` row).  ``margin``:
    for an equivalence claim, the largest deviation it tolerates, in the units of
    ``detectable``; a ``pass`` whose ``detectable`` exceeds it becomes ``inconclusive`` (the
    test could not have seen a deviation of that size), and the test says so.  ``se``: the
    standard error of ``measured`` where the test has one (the unit of ``sigprop compare``'s
    shifts between two runs).  ``tolerance_source``: where the tolerance comes from
    (:mod:`sigprop.claims.reading`; empty: the study file's declaration applies).
    ``false_pass``: the probability that the test passes when the claim is false (e.g. under a
    random order for a rank test); a claim or beyond row whose pass has ``false_pass`` above
    :data:`FALSE_PASS_MAX` becomes ``inconclusive``, and the test says so."""
    if kind not in KINDS:
        raise ValueError(f"claim {claim_id}: kind must be one of {KINDS}, not {kind!r}")
    margin = float(margin)
    if np.isfinite(margin):
        test = (
            (f"{test}; equivalence margin {margin:.4g}: a pass needs detectable <= margin")
            if test
            else test
        )
        if (
            kind in ("claim", "beyond")
            and verdict == "pass"
            and not (np.isfinite(detectable) and float(detectable) <= margin * (1 + 1e-9))
        ):
            verdict = "inconclusive"
            test += (
                f" (here {float(detectable):.4g} > {margin:.4g}: the design cannot resolve "
                "the margin, so no deviation found is not evidence of equality)"
            )
    false_pass = float(false_pass)
    if kind in ("claim", "beyond") and verdict == "pass" and false_pass > FALSE_PASS_MAX:
        verdict = "inconclusive"
        test += (
            f" (P(pass | claim false) = {false_pass:.3g} > {FALSE_PASS_MAX:g}: the design "
            "would pass too often without the effect, so its pass is not evidence)"
        )
    return dict(
        study=study,
        claim_id=claim_id,
        claim=claim,
        source=source,
        measured=measured,
        expected=expected,
        tolerance=tolerance,
        verdict=verdict,
        detail=detail,
        values=json.dumps({k: float(v) for k, v in (values or {}).items()}, sort_keys=True),
        kind=kind,
        test=test,
        detectable=float(detectable),
        exploratory=False,
        margin=margin,
        scale="",
        regime="",
        se=float(se),
        tolerance_source=str(tolerance_source or ""),
        false_pass=false_pass,
        reading="",
    )


def sanity(
    study,
    claim_id,
    claim,
    source,
    measured,
    expected,
    tolerance,
    verdict,
    detail="",
    values: dict | None = None,
    *,
    test: str = "",
    detectable: float = float("nan"),
    se: float = float("nan"),
) -> dict:
    """A sanity row (identity or theorem): reported, never tallied."""
    return row(
        study,
        claim_id,
        claim,
        source,
        measured,
        expected,
        tolerance,
        verdict,
        detail,
        values,
        kind="sanity",
        test=test or "sanity check",
        detectable=detectable,
        se=se,
    )


def control(
    study,
    claim_id,
    claim,
    source,
    measured,
    expected,
    tolerance,
    verdict,
    detail="",
    values: dict | None = None,
    *,
    test: str,
    detectable: float,
    se: float = float("nan"),
    false_pass: float = float("nan"),
) -> dict:
    """A control row: evidence that a claim's test has power (it rejects what it must reject).
    Like a claim it names its ``test`` and, when decided, the ``detectable`` effect
    (:func:`check_table`); ``inconclusive`` means the control could not resolve its effect at
    the configured seeds (an underpowered control), ``fail`` that the test lacks the power the
    claim relies on.  Reported apart, never tallied."""
    return row(
        study,
        claim_id,
        claim,
        source,
        measured,
        expected,
        tolerance,
        verdict,
        detail,
        values,
        kind="control",
        test=test,
        detectable=detectable,
        se=se,
        false_pass=false_pass,
    )


def values(claim: pd.Series) -> dict:
    """The named numbers of one claim row (``{}`` when it has none)."""
    v = claim.get("values", "")
    return json.loads(v) if isinstance(v, str) and v else {}


def beyond(
    study,
    claim_id,
    claim,
    source,
    measured,
    expected,
    tolerance,
    verdict,
    detail="",
    values: dict | None = None,
    *,
    test: str = "",
    detectable: float = float("nan"),
    margin: float = float("nan"),
    se: float = float("nan"),
    tolerance_source: str = "",
    false_pass: float = float("nan"),
) -> dict:
    """A row that tests a statement the paper does not make (``source`` is prefixed with
    :data:`BEYOND`): reported beside the paper's claims, never in its tally."""
    if not str(source).startswith(BEYOND):
        source = f"{BEYOND}: {source}" if source else BEYOND
    return row(
        study,
        claim_id,
        claim,
        source,
        measured,
        expected,
        tolerance,
        verdict,
        detail,
        values,
        kind="beyond",
        test=test,
        detectable=detectable,
        margin=margin,
        se=se,
        tolerance_source=tolerance_source,
        false_pass=false_pass,
    )


def frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=CLAIM_COLUMNS)
    df["exploratory"] = df["exploratory"].astype(bool)
    for c in ("detectable", "margin", "se", "false_pass"):
        df[c] = df[c].astype(float)
    for c in ("scale", "regime", "tolerance_source", "reading"):
        df[c] = df[c].fillna("").astype(str)
    return df


def pooled(
    study,
    claim_id,
    claim,
    source,
    measured,
    expected,
    tolerance,
    verdict,
    detail="",
    values: dict | None = None,
    *,
    test: str = "",
    detectable: float = float("nan"),
    se: float = float("nan"),
    false_pass: float = float("nan"),
) -> dict:
    """A pooled row over measurements that claim rows already test: reported, never tallied."""
    return row(
        study,
        claim_id,
        claim,
        source,
        measured,
        expected,
        tolerance,
        verdict,
        detail,
        values,
        kind="summary",
        test=test,
        detectable=detectable,
        se=se,
        false_pass=false_pass,
    )


def _readings(df: pd.DataFrame) -> pd.Series:
    from .reading import readings

    if "reading" in df and (df["reading"].fillna("").astype(str) != "").all():
        return df["reading"].astype(str)
    return readings(df)


def claims_only(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that count: ``kind == 'claim'``, less those that read "unverified" (a printed
    formula whose evaluation does not reproduce the paper's own numbers)."""
    c = df[df["kind"] == "claim"]
    return c[_readings(c) != "unverified"] if len(c) else c


def tally(df: pd.DataFrame) -> dict:
    """Verdict counts over the claim rows only (beyond-the-paper, sanity, control and summary
    rows never count; controls are counted apart by verdict; unverified claims are counted
    apart), with how many of them are exploratory, how the fails read (``fail_contradicts``:
    beyond a tolerance the paper gives or admits; ``fail_departs``: beyond a tolerance of the
    project's choice; ``fail_out_of_regime``: "not reproduced at that scale", not a
    refutation) and how many passes lie outside the paper's regime."""
    c = claims_only(df)
    rd = _readings(c) if len(c) else pd.Series(dtype=object)
    out = {v: int((c.verdict == v).sum()) for v in ("pass", "fail", "inconclusive")}
    out["fail_out_of_regime"] = int(rd.str.startswith("not reproduced").sum())
    out["fail_contradicts"] = int((rd == "contradicts the paper").sum())
    out["fail_departs"] = int((rd == "departs beyond our tolerance").sum())
    out["fail_in_regime"] = out["fail"] - out["fail_out_of_regime"]
    out["pass_out_of_regime"] = int(rd.str.startswith("supported at").sum())
    a = df[df["kind"] == "claim"]
    out["unverified"] = int((_readings(a) == "unverified").sum()) if len(a) else 0
    if (c.verdict == "smoke").any():
        out["smoke"] = int((c.verdict == "smoke").sum())
    out["claims"] = len(c)
    out["exploratory"] = int(c.exploratory.sum())
    s = df[df["kind"] == "sanity"]
    out["sanity"] = len(s)
    out["sanity_failing"] = int((s.verdict != "pass").sum())
    k = df[df["kind"] == "control"]
    out["control"] = len(k)
    out["control_pass"] = int((k.verdict == "pass").sum())
    out["control_underpowered"] = int((k.verdict == "inconclusive").sum())
    out["control_failing"] = int((k.verdict == "fail").sum())
    out["summary"] = int((df["kind"] == "summary").sum())
    b = df[df["kind"] == "beyond"]
    out["beyond"] = len(b)
    out["beyond_pass"] = int((b.verdict == "pass").sum())
    return out


# -- tests that state their power -----------------------------------------------------------


def below_fraction(fraction: float, n: int, threshold: float, k: float) -> tuple[str, float]:
    """A control on a fraction of ``n`` units (e.g. the fraction of units a test fails to
    reject): ``pass`` when it lies below ``threshold`` by more than ``k`` binomial SE at the
    threshold, ``fail`` when it lies at or above by more, else ``inconclusive`` (too few units
    to tell).  Returns ``(verdict, detectable)``, the detectable distance being those ``k``
    SE."""
    if not n or not np.isfinite(fraction):
        return "inconclusive", float("nan")
    res = float(k * np.sqrt(threshold * (1 - threshold) / n))
    if fraction + res < threshold:
        return "pass", res
    return ("fail" if fraction - res >= threshold else "inconclusive"), res


def z_within(deviation: float, se: float, k: float, floor: float = 0.0) -> tuple[str, str, float]:
    """An "equals" claim: ``|deviation| <= max(k SE, floor)``.  Returns ``(verdict, test,
    detectable)``: the smallest deviation this test flags is ``max(k SE, floor)``; with no
    standard error the verdict is ``inconclusive``."""
    bound = max(k * se, floor) if np.isfinite(se) else np.nan
    if not np.isfinite(bound) or not np.isfinite(deviation):
        return "inconclusive", f"|deviation| <= max({k:g} SE, {floor:g}); no SE", np.nan
    verdict = "pass" if abs(deviation) <= bound else "fail"
    return verdict, f"|deviation| <= max({k:g} SE, {floor:g})", float(bound)


def z_equivalent(deviation: float, se: float, margin: float, k: float) -> tuple[str, str, float]:
    """An "equal within +-margin" claim as an interval test: ``|deviation| + k SE <= margin``
    passes (the interval lies inside the margin), ``|deviation| - k SE > margin`` fails (it lies
    outside), an interval across the boundary is ``inconclusive``; so a noisy measurement never
    passes.  At a true deviation equal to the margin the chance of a pass is at most
    ``Phi(-k)`` (tests/test_claims_fits.py simulates it).  The smallest deviation it resolves is
    ``k SE`` (the ``detectable`` of the row, which must not exceed ``margin`` for a pass)."""
    if not (np.isfinite(deviation) and np.isfinite(se)) or se < 0 or not margin > 0:
        return "inconclusive", f"|deviation| + {k:g} SE <= {margin:g}; no SE", np.nan
    d, half = abs(deviation), k * se
    verdict = "pass" if d + half <= margin else ("fail" if d - half > margin else "inconclusive")
    return (
        verdict,
        (f"|deviation| + {k:g} SE <= {margin:g} (fail when |deviation| - {k:g} SE > {margin:g})"),
        float(half),
    )


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
    return (
        np.array(sorted({1 - 2 * d / pairs for d in range(pairs + 1)})) if pairs else np.array([])
    )


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
    return Counter(
        {
            1 - Fraction(4 * k, n * (n - 1)): c
            for k, c in enumerate(kendall_inversion_counts(n))
            if c
        }
    )


def kendall_null_pass(n: int, min_tau: float) -> float:
    """P(tau >= min_tau) when the order is random (exact, :func:`kendall_law`): the chance that
    the ordering claim passes with no association at all."""
    if n < 2:
        return float("nan")
    law = kendall_law(n)
    return sum(c for t, c in law.items() if float(t) >= min_tau - 1e-12) / math.factorial(n)


TIE_EXACT_MAX = 8
"""Up to this many items the tie-aware null law of Kendall's tau is enumerated over all n!
orders; above it, and only when there are ties, it is sampled (:data:`TIE_SAMPLES` orders)."""
TIE_SAMPLES = 20_000


def _pair_signs(v: np.ndarray) -> np.ndarray:
    i, j = np.triu_indices(v.shape[-1], 1)
    return np.sign(v[..., j] - v[..., i])


def tau_null_law(x, y, seed: int = 0) -> dict:
    """The law of Kendall's tau-b between ``x`` and ``y`` (finite pairs) when ``y`` is paired
    with ``x`` in random order, ties in either kept as they are: the null of an ordering claim.

    Without ties it is the exact law of :func:`kendall_law`; with ties and at most
    :data:`TIE_EXACT_MAX` items it is enumerated over all orders; beyond that it is sampled from
    :data:`TIE_SAMPLES` random orders (seeded, so the same data give the same law).  Returns
    ``levels`` (the attainable values, ascending), ``probs`` and ``method`` (``exact`` or
    ``sampled``); no levels when ``x`` or ``y`` takes a single value (no order to test)."""
    import itertools

    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = len(x)
    if n < 2 or np.unique(x).size < 2 or np.unique(y).size < 2:
        return dict(levels=np.array([]), probs=np.array([]), method="exact", n=n)
    if np.unique(x).size == n and np.unique(y).size == n:
        law = kendall_law(n)
        lv = sorted(law)
        total = sum(law.values())
        return dict(
            levels=np.array([float(v) for v in lv]),
            probs=np.array([law[v] / total for v in lv]),
            method="exact",
            n=n,
        )
    sx = _pair_signs(x)
    norm = math.sqrt(float(np.count_nonzero(sx)) * float(np.count_nonzero(_pair_signs(y))))
    if n <= TIE_EXACT_MAX:
        perms = np.array(list(itertools.permutations(range(n))))
        method = "exact"
    else:
        rng = np.random.default_rng(seed)
        perms = np.argsort(rng.random((TIE_SAMPLES, n)), axis=1)
        method = "sampled"
    taus = np.round(_pair_signs(y[perms]) @ sx / norm, 12)
    levels, counts = np.unique(taus, return_counts=True)
    return dict(levels=levels, probs=counts / counts.sum(), method=method, n=n)


def rank_verdict(tau: float, min_tau: float, p_pass: float, p_fail: float) -> str:
    """The verdict of an ordering statistic ``tau`` (oriented so that the claim predicts a large
    positive value): ``pass`` at ``tau >= min_tau``, ``fail`` at ``tau <= -min_tau`` (a wrong sign
    as large as a pass needs) when that is significant (``p_fail``, its chance under a random
    order, at most :data:`FALSE_PASS_MAX`), else ``inconclusive``.  A pass whose ``p_pass``
    exceeds :data:`FALSE_PASS_MAX` is demoted by :func:`row`, which states it."""
    if not np.isfinite(tau):
        return "inconclusive"
    if tau >= min_tau - 1e-12:
        return "pass"
    if tau <= -min_tau + 1e-12 and p_fail <= FALSE_PASS_MAX:
        return "fail"
    return "inconclusive"


def rank_claim(x, y, min_tau: float, min_items: int = MIN_ORDERED_ITEMS, reason: str = "") -> dict:
    """An ordering claim: Kendall's tau-b between ``x`` and ``y`` (finite pairs).  It passes at
    ``tau >= min_tau``, fails at ``tau <= -min_tau`` when a random order reaches that so rarely
    that the wrong sign is significant (:func:`rank_verdict`, the pass rule mirrored), and is
    inconclusive in between (a small wrong sign is no evidence against the ordering).  With fewer
    than ``min_items`` ordered items and no ``reason`` the verdict is ``inconclusive``; so is it
    when no attainable tau reaches ``min_tau``, and when ``y`` takes a single value (all tied: no
    order to test).  The attainable levels and the chances of passing and failing under no
    association come from the tie-aware null (:func:`tau_null_law`).  Returns ``measured``,
    ``verdict``, ``test``, ``detectable`` (the smallest attainable tau that passes),
    ``false_pass`` (P(pass | random order): the claim is false) and ``n``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    n = int(np.unique(x[ok]).size)
    tau = kendall_tau(x, y)
    law = tau_null_law(x, y)
    levels = law["levels"]
    ties = int(ok.sum()) - int(np.unique(y[ok]).size)
    if not len(levels):
        what = (
            "y takes a single value (every item tied)"
            if n >= 2
            else "fewer than 2 distinct values of x"
        )
        return dict(
            measured=tau,
            verdict="inconclusive",
            detectable=float("nan"),
            n=n,
            false_pass=float("nan"),
            test=(
                f"Kendall tau-b >= {min_tau:g} over {n} ordered items; {what}: no "
                "order to test, inconclusive"
            ),
        )
    reach = levels[levels >= min_tau - 1e-12]
    detectable = float(reach.min()) if reach.size else float("nan")
    null = float(law["probs"][levels >= min_tau - 1e-12].sum())
    null_fail = float(law["probs"][levels <= -min_tau + 1e-12].sum())
    lv = ", ".join(f"{v:.2g}" for v in levels[levels > 0][:12])
    tie_note = (
        f"; {ties} tie(s) in y, null law {law['method']} over random orders with the ties kept"
        if ties or int(ok.sum()) != n
        else ""
    )
    test = (
        f"Kendall tau-b >= {min_tau:g} over {n} ordered items (attainable positive tau: {lv}; "
        f"P(pass | random order) = {null:.3g}){tie_note}; fail at tau <= -{min_tau:g} only "
        f"when significant (P(tau <= -{min_tau:g} | random order) = {null_fail:.3g}; "
        f"significant at <= {FALSE_PASS_MAX:g}), else inconclusive"
    )
    if not np.isfinite(tau):
        verdict = "inconclusive"
    elif n < min_items and not reason:
        verdict = "inconclusive"
        test += f"; fewer than {min_items} items: inconclusive"
    elif not reach.size:
        verdict = "inconclusive"
        test += "; no attainable tau reaches the threshold"
    else:
        verdict = rank_verdict(tau, min_tau, null, null_fail)
    if reason:
        test += f"; {n} items because {reason}"
    return dict(
        measured=tau, verdict=verdict, test=test, detectable=detectable, n=n, false_pass=null
    )


def max_abs_z_bootstrap(
    samples, theory, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> dict:
    """One joint test over points that share initializations (angles, layers, cells).

    ``samples``: ``[n_init, n_points]``, the measurement of each initialization at each point;
    ``theory``: ``[n_points]``.  The statistic is ``T = max_j |mean_j - theory_j| / SE_j``; its
    null distribution is bootstrapped by resampling initializations (rows) and recentring at
    the sample means, which keeps the correlation between points.  Returns ``T``, the
    ``level`` critical value, the p-value, and ``detectable``: the critical value times the
    median relative SE, i.e. the smallest common relative offset from theory the test
    resolves."""
    import warnings

    with warnings.catch_warnings():  # a point with SE 0 is NaN in the max: skipped
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
    boot = x[idx]  # [B, n, points]
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
    "falls with"): NaN with fewer than 2 distinct x or when y takes a single value (no order to
    test: a tie everywhere is no evidence either way, not an association of 0)."""
    from scipy.stats import kendalltau

    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 2 or np.unique(x).size < 2 or np.unique(y).size < 2:
        return np.nan
    return float(kendalltau(x, y).statistic)


# -- the table's contract ---------------------------------------------------------------------

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_THRESHOLD = re.compile(
    r"(?:>=|<=|≥|≤|(?<![-=<>])>(?!=)|(?<![-=<>])<(?!=))\s*(" + _NUMBER + r")(?!\s*SE)"
)


def _numbers(text: str) -> list[float]:
    return [float(m) for m in re.findall(_NUMBER, str(text))]


def threshold_mismatches(expected: str, test: str, tolerance: float = float("nan")) -> list[float]:
    """The thresholds that ``expected`` states (a nonzero number after ``>=``, ``<=``, ``<``,
    ``>``, not a multiple of SE) and that ``test`` does not name (nor ``tolerance`` equal, in
    absolute value): an ``expected`` that promises another threshold than the one the test
    applies."""
    named = [abs(w) for w in _numbers(test)] + (
        [abs(float(tolerance))] if np.isfinite(tolerance) else []
    )
    out = []
    for m in _THRESHOLD.finditer(str(expected)):
        v = float(m.group(1))
        if v == 0:  # a sign ("> 0"), which a test with a margin applies more strictly
            continue
        if not any(math.isclose(abs(v), w, rel_tol=5e-3, abs_tol=1e-12) for w in named):
            out.append(v)
    return out


def check_table(df: pd.DataFrame, where: str, paper: str | None = None) -> None:
    """Stop with ``where`` (the study or file) named when a row breaks the claims contract: an
    unknown kind or verdict, a claim id twice, a claim or beyond row without its test, a decided
    (pass / fail) one without the smallest effect it could detect, an equivalence claim passing
    with a detectable effect above its margin, an ``expected`` that names a threshold its test
    does not apply, a ``beyond`` row whose source does not say so, and (with ``paper``, e.g.
    ``"001"``) a claim whose source lies outside that paper."""
    bad_kind = df[~df["kind"].isin(KINDS)]
    if len(bad_kind):
        r = bad_kind.iloc[0]
        raise ValueError(
            f"{where}: claim {r.claim_id} has kind {r.kind!r}; expected one of {KINDS}"
        )
    bad = df[~df["verdict"].isin(VERDICTS)]
    if len(bad):
        r = bad.iloc[0]
        raise ValueError(
            f"{where}: claim {r.claim_id} has verdict {r.verdict!r}; expected one of {VERDICTS}"
        )
    dup = df[df.duplicated("claim_id", keep=False)]
    if len(dup):
        raise ValueError(
            f"{where}: claim id {dup.iloc[0].claim_id} appears twice (one measurement, one row)"
        )
    c = df[df["kind"].isin(STATED)]
    no_test = c[c["test"].fillna("").str.strip() == ""]
    if len(no_test):
        raise ValueError(
            f"{where}: claim {no_test.iloc[0].claim_id} does not name its test "
            "(sigprop.claims.row(..., test=...))"
        )
    decided = c[c.verdict.isin(["pass", "fail"])]
    no_power = decided[~np.isfinite(decided["detectable"].astype(float))]
    if len(no_power):
        raise ValueError(
            f"{where}: claim {no_power.iloc[0].claim_id} has a verdict but no "
            "detectable effect (sigprop.claims.row(..., detectable=...)); a test "
            "that cannot state its power is 'inconclusive'"
        )
    if "margin" in df:
        m = c.margin.astype(float)
        over = c[
            (c.verdict == "pass") & np.isfinite(m) & ~(c.detectable.astype(float) <= m * (1 + 1e-9))
        ]
        if len(over):
            r = over.iloc[0]
            raise ValueError(
                f"{where}: equivalence claim {r.claim_id} passes with detectable "
                f"{r.detectable:.4g} above its margin {r.margin:.4g}; it can only be "
                "'inconclusive' (sigprop.claims.row applies the margin)"
            )
    if "false_pass" in df:
        fp = c.false_pass.astype(float)
        loose = c[(c.verdict == "pass") & c.kind.isin(["claim", "beyond"]) & (fp > FALSE_PASS_MAX)]
        if len(loose):
            r = loose.iloc[0]
            raise ValueError(
                f"{where}: claim {r.claim_id} passes with false_pass "
                f"{r.false_pass:.3g} above {FALSE_PASS_MAX:g}: a test that passes "
                "that often without the effect is 'inconclusive' (sigprop.claims.row "
                "applies the rule)"
            )
    for r in c.itertuples():
        miss = threshold_mismatches(
            r.expected,
            r.test,
            float(r.tolerance) if isinstance(r.tolerance, (int, float)) else float("nan"),
        )
        if miss:
            raise ValueError(
                f"{where}: claim {r.claim_id}: expected {r.expected!r} names the "
                f"threshold {miss[0]:g}, which its test does not apply ({r.test!r})"
            )
    wrong = df[(df["kind"] == "beyond") != df["source"].astype(str).str.startswith(BEYOND)]
    wrong = wrong[wrong["kind"].isin(["claim", "beyond"])]
    if len(wrong):
        r = wrong.iloc[0]
        raise ValueError(
            f"{where}: claim {r.claim_id} is of kind {r.kind!r} with source "
            f"{r.source!r}; a statement the paper does not make is of kind 'beyond' "
            f"and its source starts with {BEYOND!r} (sigprop.claims.beyond)"
        )
    if paper is not None:
        src = df["source"].astype(str)
        outside = df[(df["kind"] == "claim") & ~((src == paper) | src.str.startswith(f"{paper} "))]
        if len(outside):
            r = outside.iloc[0]
            raise ValueError(
                f"{where}: claim {r.claim_id} has source {r.source!r}, outside paper "
                f"{paper}: a claim's source is an item of its own paper ('{paper} "
                "Eq. ...'); another paper's statement is of kind 'beyond'"
            )


def coarse(value: float, denominator: int = 1000) -> bool:
    """Whether ``value`` is a fraction with a small denominator (a count share, a tau of few
    untied items, 0, 1): a value that unrelated measurements can share by chance."""
    v = abs(float(value))
    return abs(v - float(Fraction(v).limit_denominator(denominator))) < 1e-12


def twin_pairs(df: pd.DataFrame) -> list[tuple[str, str, float]]:
    """Pairs of counted claims whose measured values agree in magnitude to 12 significant
    digits and are not :func:`coarse`: the same measurement counted twice (e.g. a "rises with"
    tau and the "falls with" tau of the same nets).  Returns ``(claim id, claim id, value)``."""
    c = claims_only(df)
    seen: dict[float, str] = {}
    out = []
    for r in c.itertuples():
        m = float(r.measured) if isinstance(r.measured, (int, float, np.floating)) else np.nan
        if not np.isfinite(m) or coarse(m):
            continue
        key = float(f"{abs(m):.12g}")
        ident = f"{r.study}:{r.claim_id}"
        if key in seen:
            out.append((seen[key], ident, m))
        else:
            seen[key] = ident
    return out


def check_sources(df: pd.DataFrame, where: str) -> None:
    """Stop with ``where`` named when a claim or beyond row does not say where its tolerance
    comes from (``tolerance_source`` starting with one of
    :data:`sigprop.claims.reading.TOLERANCE_KINDS`: declare it under the study file's
    ``tolerance_sources``)."""
    from .reading import TOLERANCE_KINDS, tolerance_kind

    c = df[df["kind"].isin(["claim", "beyond"])]
    src = (
        c["tolerance_source"].fillna("").astype(str)
        if "tolerance_source" in c
        else pd.Series("", index=c.index)
    )
    bad = c[[tolerance_kind(v) == "" for v in src]]
    if len(bad):
        r = bad.iloc[0]
        raise ValueError(
            f"{where}: claim {r.claim_id} does not say where its tolerance comes "
            f"from (tolerance_source {src[bad.index[0]]!r}): declare it under the "
            "study file's tolerance_sources as '<kind>: <where or why>', kind one "
            f"of {TOLERANCE_KINDS}"
        )


def false_pass_z(k: float, dof: float | None = None) -> float:
    """The chance that a one-sided test at ``k`` standard errors passes when the effect is
    exactly at its null (zero effect, or the margin of an interval test): ``P(Z > k)`` for a
    normal statistic (``dof`` None), ``P(T > k)`` with ``dof`` degrees of freedom for a mean
    over few seeds (``n - 1`` for ``n`` seeds); NaN below one degree of freedom (no SE)."""
    from scipy import stats

    if dof is None:
        return float(stats.norm.sf(k))
    return float(stats.t.sf(k, dof)) if np.isfinite(dof) and dof >= 1 else float("nan")


def design_changes(design: dict | None, scale: str) -> list[dict]:
    """The changes of a study's ``design:`` that apply to ``scale`` (a change names its scale,
    or ``both``; one that names none applies to both; a ladder rung is grown from the quick
    design, so the quick scale's changes apply to it)."""
    from sigprop.contract import base_scales

    own = set(base_scales(scale)) | {"both"}
    return [c for c in (design or {}).get("changes") or [] if c.get("scale", scale) in own]


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
