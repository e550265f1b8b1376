"""Trainability of a (σ_w², depth) grid from run tables (000 Fig. 7; Schoenholz et al. 2017 Fig. 5).

Functions take the long run table and return small tables; nothing here trains.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PANEL = ["panel", "keep_rate"]


def add_panels(runs: pd.DataFrame) -> pd.DataFrame:
    """The run table with a ``panel`` column: the run's ``block``, the label of the grid block
    that made it (000 Fig. 7 (a)-(h); :func:`sigprop.tables.merge_runs`).  A block spanning
    several keep rates is one panel per keep rate (one theory curve each)."""
    if "block" not in runs.columns:
        raise ValueError(
            "the run table has no 'block' column (the grid block of each run, "
            "added by sigprop.tables.merge_runs from the study's manifest)"
        )
    if runs.block.isna().any():
        rid = runs.run_id[runs.block.isna()].iloc[0]
        raise ValueError(
            f"run {rid} of the table has no block label: rerun the workflow after editing the study"
        )
    out = runs.copy()
    out["panel"] = [str(b) for b in out.block]
    several = out.groupby("panel").keep_rate.transform("nunique") > 1
    out.loc[several, "panel"] = [
        f"{p}, rho = {k:g}" for p, k in zip(out.panel[several], out.keep_rate[several])
    ]
    return out


def final_accuracy(
    runs: pd.DataFrame, metric: str = "train_acc", chance: float | None = None
) -> pd.DataFrame:
    """Accuracy at each run's last evaluation, averaged over seeds.

    Diverged runs carry NaN accuracy in the run table; here they count as
    chance level (they did not train).  Runs without a ``panel`` column get one
    (:func:`add_panels`).  Returns columns
    ``panel, keep_rate, sigma_w2, depth, acc, n_runs, n_diverged``.
    """
    if "panel" not in runs.columns:
        runs = add_panels(runs)
    df = runs[runs.metric == metric]
    if df.empty:
        raise ValueError(f"no '{metric}' rows in the run table")
    last = df[df.step == df.groupby("run_id").step.transform("max")].copy()
    if chance is None:
        chance = 1.0 / n_classes(runs)
    last["diverged"] = last.value.isna()
    last["acc"] = last.value.fillna(chance)
    g = last.groupby(PANEL + ["sigma_w2", "depth"], as_index=False)
    return g.agg(acc=("acc", "mean"), n_runs=("acc", "size"), n_diverged=("diverged", "sum"))


def n_classes(runs: pd.DataFrame) -> int:
    ds = set(runs.dataset)
    from ...data import catalog

    n = {catalog.get(d).n_classes for d in ds}
    if len(n) != 1 or None in n:
        raise ValueError(f"cannot infer the number of classes of {sorted(ds)}")
    return n.pop()


def trainable(acc: pd.DataFrame, fraction: float = 0.5, chance: float = 0.1) -> pd.DataFrame:
    """Mark each cell trainable when its accuracy clears a per-panel threshold.

    threshold = chance + fraction · (best accuracy in the panel − chance), so the
    boundary is where accuracy falls half-way (fraction = 0.5) to chance.
    """
    out = acc.copy()
    best = out.groupby(PANEL).acc.transform("max")
    out["threshold"] = chance + fraction * (best - chance)
    out["trainable"] = out.acc >= out.threshold
    return out


def boundary_error(cells: pd.DataFrame, predicted_depth) -> float:
    """Fraction of grid cells misclassified by the rule 'trainable iff L ≤ L_max(σ_w²)'.

    ``predicted_depth(keep_rate, sigma_w2) -> L_max`` (arrays in, array out).
    """
    pred = np.asarray(predicted_depth(cells.keep_rate.to_numpy(), cells.sigma_w2.to_numpy()))
    predicted = cells.depth.to_numpy() <= pred
    return float(np.mean(predicted != cells.trainable.to_numpy()))
