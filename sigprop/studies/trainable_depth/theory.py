"""Theory of the trainable depth: Huang et al. 2019 (arXiv:1912.09132) depth scales ξ1 (Eqs.
10-11) and ξ2 (Eq. 6) and the bounds of Table 1 (12ξ1, 6ξ2, 12ξ2, min(12ξ1, 12ξ2)) on a fine
σ_w² grid, per keep rate of the runs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import meanfield

CURVES = {
    "12xi1": lambda t: 12 * t["xi1"],
    "6xi2": lambda t: 6 * t["xi2"],
    "12xi2": lambda t: 12 * t["xi2"],
    "min_12xi1_12xi2": lambda t: np.minimum(12 * t["xi1"], 12 * t["xi2"]),
}


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """Mean-field quantities on a fine σ_w² grid for every keep rate of the study."""
    keep_rates = [s["keep_rate"] for s in settings]
    act = p.theory.activation
    sb2 = float(p.theory.sigma_b2)
    lo, hi = p.theory.sigma_w2_range
    n = int(p.theory.points)
    sw2 = np.linspace(lo, hi, n)
    rows = []
    for rho in sorted(set(float(k) for k in keep_rates)):
        s = meanfield.fixed_point_summary(sw2, sb2, rho, act)
        quantities = {
            k: np.broadcast_to(np.asarray(s[k], dtype=float), sw2.shape)
            for k in ("q_star", "c_star", "chi1", "chi2", "xi1", "xi2")
        }
        quantities.update({name: f(quantities) for name, f in CURVES.items()})
        for q, v in quantities.items():
            rows.append(
                pd.DataFrame(
                    {
                        "keep_rate": rho,
                        "sigma_w2": sw2,
                        "sigma_b2": sb2,
                        "activation": act,
                        "quantity": q,
                        "value": v,
                    }
                )
            )
    df = pd.concat(rows, ignore_index=True)
    df.insert(0, "study", study)
    return df
