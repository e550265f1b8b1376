"""Theory of Hayou et al. 2021 (arXiv:2002.08797) Sec. 4.1: the phase of each setting's
initialization, ``chi_1`` (003's ``chi = f'(1)`` at keep rate 1), and ``q*``."""

from __future__ import annotations

import pandas as pd

from ...theory import meanfield


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """Per setting: ``chi_1`` (= 003's ``chi = f'(1)`` at keep rate 1) and ``q*``."""
    rows = []
    for s in settings:
        act, sw, sb, rho = s["activation"], s["sigma_w2"], s["sigma_b2"], s["keep_rate"]
        base = {"study": study, "activation": act, "sigma_w2": sw, "sigma_b2": sb, "keep_rate": rho}
        rows.append({**base, "quantity": "chi1", "value": float(meanfield.chi1(sw, sb, rho, act))})
        rows.append(
            {**base, "quantity": "q_star", "value": float(meanfield.q_star(sw, sb, rho, act))}
        )
    return pd.DataFrame(rows)
