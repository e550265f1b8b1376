"""The per-layer gradient metrics of 000 Eq. (8) (Huang, Xu, Du, Zeng, Zhao 2019,
arXiv:1912.09132) read back from a study's run table: one setting's values as an
``[instantiations, layers]`` matrix.  Pandas only (no torch), for figures and claims; the
measurement itself is :mod:`sigprop.measure.gradients`."""

from __future__ import annotations

import numpy as np
import pandas as pd


def select(runs: pd.DataFrame, s: dict) -> pd.DataFrame:
    """The rows of ``runs`` whose columns equal the setting ``s`` (strings exactly, numbers by
    :func:`numpy.isclose`)."""
    m = np.ones(len(runs), bool)
    for k, v in s.items():
        m &= (runs[k] == v).to_numpy() if isinstance(v, str) else np.isclose(runs[k], v)
    return runs[m]


def matrix(runs: pd.DataFrame, s: dict, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """``[instantiations, layers]`` values of ``metric`` for setting ``s`` and the layers."""
    d = select(runs[runs.metric == metric], s)
    p = d.pivot_table(index="run_id", columns="layer", values="value", aggfunc="first").sort_index(
        axis=1
    )
    return p.to_numpy(float), p.columns.to_numpy(int)
