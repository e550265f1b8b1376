"""Groups of networks and variance-mean fits of the gradient metrics (Huang et al. 2019,
arXiv:1912.09132, §4.2, Figs. 4-5), shared by the figures and the claims."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...measure.gradient_runs import matrix
from ...runs import SETTING_FIELDS

METRICS = {"g_aa": "g_aa", "g_ab": "g_ab", "g_ab_abs": "g~_ab"}
SETTING = list(SETTING_FIELDS)
GROUP = SETTING + ["width", "depth"]
ACTIVATION_ORDER = ("linear", "relu", "tanh", "hard_tanh")  # 000 Fig. 4


def groups_of(runs: pd.DataFrame) -> list[dict]:
    """Distinct (activation, sigma_w2, sigma_b2, keep_rate, width, depth) of the runs, sorted."""
    u = runs[GROUP].drop_duplicates().sort_values(GROUP)
    return [dict(zip(GROUP, t)) for t in u.itertuples(index=False)]


def fig4_groups(runs: pd.DataFrame) -> list[dict]:
    """000 Fig. 4: the groups at the width holding the most activation/keep-rate settings
    (the largest such width on a tie), in the paper's order of activations, keep rates descending."""
    gs = groups_of(runs)
    if not gs:
        return []
    count = pd.Series([g["width"] for g in gs]).value_counts()
    w = max(count.index[count == count.max()])
    order = {a: i for i, a in enumerate(ACTIVATION_ORDER)}
    return sorted(
        [g for g in gs if g["width"] == w],
        key=lambda g: (order.get(g["activation"], len(order)), g["activation"], -g["keep_rate"]),
    )


def fig5_groups(runs: pd.DataFrame, p) -> list[dict]:
    """000 Fig. 5: the groups of the ``analysis.widths`` setting (tanh, ρ = 0.9), one per width."""
    sel = {k: v for k, v in dataclasses.asdict(p.analysis.widths).items() if v is not None}
    out = []
    for g in groups_of(runs):
        if all((g[k] == v) if isinstance(v, str) else np.isclose(g[k], v) for k, v in sel.items()):
            out.append(g)
    return sorted(out, key=lambda g: (g["width"], g["depth"]))


