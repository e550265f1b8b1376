"""003 Table 7 (Hayou, Ton, Doucet & Teh 2021, "Robust Pruning at Initialization",
arXiv:2002.08797, App. E), rebuilt from the claims of the 003 studies (claims
``table7_empirical[gamma=...]`` and ``prop4_bound_holds[...]``, made by ``pruning_theory``).

Table 7 of 003 lists, for magnitude pruning of an FFNN (L = N = 100) whose layer l0 has
alpha = gamma, Prop. 4's upper bound on the critical sparsity and the empirical E[s_cr] over 10
simulations.  Here each gamma's row holds the paper's two numbers, our measured E[s_cr] (mean and
SE over seeds), Prop. 4's bound as printed (gamma Q_x) and with sqrt(gamma) computed by
:mod:`sigprop.theory.pruning`, and the verdicts of the claims that compare them.
"""

from __future__ import annotations

import pandas as pd

from ..tables import rebuild_hint
from . import values

COLUMNS = [
    "gamma",
    "paper_bound",
    "paper_empirical",
    "s_cr_mean",
    "s_cr_se",
    "seeds",
    "bound_printed",
    "bound_sqrt_gamma",
    "verdict_empirical",
    "verdict_printed_bound",
    "verdict_sqrt_gamma_bound",
]


def table7(claims: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``{"table7": one row per gamma}`` (empty when ``pruning_theory`` did not run)."""
    ids = claims.claim_id.astype(str)
    verdict = dict(zip(ids, claims.verdict))
    rows = []
    for _, c in claims[ids.str.startswith("table7_empirical[")].iterrows():
        v = values(c)
        if "gamma" not in v:
            raise ValueError(
                f"claim {c.study}:{c.claim_id} has no named values (a claims table from an "
                f"older sigprop): "
                f"{rebuild_hint(f'results/{c.study}/claims.parquet')}"
            )
        g = f"{v['gamma']:g}"
        rows.append(
            {
                "gamma": v["gamma"],
                "paper_bound": v["paper_bound"],
                "paper_empirical": v["paper_empirical"],
                "s_cr_mean": float(c.measured),
                "s_cr_se": v["se"],
                "seeds": v["seeds"],
                "bound_printed": v["bound_printed"],
                "bound_sqrt_gamma": v["bound_sqrt_gamma"],
                "verdict_empirical": c.verdict,
                "verdict_printed_bound": verdict.get(f"prop4_bound_holds[printed, gamma={g}]", ""),
                "verdict_sqrt_gamma_bound": verdict.get(
                    f"prop4_bound_holds[sqrt_gamma, gamma={g}]", ""
                ),
            }
        )
    return {"table7": pd.DataFrame(rows, columns=COLUMNS).sort_values("gamma", ignore_index=True)}
