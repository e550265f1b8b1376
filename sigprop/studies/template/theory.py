"""The iterated length map (Huang et al. 2019, arXiv:1912.09132, Eq. 2 at keep rate 1)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import meanfield


def length_by_layer(
    q0: float, sigma_w2: float, sigma_b2: float, activation: str, depth: int
) -> np.ndarray:
    """q^1..q^depth: the input layer is affine (q^1 = sigma_w^2 q^0 + sigma_b^2), every later
    layer applies Eq. 2's map to the previous length."""
    q = [sigma_w2 * q0 + sigma_b2]
    for _ in range(depth - 1):
        q.append(float(meanfield.q_map(q[-1], sigma_w2, sigma_b2, 1.0, activation)))
    return np.asarray(q)


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """``quantity = "q"`` at ``layer`` 1..depth_max, per setting."""
    rows = []
    layers = np.arange(1, p.theory.depth_max + 1)
    for s in settings:
        q = length_by_layer(
            p.measure.q0, s["sigma_w2"], s["sigma_b2"], s["activation"], p.theory.depth_max
        )
        rows.append(
            pd.DataFrame({"study": study, **s, "quantity": "q", "layer": layers, "value": q})
        )
    return pd.concat(rows, ignore_index=True)
