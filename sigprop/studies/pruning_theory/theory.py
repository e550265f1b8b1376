"""Theory of Hayou, Ton, Doucet & Teh 2021 (arXiv:2002.08797): ``chi_1``, ``kappa`` and Thm. 1's bound on
the critical sparsity of SBP per setting, and Prop. 4's bound for magnitude pruning per gamma
(:mod:`sigprop.theory.pruning`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import meanfield
from ...theory import pruning as tp


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """Per setting: ``chi1``, ``kappa`` and Thm. 1's bound at ``theory.depth``, ``theory.width``
    (``thm1_bound_ln``, ``thm1_bound_log10``; ``inf`` within ``theory.eoc_tolerance`` of
    chi = 1, where the theorem gives no bound); Prop. 4's bound per gamma (``x``):
    ``prop4_bound`` (printed, gamma Q_x) and ``prop4_bound_sqrt`` (sqrt(gamma) Q_x), with
    ``zeta_l0 = theory.zeta_l0`` (M_l0 = zeta_l0 N^2 weights in layer l0; the input layer of
    fan-in d has zeta_l0 = d / N)."""
    th = p.theory
    L, N = int(th.depth), int(th.width)
    eoc_tol = float(th.eoc_tolerance)
    rows = []
    for s in settings:
        act, sw, sb, rho = s["activation"], s["sigma_w2"], s["sigma_b2"], s["keep_rate"]
        base = {
            "study": study,
            "activation": act,
            "sigma_w2": sw,
            "sigma_b2": sb,
            "keep_rate": rho,
            "depth": L,
            "width": N,
            "x": np.nan,
        }
        vals = {
            "chi1": float(meanfield.chi1(sw, sb, 1.0, act)),
            "kappa": float(tp.sbp_kappa(sw, sb, act)),
            "thm1_bound_ln": float(tp.critical_sparsity_bound(L, N, sw, sb, act)),
            "thm1_bound_log10": float(tp.critical_sparsity_bound(L, N, sw, sb, act, log_base=10.0)),
        }
        if (
            abs(vals["chi1"] - 1.0) <= eoc_tol
        ):  # Thm. 1 holds off the EOC only (sigma_w2 on it is rounded)
            vals["thm1_bound_ln"] = vals["thm1_bound_log10"] = np.inf
        rows += [{**base, "quantity": k, "value": v} for k, v in vals.items()]
    g = np.asarray(th.gammas, float)
    base = {"study": study, "depth": L, "width": N}
    for q, fac in (("prop4_bound", "gamma"), ("prop4_bound_sqrt", "sqrt_gamma")):
        b = np.atleast_1d(
            tp.mbp_critical_sparsity_bound(g, N, float(th.zeta_l0), quantile_factor=fac)
        )
        rows += [
            {**base, "quantity": q, "x": float(gi), "value": float(bi)} for gi, bi in zip(g, b)
        ]
    return pd.DataFrame(rows)
