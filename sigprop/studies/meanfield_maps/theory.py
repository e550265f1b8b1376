"""Theory of the maps: Huang et al. 2019 (arXiv:1912.09132) Eq. 2 (length map) and Eqs. 3-4
(correlation map at q*), with the fixed points q*, c*, per setting of the runs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import meanfield


def c_probe_q(setting: dict, q_cap: float) -> float:
    """Length at which the correlation map is probed: q* of the setting, or, where q* is
    infinite (e.g. ReLU above its edge of chaos, Fig. 1c at rho = 0.4), ``q_cap`` standing for
    the scale-free limit (``measure.q_cap``)."""
    q = float(
        meanfield.q_star(
            setting["sigma_w2"], setting["sigma_b2"], setting["keep_rate"], setting["activation"]
        )
    )
    return q if np.isfinite(q) else float(q_cap)


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """q-map and c-map curves (c-map at q*) and the fixed points, per setting."""
    n = p.theory.points
    rows = []
    for s in settings:
        act, sw, sb, rho = s["activation"], s["sigma_w2"], s["sigma_b2"], s["keep_rate"]
        q_star = float(meanfield.q_star(sw, sb, rho, act))
        c_star = float(meanfield.c_star(sw, sb, rho, act))
        q_c = c_probe_q(s, p.measure.q_cap)
        q_hi = float(p.theory.q_max if p.theory.q_max is not None else 2.5 * q_star)
        qs = np.linspace(0.0, q_hi, n)
        cs = np.linspace(0.0, 1.0, n)
        base = dict(study=study, activation=act, sigma_w2=sw, sigma_b2=sb, keep_rate=rho)
        rows.append(
            pd.DataFrame(
                {
                    **base,
                    "quantity": "q_map",
                    "x": qs,
                    "value": meanfield.q_map(qs, sw, sb, rho, act),
                }
            )
        )
        rows.append(
            pd.DataFrame(
                {
                    **base,
                    "quantity": "c_map",
                    "x": cs,
                    "value": meanfield.c_map(cs, q_c, sw, sb, rho, act),
                }
            )
        )
        rows.append(
            pd.DataFrame(
                [
                    {**base, "quantity": "q_star", "x": np.nan, "value": q_star},
                    {**base, "quantity": "c_star", "x": np.nan, "value": c_star},
                ]
            )
        )
    return pd.concat(rows, ignore_index=True)
