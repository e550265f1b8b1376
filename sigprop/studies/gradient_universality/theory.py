"""Theory of the variance-mean law (Huang et al. 2019, arXiv:1912.09132, §4.2): the conjectured
power, and per setting the fixed points and the slopes chi_1 (Eq. 10) and chi_2."""

from __future__ import annotations

import pandas as pd

from ...runs import SETTING_FIELDS
from ...theory import meanfield

SETTING = list(SETTING_FIELDS)


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """The conjectured power ``p = 2`` of ``V ∝ m^p`` (000 §4.2; no setting), and per setting
    q*, c*, chi_1 (000 Eq. 10) and chi_2 from :mod:`sigprop.theory.meanfield` (the per-layer
    growth factors of the mean metrics, 000 Eqs. 9 and 13)."""
    power = float(p.theory.power)
    rows = [{"study": study, "quantity": "variance_mean_power", "value": power}]
    for s in settings:
        act, sw, sb, rho = s["activation"], s["sigma_w2"], s["sigma_b2"], s["keep_rate"]
        base = {"study": study, "activation": act, "sigma_w2": sw, "sigma_b2": sb, "keep_rate": rho}
        for q, f in (
            ("q_star", meanfield.q_star),
            ("c_star", meanfield.c_star),
            ("chi1", meanfield.chi1),
            ("chi2", meanfield.chi2),
        ):
            rows.append({**base, "quantity": q, "value": float(f(sw, sb, rho, act))})
    return pd.DataFrame(rows, columns=["study", "quantity", "value", *SETTING])
