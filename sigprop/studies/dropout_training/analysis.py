"""Tables and statistics of the trained dropout networks (Baldi & Sadowski 2014, §§9.5-9.6,
11.7), shared by the figures and the claims: per (unit, input) and per pair at a step, per-layer
trajectories, and small statistics on arrays."""

from __future__ import annotations

import numpy as np
import pandas as pd


def final_step(runs: pd.DataFrame) -> int:
    return int(runs["steps"].max())


def unit_table(runs: pd.DataFrame, step: int) -> pd.DataFrame:
    """One row per (run, layer, probe = input x unit) at ``step`` with the per-unit metrics as
    columns, plus the derived ``EO2 = V + E^2``, ``d_nwgm = NWGM - E``, ``d_w = W - E``."""
    from .learning import UNIT_METRICS

    d = runs[(runs.step == step) & runs.metric.isin(UNIT_METRICS)]
    w = d.pivot_table(
        index=["run_id", "layer", "probe"], columns="metric", values="value", aggfunc="first"
    ).reset_index()
    w.columns.name = None
    if len(w):
        w["EO2"] = w.V + w.E**2
        w["d_nwgm"] = w.NWGM - w.E
        w["d_w"] = w.W - w.E
    return w


def pair_table(runs: pd.DataFrame, step: int, kind: str) -> pd.DataFrame:
    """Pairs of kind ``u`` (unconnected) or ``c`` (connected) at ``step``: columns ``EOO, WW``
    (and ``WijW``) per (run, layer, probe)."""
    d = runs[(runs.step == step) & runs.metric.str.startswith(f"p{kind}_")]
    w = d.pivot_table(
        index=["run_id", "layer", "probe"], columns="metric", values="value", aggfunc="first"
    ).reset_index()
    w.columns = [c.split("_", 1)[1] if str(c).startswith(f"p{kind}_") else c for c in w.columns]
    return w


def layer_series(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``[steps, layers]`` mean over runs of a per-layer trajectory metric."""
    d = runs[runs.metric == metric]
    return d.pivot_table(index="step", columns="layer", values="value", aggfunc="mean").sort_index()


def scalar(runs: pd.DataFrame, metric: str, step: int | None = None) -> float:
    d = runs[(runs.metric == metric) & ((runs.step == step) if step is not None else True)]
    return float(d.value.mean()) if len(d) else np.nan


# ------------------------------------------------------------------ statistics (arrays in, numbers out)


def within(d: np.ndarray, bound: np.ndarray, se: np.ndarray, z: float) -> np.ndarray:
    """``|d| <= bound + z se``: a Monte Carlo estimate ``d`` lies within ``bound`` up to noise."""
    return np.abs(d) <= bound + z * se


def rms(x) -> float:
    x = np.asarray(x, float)
    return float(np.sqrt(np.mean(x * x))) if x.size else np.nan


def skew_kurtosis(x) -> tuple[float, float]:
    """Sample skewness and excess kurtosis (moment estimators)."""
    x = np.asarray(x, float)
    c = x - x.mean()
    s2 = np.mean(c * c)
    if x.size < 3 or s2 <= 0:
        return np.nan, np.nan
    return float(np.mean(c**3) / s2**1.5), float(np.mean(c**4) / s2**2 - 3.0)


def median_abs_log_ratio(measured, approx) -> float:
    m, a = np.abs(np.asarray(measured, float)), np.abs(np.asarray(approx, float))
    ok = (m > 0) & (a > 0)
    return float(np.median(np.abs(np.log(m[ok] / a[ok])))) if ok.any() else np.nan


def settle_change(series: pd.Series, window: float) -> float:
    """Relative change of a trajectory over its last ``window`` fraction of training:
    ``|v(T) - v(T - window T)| / v(T)`` (nearest snapshot at or before ``T - window T``)."""
    s = series.dropna().sort_index()
    T = s.index.max()
    back = s[s.index <= T - window * T]
    if not len(back) or s.iloc[-1] == 0:
        return np.nan
    return float(abs(s.iloc[-1] - back.iloc[-1]) / abs(s.iloc[-1]))


def active_mean(runs: pd.DataFrame, metric: str) -> pd.Series:
    """Mean over layers (weighted by the active counts) of a per-layer active-unit trajectory."""
    v, n = layer_series(runs, metric), layer_series(runs, "n_active")
    n = n.reindex(index=v.index, columns=v.columns).fillna(0)
    return (v.fillna(0) * n).sum(axis=1) / n.sum(axis=1)
