"""Per-layer profiles, theory lookups and decay rates of the gradient metrics (Huang et al.
2019, arXiv:1912.09132, Eqs. 8, 12-13), shared by the figures and the claims."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...measure.gradient_runs import matrix, select
from ...runs import SETTING_FIELDS

SETTING = list(SETTING_FIELDS)


def settings_of(runs: pd.DataFrame) -> list[dict]:
    keys = SETTING + ["depth"]
    return [
        dict(zip(keys, t)) for t in sorted(set(map(tuple, runs[keys].drop_duplicates().to_numpy())))
    ]


def profile(runs: pd.DataFrame, s: dict, metric: str) -> pd.DataFrame:
    """Per layer: mean, SE, n over instantiations, and the SE of the log of the mean."""
    v, layers = matrix(runs, s, metric)
    n = v.shape[0]
    mean = v.mean(0)
    se = v.std(0, ddof=1) / np.sqrt(n) if n > 1 else np.full_like(mean, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return pd.DataFrame({"layer": layers, "mean": mean, "se": se, "n": n, "se_log": se / mean})


def theory_value(theory: pd.DataFrame, s: dict, quantity: str) -> float:
    t = select(theory[theory.quantity == quantity], {k: s[k] for k in SETTING})
    return float(t.value.iloc[0]) if len(t) else np.nan


def theory_curve(theory: pd.DataFrame, s: dict, quantity: str, layers: np.ndarray) -> np.ndarray:
    """Eq. 12 at layers ``l`` of a depth-``s['depth']`` net (the table is indexed by L - l)."""
    t = select(theory[theory.quantity == quantity], {k: s[k] for k in SETTING}).set_index("x").value
    k = (int(s["depth"]) - np.asarray(layers)).astype(float)
    return t.reindex(k).to_numpy(float)
