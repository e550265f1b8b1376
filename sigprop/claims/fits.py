"""Fits shared by the studies' claims: a geometric decay over a window of layers with a
bootstrap standard error (Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132, Eqs. 11-12: the
gradient metrics decay by chi_1 per layer from the output; tests/test_claims_fits.py checks the
fit and its SE against simulated decays)."""

from __future__ import annotations

import numpy as np


def decay_rate(
    v: np.ndarray, layers: np.ndarray, use: np.ndarray, n_boot: int = 200, seed: int = 0
) -> tuple[float, float]:
    """Per-layer decay factor ``r`` (``mean v^l ∝ r^(L-l)``) of the rows of ``v`` (one per
    instantiation, one column per layer of ``layers``) by a least-squares line through
    ``log mean`` over the layers ``use``; its SE by bootstrap over the instantiations
    (``n_boot`` resamples, NaN with one instantiation).  NaN when a mean is not positive."""
    x = layers[use].astype(float)

    def rate(rows):
        m = rows[:, use].mean(0)
        if np.any(m <= 0):
            return np.nan
        return float(np.exp(-np.polyfit(x, np.log(m), 1)[0]))

    r = rate(v)
    rng = np.random.default_rng(seed)
    boot = [rate(v[rng.integers(0, len(v), len(v))]) for _ in range(n_boot)] if len(v) > 1 else []
    se = float(np.nanstd(boot, ddof=1)) if len(boot) > 1 else np.nan
    return r, se


def fit_window(
    layers: np.ndarray, depth: int, min_from_output: int, min_layer: int = 1
) -> np.ndarray:
    """The layers a decay is fitted over: at least ``min_from_output`` below the output
    (``depth - l``) and at least ``min_layer``."""
    return (depth - layers >= min_from_output) & (layers >= min_layer)
