"""Simulation against theory per probe (Huang et al. 2019, arXiv:1912.09132, Eqs. 2-4), shared
by the figure and the claims."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import meanfield


def summary(runs: pd.DataFrame, theory: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Per (setting, probe): simulated mean ± SE of the map, the theory at the probe, z."""
    key = ["activation", "sigma_w2", "sigma_b2", "keep_rate", "probe"]
    x = runs[runs.metric == f"{kind}map_in"].set_index(["run_id", "probe"]).value
    y = runs[runs.metric == f"{kind}map_out"].set_index(["run_id", "probe"])
    d = y.assign(x=x).reset_index()
    g = d.groupby(key)
    out = g.agg(
        x=("x", "first"), mean=("value", "mean"), sd=("value", "std"), n=("value", "size")
    ).reset_index()
    out["se"] = out.sd / np.sqrt(out.n)
    if kind == "c":  # the length each setting's correlation map was probed at
        qc = runs[runs.metric == "cmap_q"].groupby(key[:-1]).value.first().rename("q_probe")
        out = out.join(qc, on=key[:-1])
    th = []
    for r in out.itertuples():
        if kind == "q":
            th.append(
                float(meanfield.q_map(r.x, r.sigma_w2, r.sigma_b2, r.keep_rate, r.activation))
            )
        else:
            th.append(
                float(
                    meanfield.c_map(
                        r.x, r.q_probe, r.sigma_w2, r.sigma_b2, r.keep_rate, r.activation
                    )
                )
            )
    out["theory"] = th
    with np.errstate(divide="ignore", invalid="ignore"):
        out["z"] = np.where(
            out.se > 0,
            (out["mean"] - out.theory) / out.se,
            np.where(np.isclose(out["mean"], out.theory, rtol=1e-9, atol=1e-12), 0.0, np.inf),
        )
    return out
