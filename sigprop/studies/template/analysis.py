"""Measured q^l against theory, per setting and layer (shared by the figure and the claim)."""

from __future__ import annotations

import numpy as np
import pandas as pd

SETTING = ["activation", "sigma_w2", "sigma_b2", "keep_rate"]


def summary(runs: pd.DataFrame, theory: pd.DataFrame) -> pd.DataFrame:
    """Per (setting, layer): mean, standard error and count over networks, theory, z."""
    q = runs[runs.metric == "q"]
    out = q.groupby(SETTING + ["layer"]).value.agg(["mean", "std", "size"]).reset_index()
    out["se"] = out["std"] / np.sqrt(out["size"])
    th = theory[theory.quantity == "q"][SETTING + ["layer", "value"]]
    out = out.merge(th.rename(columns={"value": "theory"}), on=SETTING + ["layer"], how="left")
    out["z"] = (out["mean"] - out.theory) / out.se
    return out
