"""Theory of the dropout ensembles (Baldi & Sadowski 2014): the Eq. 87 curves (Figs. 8.1-8.2)
and their maximisers, and per sampling distribution its population moments and Eq. 104."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import ensembles
from . import monte_carlo as mc


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """Eq. 87 curves ``bound2`` (Fig. 8.1) and ``bound3`` (Fig. 8.2) against ``x = E``; their
    maximisers on [0, 0.5] (text after Eq. 87); per sampling distribution (``distribution``
    = block label) the population moments and Eq. 104 (:func:`ensembles_mc.population_moments`)."""
    E = np.linspace(0.0, 1.0, int(p.theory.points))
    b = ensembles.eq87_bounds(E)
    # curves and maximisers have no distribution: NaN, as a missing string reads back from Parquet
    rows = [
        pd.DataFrame({"study": study, "quantity": q, "x": E, "value": b[q], "distribution": np.nan})
        for q in ("bound2", "bound3")
    ]
    am = ensembles.eq87_argmax()
    rows.append(
        pd.DataFrame(
            [
                {
                    "study": study,
                    "quantity": f"argmax_{q}",
                    "x": np.nan,
                    "value": float(v),
                    "distribution": np.nan,
                }
                for q, v in am.items()
            ]
        )
    )
    sims = [s for s in p.measure.simulations if s.part == "sampling"]
    for s in sims:
        pm = mc.population_moments(s.spec())
        rows.append(
            pd.DataFrame(
                [
                    {
                        "study": study,
                        "quantity": q,
                        "x": np.nan,
                        "value": v,
                        "distribution": s.label,
                    }
                    for q, v in pm.items()
                ]
            )
        )
    return pd.concat(rows, ignore_index=True)
