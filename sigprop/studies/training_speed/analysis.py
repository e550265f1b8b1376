"""The panels of Huang et al. 2019 (arXiv:1912.09132) Fig. 6 (collapse set, comparison depth,
controls per keep rate) and theory look-ups, shared by the figure and the claims."""

from __future__ import annotations

import numpy as np
import pandas as pd


def theory_value(theory: pd.DataFrame, keep_rate: float, quantity: str) -> float:
    """A theory quantity at a keep rate (the study has one σ_w² per keep rate); NaN if absent."""
    t = theory[(theory.quantity == quantity) & np.isclose(theory.keep_rate, keep_rate)]
    return float(t.value.iloc[0]) if len(t) else float("nan")


def panels(c: pd.DataFrame, controls=(), compare_deepest: bool = True) -> list[dict]:
    """The figure's and claims' panels: per keep rate, the depths, the collapse set and the outlier.

    ρ = 1: every depth is in the collapse set (scaling ηL) except the
    ``controls`` (``analysis.control_depths``: dropout-free runs at the ρ < 1
    comparison depths, drawn but not part of the collapse test).  ρ < 1: the
    deepest depth is the comparison ("outlier") depth when there are at least
    three depths and ``compare_deepest`` (``analysis.compare_deepest``), the others
    form the collapse set (scaling η); without it every depth is in the collapse set
    and the panel has no comparison depth.
    """
    controls = {int(d) for d in controls}
    out = []
    for rho in sorted(c.keep_rate.unique(), reverse=True):
        depths = sorted(int(d) for d in c[c.keep_rate == rho].depth.unique())
        base = {"keep_rate": float(rho), "depths": depths, "by_depth": bool(rho >= 1.0)}
        if rho >= 1.0:
            out.append(
                {
                    **base,
                    "outlier": None,
                    "collapse": [d for d in depths if d not in controls],
                    "controls": [d for d in depths if d in controls],
                }
            )
        elif len(depths) < 3 or not compare_deepest:
            out.append({**base, "collapse": depths, "outlier": None, "controls": []})
        else:
            out.append({**base, "collapse": depths[:-1], "outlier": depths[-1], "controls": []})
    return out
