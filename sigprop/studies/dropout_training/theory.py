"""Theory of the trained dropout networks (Baldi & Sadowski 2014): the Eq. 87 curves of E alone
(Figs. 8.1-8.2, 9.3)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import ensembles as ens


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """Eq. 87 curves of E alone (Figs. 8.1-8.2, 9.3): ``bound2`` and ``bound3`` against
    ``x = E`` on ``theory.e_grid`` points of [0, 1], per setting."""
    e = np.linspace(0.0, 1.0, int(p.theory.e_grid))
    b = ens.eq87_bounds(e)
    rows = []
    for s in settings:
        for q in ("bound2", "bound3"):
            rows.append(pd.DataFrame({"study": study, **s, "quantity": q, "x": e, "value": b[q]}))
    return pd.concat(rows, ignore_index=True)