def mean_var(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-layer mean ``m^l`` and unbiased variance ``V^l`` over the instantiations (rows)."""
    return v.mean(0), v.var(0, ddof=1)


def fit_power(m: np.ndarray, V: np.ndarray, min_points: int = 3) -> tuple[float, float, int]:
    """Least-squares line ``log V = log a + p log m`` over the points with ``m > 0`` and
    ``V > 0``: ``(p, a, n_points)``; NaNs when fewer than ``min_points`` remain or all
    ``m`` are equal."""
    m, V = np.asarray(m, float), np.asarray(V, float)
    ok = np.isfinite(m) & np.isfinite(V) & (m > 0) & (V > 0)
    n = int(ok.sum())
    if n < max(min_points, 2):
        return np.nan, np.nan, n
    x, y = np.log(m[ok]), np.log(V[ok])
    if np.ptp(x) == 0:
        return np.nan, np.nan, n
    p, c = np.polyfit(x, y, 1)
    return float(p), float(np.exp(c)), n


def _pooled_mean_var(vs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    mv = [mean_var(v) for v in vs]
    return np.concatenate([m for m, _ in mv]), np.concatenate([V for _, V in mv])


def _fitted(m: np.ndarray, V: np.ndarray) -> np.ndarray:
    """The points :func:`fit_power` uses: finite, ``m > 0`` and ``V > 0``."""
    return np.isfinite(m) & np.isfinite(V) & (m > 0) & (V > 0)


def span_decades(m: np.ndarray, V: np.ndarray) -> float:
    """Decades of ``m`` the fitted points cover: ``log10(max m / min m)`` over the points
    :func:`fit_power` uses (NaN with fewer than 2)."""
    m, V = np.asarray(m, float), np.asarray(V, float)
    ok = _fitted(m, V)
    return float(np.log10(m[ok].max() / m[ok].min())) if ok.sum() >= 2 else np.nan


def drift_decades(m: np.ndarray, V: np.ndarray, layers=None) -> float:
    """Decades by which ``V/m^2`` drifts across one group's fitted layers: the least-squares
    line of ``log10(V^l / (m^l)^2)`` on the layer ``l`` (over the points :func:`fit_power`
    uses), its value at the fitted layer farthest from the output (smallest ``l``) minus its
    value at the one nearest to it (largest ``l``).  Positive: the relative variance grows with
    the distance from the output.  A line, not the two end layers, because a single layer's
    variance over a few dozen heavy-tailed instantiations is noisy.

    Why it matters: ``p - 2`` is exactly the least-squares slope of ``log(V/m^2)`` on
    ``log m`` (``log V = log a + p log m``), so where ``log m`` is linear in ``l``
    (``m ∝ chi_1^(L-l)``) ``|p - 2| = |drift| / span`` (:func:`span_decades`): the same drift of
    ``V/m^2`` moves the power less the more decades ``m`` spans.  ``layers``: the column
    layers (default ``1 .. n``)."""
    m, V = np.asarray(m, float), np.asarray(V, float)
    x = np.arange(1, len(m) + 1, dtype=float) if layers is None else np.asarray(layers, float)
    ok = _fitted(m, V)
    if ok.sum() < 2 or np.ptp(x[ok]) == 0:
        return np.nan
    r = np.log10(V[ok]) - 2 * np.log10(m[ok])
    slope = np.polyfit(x[ok], r, 1)[0]
    return float(slope * (x[ok].min() - x[ok].max()))


def _span_drift(vs: list[np.ndarray], layers: list | None) -> tuple[float, float]:
    """Span of the pooled points, and the median over the groups of each group's drift (the
    drift of one group when there is one)."""
    mv = [mean_var(v) for v in vs]
    m = np.concatenate([a for a, _ in mv])
    V = np.concatenate([b for _, b in mv])
    ls = layers if layers is not None else [None] * len(vs)
    drifts = [drift_decades(a, b, lay) for (a, b), lay in zip(mv, ls)]
    drifts = [d for d in drifts if np.isfinite(d)]
    return span_decades(m, V), (float(np.median(drifts)) if drifts else np.nan)


def power_and_se(
    vs: list[np.ndarray],
    n_boot: int = 200,
    min_points: int = 3,
    seed: int = 0,
    layers: list | None = None,
) -> dict:
    """Fitted power of ``V^l ∝ (m^l)^p`` over the layers of one or more groups, each
    ``[instantiations, layers]`` (000 §4.2); SE of ``p`` by bootstrap over the
    instantiations (each group's rows resampled with replacement).  Diagnostics:
    decades spanned by ``m`` (all points) and ``V/m^2`` at the first and last layer (first
    group); ``span_decades`` (:func:`span_decades` of the fitted points) and ``drift_decades``
    (:func:`drift_decades`; over several groups the median of the groups' drifts), with
    bootstrap SEs from the same resamples; ``layers``: each group's column layers."""
    m, V = _pooled_mean_var(vs)
    p, a, n = fit_power(m, V, min_points)
    span, drift = _span_drift(vs, layers)
    rng = np.random.default_rng(seed)
    boot = []
    if min(len(v) for v in vs) > 2:
        for _ in range(n_boot):
            rs = [v[rng.integers(0, len(v), len(v))] for v in vs]
            boot.append((fit_power(*_pooled_mean_var(rs), min_points)[0], *_span_drift(rs, layers)))
    boot = np.asarray(boot, float).reshape(-1, 3)

    def sd(col):
        b = boot[:, col]
        return float(np.nanstd(b, ddof=1)) if np.isfinite(b).sum() > 1 else np.nan

    m0, V0 = mean_var(vs[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        r = V0 / m0**2
    pos = m[m > 0]
    decades = float(np.log10(pos.max() / pos.min())) if len(pos) else np.nan
    return {
        "p": p,
        "a": a,
        "n_layers": n,
        "se": sd(0),
        "n_inst": min(len(v) for v in vs),
        "rel_var_first": float(r[0]),
        "rel_var_last": float(r[-1]),
        "m_decades": decades,
        "span_decades": span,
        "span_se": sd(1),
        "drift_decades": drift,
        "drift_se": sd(2),
    }


def group_fits(
    runs: pd.DataFrame, groups: list[dict], n_boot: int = 200, min_layers: int = 3
) -> pd.DataFrame:
    """One row per group and metric: fitted power, SE, prefactor and diagnostics."""
    rows = []
    for g in groups:
        for metric in METRICS:
            v, layers = matrix(runs, g, metric)
            f = power_and_se([v], int(n_boot), int(min_layers), layers=[layers])
            rows.append({**g, "metric": metric, **f})
    return pd.DataFrame(rows)


def pooled_fits(
    runs: pd.DataFrame, groups: list[dict], n_boot: int = 200, min_layers: int = 3
) -> pd.DataFrame:
    """One row per metric: the power fitted to the points of all groups together (the
    collapse of 000 Figs. 4-5 read as one line)."""
    rows = []
    for metric in METRICS:
        vl = [matrix(runs, g, metric) for g in groups]
        f = power_and_se(
            [v for v, _ in vl], int(n_boot), int(min_layers), layers=[lay for _, lay in vl]
        )
        rows.append({"metric": metric, "n_groups": len(groups), **f})
    return pd.DataFrame(rows)


def expected_power(theory: pd.DataFrame) -> float:
    """The conjectured power of ``V ∝ m^p`` from the theory table (000 §4.2: 2)."""
    t = theory[theory.quantity == "variance_mean_power"]
    return float(t.value.iloc[0]) if len(t) else 2.0
