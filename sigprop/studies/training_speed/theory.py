"""Theory of the training-speed study: Huang et al. 2019 (arXiv:1912.09132) mean-field fixed
point on the critical line χ1 = 1 (Eq. 10) and the depth scale ξ2 (Eq. 6) per setting."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import meanfield

SETTING = ["activation", "sigma_w2", "sigma_b2", "keep_rate"]


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """Per setting (the runs' activation, σ_w², σ_b², ρ): ``sigma_w2_chi1`` (σ_w² re-solved on
    χ1 = 1), ``q_star``, ``c_star``, ``chi1``, ``chi2``, ``xi2``, ``6xi2``, ``12xi2``.

    ξ2 is +inf where χ2 = 1 to within 1e-9 (ρ = 1, where the quadrature gives
    1 − 1e-16 and 1/|ln χ2| would read ~1e16).  The study has no theory parameters.
    """
    rows = []
    for s in settings:
        act, sw, sb, rho = (
            s["activation"],
            float(s["sigma_w2"]),
            float(s["sigma_b2"]),
            float(s["keep_rate"]),
        )
        f = meanfield.fixed_point_summary(sw, sb, rho, act)
        chi2 = float(f["chi2"])
        xi2 = np.inf if abs(chi2 - 1.0) < 1e-9 else float(f["xi2"])
        vals = {
            "sigma_w2_chi1": float(meanfield.sigma_w2_for_chi1(1.0, sb, rho, act)),
            "q_star": float(f["q_star"]),
            "c_star": float(f["c_star"]),
            "chi1": float(f["chi1"]),
            "chi2": chi2,
            "xi2": xi2,
            "6xi2": 6 * xi2,
            "12xi2": 12 * xi2,
        }
        base = {"study": study, "activation": act, "sigma_w2": sw, "sigma_b2": sb, "keep_rate": rho}
        rows += [{**base, "quantity": k, "value": v} for k, v in vals.items()]
    cols = ["study", "quantity", "value"] + SETTING
    return pd.DataFrame(rows, columns=cols)
