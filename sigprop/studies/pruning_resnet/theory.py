"""Theory of Hayou et al. 2021 (arXiv:2002.08797) Eq. 9: the Stable ResNet's branch scale."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .analysis import N_BLOCKS


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """The Stable ResNet branch scale ``1/sqrt(L)`` of 003 Eq. 9 per ResNet depth (L = blocks)."""
    rows = []
    for net, L in N_BLOCKS.items():
        rows.append({"study": study, "quantity": f"n_blocks[{net}]", "value": float(L)})
        rows.append({"study": study, "quantity": f"branch_scale[{net}]", "value": 1 / np.sqrt(L)})
    return pd.DataFrame(rows)
