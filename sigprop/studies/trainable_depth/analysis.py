"""The theory curves of Huang et al. 2019 (arXiv:1912.09132) Table 1 as functions of (ρ, σ_w²),
shared by the claims (and the tests that build run tables with a known boundary)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def curve(theory: pd.DataFrame, quantity: str):
    """``f(keep_rate, sigma_w2) -> value`` interpolating the theory table in σ_w²."""
    t = theory[theory.quantity == quantity]
    tables = {k: (g.sigma_w2.to_numpy(), g.value.to_numpy()) for k, g in t.groupby("keep_rate")}

    def f(keep_rate, sigma_w2):
        keep_rate, sigma_w2 = np.broadcast_arrays(
            np.asarray(keep_rate, float), np.asarray(sigma_w2, float)
        )
        out = np.full(sigma_w2.shape, np.nan)
        for k, (x, y) in tables.items():
            sel = np.isclose(keep_rate, k)
            out[sel] = np.interp(sigma_w2[sel], x, y)
        return out

    return f
