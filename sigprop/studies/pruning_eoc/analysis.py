"""Final accuracy per run, its init scheme and the (depth, sparsity) cells of Hayou et al. 2021
(arXiv:2002.08797) Figs. 3, 5, shared by the figure and the claims."""

from __future__ import annotations

import numpy as np
import pandas as pd

SCHEMES = ("EOC + rescaling", "EOC", "ordered")
SETTING = ["activation", "sigma_w2", "sigma_b2", "keep_rate"]


def final_accuracy(runs: pd.DataFrame, metric: str = "test_acc") -> pd.DataFrame:
    """One row per run: its hyperparameters and ``acc``, the metric at the run's last step
    (NaN, i.e. untrainable, for a diverged run)."""
    d = runs[runs.metric == metric]
    last = d[d.step == d.groupby("run_id").step.transform("max")]
    keep = [
        "run_id",
        "activation",
        "sigma_w2",
        "sigma_b2",
        "keep_rate",
        "depth",
        "sparsity",
        "prune_rescale",
        "seed",
        "value",
    ]
    return last[keep].rename(columns={"value": "acc"}).reset_index(drop=True)


def schemes(acc: pd.DataFrame, theory: pd.DataFrame, eoc_tol: float = 1e-3) -> pd.Series:
    """The init scheme of each run: ``EOC + rescaling`` (``prune_rescale``), ``EOC``
    (``|chi_1 - 1| <= eoc_tol``), ``ordered`` (``chi_1 < 1``) or ``chaotic``."""
    chi = theory[theory.quantity == "chi1"].set_index(SETTING).value
    c = chi.reindex(pd.MultiIndex.from_frame(acc[SETTING])).to_numpy(float)
    out = np.where(c < 1 - eoc_tol, "ordered", np.where(c > 1 + eoc_tol, "chaotic", "EOC"))
    out = np.where(acc.prune_rescale.astype(bool).to_numpy(), "EOC + rescaling", out)
    return pd.Series(out, index=acc.index, name="scheme")


def run_table(runs: pd.DataFrame, theory: pd.DataFrame, metric: str = "test_acc") -> pd.DataFrame:
    """One row per run: final accuracy ``acc`` (a diverged run counts as accuracy 0, not
    trainable; ``diverged`` flags it), ``scheme``, ``chi1`` and ``dense`` (an unpruned control,
    sparsity 0)."""
    acc = final_accuracy(runs, metric)
    acc["scheme"] = schemes(acc, theory)
    acc["diverged"] = acc.acc.isna()
    acc["acc"] = acc.acc.fillna(0.0)
    chi = theory[theory.quantity == "chi1"].set_index(SETTING).value
    acc["chi1"] = chi.reindex(pd.MultiIndex.from_frame(acc[SETTING])).to_numpy(float)
    acc["dense"] = acc.sparsity.astype(float) <= 0
    return acc


def cell_table(runs: pd.DataFrame, theory: pd.DataFrame, metric: str = "test_acc") -> pd.DataFrame:
    """Mean final accuracy per (activation, scheme, depth, sparsity) cell, with its standard
    deviation ``sd`` and ``n`` over seeds, ``n_diverged`` and ``chi1``; a diverged run counts as
    accuracy 0 (not trainable).  Unpruned controls are the cells with ``dense`` (sparsity 0)."""
    acc = run_table(runs, theory, metric)
    out = acc.groupby(["activation", "scheme", "depth", "sparsity"], as_index=False).agg(
        acc=("acc", "mean"),
        sd=("acc", "std"),
        n=("acc", "size"),
        n_diverged=("diverged", "sum"),
        chi1=("chi1", "first"),
    )
    out["dense"] = out.sparsity.astype(float) <= 0
    return out


def trainable_counts(
    runs: pd.DataFrame, theory: pd.DataFrame, threshold: float, metric: str = "test_acc"
) -> pd.DataFrame:
    """Per (activation, scheme, seed): the number of pruned (depth, sparsity) cells whose final
    accuracy in that seed is >= ``threshold`` (``count``) and of cells (``cells``): the
    trainable region of one seed, whose spread over seeds gives the SE of a count."""
    acc = run_table(runs, theory, metric)
    acc = acc[~acc.dense]
    acc["ok"] = acc.acc >= threshold
    return acc.groupby(["activation", "scheme", "seed"], as_index=False).agg(
        count=("ok", "sum"), cells=("ok", "size")
    )


def in_region(cells: pd.DataFrame, region) -> np.ndarray:
    """Cells with ``sparsity >= region.min_sparsity`` and ``depth >= region.min_depth``
    (``region``: ``analysis.ordered_region``)."""
    return (
        (cells.sparsity >= float(region.min_sparsity) - 1e-12)
        & (cells.depth >= int(region.min_depth))
    ).to_numpy()
