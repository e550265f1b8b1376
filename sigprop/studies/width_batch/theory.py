"""No per-setting theory for width_batch (Chen, Wang, Zhao, Papailiopoulos & Koutris 2018,
arXiv:1806.03791): the Thm. 3 bound depends on each net's widths and is computed with the runs
(:func:`sigprop.studies.width_batch.analysis.diversity_bound`)."""

from __future__ import annotations

import pandas as pd


def theory_table(study: str, p, settings: list[dict]) -> pd.DataFrame:
    """No per-setting theory: the Thm. 3 bound depends on each net's widths and is computed
    with the runs (:func:`diversity_bound`)."""
    return pd.DataFrame(columns=["study", "quantity", "value"])
