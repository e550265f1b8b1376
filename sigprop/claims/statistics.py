"""Tests that state their power: z tests against a tolerance, a margin or zero, Kendall's tau with
its attainable levels and its chance of passing under no association (ties included), a
bootstrap max-|z| joint test over points that share initializations, and the false-pass rate of
a one-sided test over seeds."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np

from .rows import FALSE_PASS_MAX, MIN_ORDERED_ITEMS


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


# Relative slack below which two floats count as equal in :func:`exceeds`: statistics that move in
# whole cells or counts can equal their margin exactly, and rounding must not decide the verdict.
TIE_RTOL = 1e-9


def exceeds(value: float, bound: float) -> bool:
    """``value > bound``, where a value equal to the bound up to rounding (relative difference
    below :data:`TIE_RTOL`) is not beyond it: a mean of cell counts that equals ``k`` SE exactly
    in exact arithmetic lies on the boundary, whichever side its floating-point sum falls on."""
    return bool(value > bound + TIE_RTOL * max(1.0, abs(bound)))


def margin_verdict(effect: float, bound: float) -> str:
    """``pass`` when ``effect`` :func:`exceeds` ``bound``, ``fail`` when ``-effect`` does, else
    ``inconclusive`` (within the margin, or on it up to rounding)."""
    return (
        "pass"
        if exceeds(effect, bound)
        else ("fail" if exceeds(-effect, bound) else "inconclusive")
    )


def z_above(effect: float, se: float, k: float) -> tuple[str, str, float]:
    """A "larger than" claim: ``effect > k SE`` passes, ``effect < -k SE`` fails (the opposite
    holds), in between, or on either boundary (:func:`exceeds`), is ``inconclusive`` (the design
    cannot tell).  The smallest effect it detects is ``k SE``."""
    if not (np.isfinite(effect) and np.isfinite(se)) or se < 0:
        return "inconclusive", f"effect > {k:g} SE (one-sided); no SE", np.nan
    bound = k * se
    verdict = margin_verdict(effect, bound)
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


TAU_TOL = 1e-9
"""How close an ordering statistic may be to an attainable level and count as reaching it: the
null laws round their levels (:func:`tau_null_law` to 12 decimals, a mean over groups to 9), so
a statistic equal to a level may differ from its rounded value in the tenth decimal."""


def significant_levels(
    levels, probs, min_tau: float, alpha: float = FALSE_PASS_MAX
) -> tuple[float, float, float, float]:
    """The pass and fail thresholds of an ordering statistic with null law ``levels``, ``probs``
    (its attainable values under a random order and their chances, :func:`tau_null_law`):
    ``(pass_at, p_pass, fail_at, p_fail)``.  ``pass_at`` is the smallest attainable value
    ``>= min_tau`` whose upper tail under the null is at most ``alpha`` (:data:`FALSE_PASS_MAX`), and
    ``p_pass`` that tail, the chance a random order passes; ``fail_at`` mirrors it (the largest
    attainable value ``<= -min_tau`` whose lower tail is at most ``alpha``).  A side
    that no attainable value reaches is NaN, with its tail NaN.  With few items the threshold is
    therefore above ``min_tau``: over 5 untied items a random order reaches tau >= 0.6 with
    chance 0.117, tau >= 0.8 with 0.042, so a pass needs 0.8.  The test is the one-sided
    permutation test of Kendall's tau at level :data:`FALSE_PASS_MAX` (Kendall 1938,
    Biometrika 30: 81-93), with ``min_tau`` as the least effect that counts."""
    levels, probs = np.asarray(levels, float), np.asarray(probs, float)
    upper = np.cumsum(probs[::-1])[::-1]  # P(T >= levels[i])
    lower = np.cumsum(probs)  # P(T <= levels[i])
    ok_pass = (levels >= min_tau - TAU_TOL) & (upper <= alpha + 1e-12)
    ok_fail = (levels <= -min_tau + TAU_TOL) & (lower <= alpha + 1e-12)
    nan = float("nan")
    if ok_pass.any():
        i = int(np.flatnonzero(ok_pass)[0])
        pass_at, p_pass = float(levels[i]), float(upper[i])
    else:
        pass_at, p_pass = nan, nan
    if ok_fail.any():
        i = int(np.flatnonzero(ok_fail)[-1])
        fail_at, p_fail = float(levels[i]), float(lower[i])
    else:
        fail_at, p_fail = nan, nan
    return pass_at, p_pass, fail_at, p_fail


def level_verdict(stat: float, pass_at: float, fail_at: float) -> str:
    """The verdict of an ordering statistic against its thresholds (:func:`significant_levels`,
    oriented so that the claim predicts a large value): ``pass`` at ``stat >= pass_at``,
    ``fail`` at ``stat <= fail_at``, else ``inconclusive`` (also for a NaN statistic or
    threshold)."""
    if np.isfinite(stat) and np.isfinite(pass_at) and stat >= pass_at - TAU_TOL:
        return "pass"
    if np.isfinite(stat) and np.isfinite(fail_at) and stat <= fail_at + TAU_TOL:
        return "fail"
    return "inconclusive"


def level_words(
    pass_at: float,
    p_pass: float,
    fail_at: float,
    p_fail: float,
    min_tau: float,
    sign: int = +1,
    null: str = "random order",
) -> str:
    """The pass and fail thresholds of :func:`significant_levels` in words, each with its chance
    under ``null``, in the statistic's own orientation (``sign`` -1: the claim predicts a
    falling order, so the thresholds are read with their signs flipped)."""
    up, down = (">=", "<=") if sign > 0 else ("<=", ">=")
    passes = (
        f"pass at {up} {sign * pass_at:+.3g} (P(pass | {null}) = {p_pass:.3g})"
        if np.isfinite(pass_at)
        else f"no attainable value both beyond {sign * min_tau:+g} and significant: no pass "
        "possible"
    )
    fails = (
        f"fail at {down} {sign * fail_at:+.3g} (P = {p_fail:.3g})"
        if np.isfinite(fail_at)
        else "no fail possible"
    )
    return f"{passes}; {fails}"


def rank_claim(x, y, min_tau: float, min_items: int = MIN_ORDERED_ITEMS, reason: str = "") -> dict:
    """An ordering claim: Kendall's tau-b between ``x`` and ``y`` (finite pairs), tested against
    its null law over random orders with the ties kept (:func:`tau_null_law`).  It passes at
    ``tau >= pass_at``, the smallest attainable tau ``>= min_tau`` that a random order reaches at
    most :data:`FALSE_PASS_MAX` of the time, fails at ``tau <= fail_at``, the mirrored threshold
    on the wrong side (:func:`significant_levels`), and is inconclusive in between (a small or
    non-significant tau is no evidence either way).  With fewer than ``min_items`` ordered items
    and no ``reason`` the verdict is ``inconclusive``; so is it when ``y`` takes a single value
    (all tied: no order to test).  Returns ``measured``, ``verdict``, ``test``, ``detectable``
    (``pass_at``: the smallest tau that passes; NaN when none can), ``false_pass`` (the chance a
    random order passes, at most :data:`FALSE_PASS_MAX`) and ``n``."""
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
    pass_at, p_pass, fail_at, p_fail = significant_levels(levels, law["probs"], min_tau)
    lv = ", ".join(f"{v:.2g}" for v in levels[levels > 0][:12])
    tie_note = (
        f"; {ties} tie(s) in y, null law {law['method']} over random orders with the ties kept"
        if ties or int(ok.sum()) != n
        else ""
    )
    test = (
        f"Kendall tau-b over {n} ordered items, >= {min_tau:g} and significant at <= "
        f"{FALSE_PASS_MAX:g} under a random order (attainable positive tau: {lv}): "
        f"{level_words(pass_at, p_pass, fail_at, p_fail, min_tau)}; else inconclusive{tie_note}"
    )
    if n < min_items and not reason and np.isfinite(tau):
        verdict = "inconclusive"
        test += f"; fewer than {min_items} items: inconclusive"
    else:
        verdict = level_verdict(tau, pass_at, fail_at)
    if reason:
        test += f"; {n} items because {reason}"
    return dict(
        measured=tau, verdict=verdict, test=test, detectable=pass_at, n=n, false_pass=p_pass
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


def false_pass_z(k: float, dof: float | None = None) -> float:
    """The chance that a one-sided test at ``k`` standard errors passes when the effect is
    exactly at its null (zero effect, or the margin of an interval test): ``P(Z > k)`` for a
    normal statistic (``dof`` None), ``P(T > k)`` with ``dof`` degrees of freedom for a mean
    over few seeds (``n - 1`` for ``n`` seeds); NaN below one degree of freedom (no SE)."""
    from scipy import stats

    if dof is None:
        return float(stats.norm.sf(k))
    return float(stats.t.sf(k, dof)) if np.isfinite(dof) and dof >= 1 else float("nan")
