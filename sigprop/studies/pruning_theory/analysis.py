"""Summaries of the run table of Hayou et al. 2021 (arXiv:2002.08797) Fig. 1, Thm. 1 and
Prop. 4 / Table 7, shared by the figures and the claims: per-run values with their setting's
chi_1 and bounds, fully pruned layers per run, and s_cr per setting and per gamma."""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import TABLE7

SETTING = ["activation", "sigma_w2", "sigma_b2", "keep_rate"]


def per_run(runs: pd.DataFrame, metric: str, probe: float | None = None) -> pd.DataFrame:
    """One row per run of a scalar ``metric`` (``value``) with its setting, pruner, seed."""
    d = runs[runs.metric == metric]
    if probe is not None:
        d = d[np.isclose(d.probe, probe)]
    return d[
        ["run_id", *SETTING, "depth", "width", "pruner", "sparsity", "seed", "value"]
    ].reset_index(drop=True)


def with_chi(df: pd.DataFrame, theory: pd.DataFrame) -> pd.DataFrame:
    """``df`` with ``chi1`` and the Thm. 1 bounds of its setting."""
    out = df.copy()
    t = theory[theory.quantity.isin(["chi1", "thm1_bound_ln", "thm1_bound_log10", "kappa"])]
    p = t.pivot_table(index=SETTING, columns="quantity", values="value", aggfunc="first")
    j = p.reindex(pd.MultiIndex.from_frame(out[SETTING]))
    for c in p.columns:
        out[c] = j[c].to_numpy(float)
    return out


def collapsed_layers(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run: ``n_collapsed`` (layers whose every neuron keeps nothing), ``n_layers``, the
    kept fraction and setting, from the per-neuron rows."""
    d = runs[runs.metric == "kept_fraction_neuron"]
    lay = d.groupby(["run_id", "layer"]).value.max().reset_index()
    n = (
        lay.groupby("run_id")
        .agg(n_collapsed=("value", lambda v: int((v == 0).sum())), n_layers=("value", "size"))
        .reset_index()
    )
    info = d.drop_duplicates("run_id")[
        ["run_id", *SETTING, "depth", "width", "pruner", "sparsity", "seed"]
    ]
    return info.merge(n, on="run_id")


def scr_summary(runs: pd.DataFrame, theory: pd.DataFrame, pruner: str = "snip") -> pd.DataFrame:
    """Mean, SE and n of SBP ``s_cr`` per setting, with chi1 and the Thm. 1 bounds."""
    d = with_chi(per_run(runs, "s_cr"), theory)
    d = d[d.pruner == pruner]
    g = d.groupby(SETTING + ["depth", "width"], as_index=False).agg(
        mean=("value", "mean"),
        sd=("value", "std"),
        n=("value", "size"),
        chi1=("chi1", "first"),
        bound_ln=("thm1_bound_ln", "first"),
        bound_log10=("thm1_bound_log10", "first"),
        kappa=("kappa", "first"),
    )
    g["se"] = g.sd / np.sqrt(g.n)
    return g.sort_values("chi1").reset_index(drop=True)


def gamma_summary(runs: pd.DataFrame, theory: pd.DataFrame, first_layer: int = 0) -> pd.DataFrame:
    """Mean, SE, n of ``s_cr_gamma`` per gamma with Prop. 4's bounds and Table 7's values, and
    ``l0_first``: the fraction of seeds whose first emptied layer is ``first_layer`` (= l0)."""
    d = runs[runs.metric == "s_cr_gamma"]
    g = (
        d.groupby("probe", as_index=False)
        .agg(mean=("value", "mean"), sd=("value", "std"), n=("value", "size"))
        .rename(columns={"probe": "gamma"})
    )
    g["se"] = g.sd / np.sqrt(g.n)
    first = runs[runs.metric == "s_cr_gamma_layer"]
    share = first.groupby("probe").value.agg(lambda v: float(np.mean(v == first_layer)))
    g["l0_first"] = share.reindex(g.gamma.to_numpy()).to_numpy(float)
    for q, col in (("prop4_bound", "bound"), ("prop4_bound_sqrt", "bound_sqrt")):
        t = theory[theory.quantity == q].set_index("x").value
        g[col] = t.reindex(g.gamma.to_numpy()).to_numpy(float)
    t7 = pd.DataFrame(TABLE7).set_index("gamma")
    g["table7_bound"] = t7.bound.reindex(g.gamma.to_numpy()).to_numpy(float)
    g["table7_empirical"] = t7.empirical.reindex(g.gamma.to_numpy()).to_numpy(float)
    return g
