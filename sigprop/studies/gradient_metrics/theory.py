"""Theory of the gradient metrics: Huang et al. 2019 (arXiv:1912.09132) Eq. 12 (linear nets),
the fixed points and the slopes chi_1 (Eq. 10) and chi_2, per setting of the runs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import gradients as tg
from ...theory import meanfield


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """Per setting: q*, c*, chi_1, chi_2 (``x`` NaN); for linear nets Eq. 12 ``g_aa``, ``g_ab``
    against ``x = L - l`` (layers from the output, 0..``layers_from_output``), which is all
    Eq. 12 depends on, so one table serves every depth."""
    kmax = int(p.theory.layers_from_output)
    rows = []
    for s in settings:
        act, sw, sb, rho = s["activation"], s["sigma_w2"], s["sigma_b2"], s["keep_rate"]
        q = float(meanfield.q_star(sw, sb, rho, act))
        base = {"study": study, "activation": act, "sigma_w2": sw, "sigma_b2": sb, "keep_rate": rho}
        scal = {
            "q_star": q,
            "c_star": float(meanfield.c_star(sw, sb, rho, act)),
            "chi1": float(meanfield.chi1(sw, sb, rho, act)),
            "chi2": float(meanfield.chi2(sw, sb, rho, act)),
        }
        rows.append(
            pd.DataFrame(
                [{**base, "quantity": k, "x": np.nan, "value": v} for k, v in scal.items()]
            )
        )
        if act == "linear" and np.isfinite(q) and sw < 1.0:
            k = np.arange(kmax + 1)
            rows.append(
                pd.DataFrame(
                    {
                        **base,
                        "quantity": "g_aa_eq12",
                        "x": k,
                        "value": tg.g_aa(kmax - k, kmax, sw, sb, rho),
                    }
                )
            )
            rows.append(
                pd.DataFrame(
                    {
                        **base,
                        "quantity": "g_ab_eq12",
                        "x": k,
                        "value": tg.g_ab(kmax - k, kmax, sw, sb, rho),
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)
