"""Panels, sample means and spreads of the sampled NTK (Littwin & Wolf 2020, arXiv:2001.10460,
Fig. 2, Eqs. 25, 29), shared by the figures and the claims."""

from __future__ import annotations

import numpy as np
import pandas as pd

GROUP = ["arch", "width", "depth", "branch_depth", "alpha"]
RESNETS = ("resnet_fc",)


def roles(runs: pd.DataFrame) -> pd.Series:
    """``'fig2'``, ``'diagonal'`` or ``''`` per row, from the label of the block that made its
    run (``runs.block``: blocks labelled ``Fig. 2 ...`` or ``diagonal ...``)."""
    lab = runs.block.astype(object).fillna("")
    return lab.map(
        lambda s: (
            "fig2" if s.startswith("Fig. 2") else "diagonal" if s.startswith("diagonal") else ""
        )
    )


def groups(runs: pd.DataFrame) -> list[dict]:
    """Distinct (arch, width, depth, m, alpha) of some runs, sorted; DenseNet m, alpha = NaN."""
    g = runs[GROUP].drop_duplicates().copy()
    dense = ~g.arch.isin(RESNETS)
    g.loc[dense, ["branch_depth", "alpha"]] = np.nan
    g = g.drop_duplicates().assign(_dense=dense).sort_values(["_dense", *GROUP])
    return g.drop(columns="_dense").to_dict("records")  # ResNets first, as in Fig. 2


def _select(df: pd.DataFrame, g: dict, keys=GROUP) -> pd.DataFrame:
    m = np.ones(len(df), bool)
    for k in keys:
        v = g.get(k)
        if k not in df.columns or v is None or (isinstance(v, float) and np.isnan(v)):
            continue
        m &= (df[k] == v).to_numpy() if isinstance(v, str) else np.isclose(df[k].astype(float), v)
    return df[m]


def angle_matrix(runs: pd.DataFrame, g: dict) -> tuple[np.ndarray, np.ndarray]:
    """``[inits, angles]`` of ``G(x, x'(theta))`` for group ``g`` (rows in seed order), and the angles."""
    d = _select(runs[runs.metric == "ntk"], g)
    p = d.pivot_table(
        index=["seed", "run_id"], columns="theta", values="value", aggfunc="first"
    ).sort_index(axis=1)
    return p.to_numpy(float), p.columns.to_numpy(float)


def mean_se(v: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    n = v.shape[axis]
    se = v.std(axis, ddof=1) / np.sqrt(n) if n > 1 else np.full(np.mean(v, axis).shape, np.nan)
    return v.mean(axis), se


def theory_angle(theory: pd.DataFrame, g: dict, theta: np.ndarray) -> np.ndarray:
    """Thm. 1 / 2 at the angles ``theta`` for group ``g`` (NaN where not tabulated)."""
    t = _select(
        theory[theory.quantity == "ntk_angle"], g, ["arch", "depth", "branch_depth", "alpha"]
    )
    s = t.groupby(t.theta.round(9)).value.first()
    return s.reindex(np.round(np.asarray(theta, float), 9)).to_numpy(float)


def theory_diag(theory: pd.DataFrame, g: dict, quantity: str, depths: np.ndarray) -> np.ndarray:
    t = _select(theory[theory.quantity == quantity], g, ["arch", "branch_depth", "alpha"])
    return t.groupby("depth").value.first().reindex(np.asarray(depths, int)).to_numpy(float)


def diag_profile(runs: pd.DataFrame, g: dict) -> pd.DataFrame:
    """Per (width, depth) of group ``g`` (depth/width free): mean, SE and n of ``G(x, x)``."""
    d = _select(runs[runs.metric == "ntk_diag"], g, ["arch", "branch_depth", "alpha"])
    agg = d.groupby(["width", "depth"]).value.agg(["mean", "std", "count"]).reset_index()
    agg["se"] = agg["std"] / np.sqrt(agg["count"])
    return agg.rename(columns={"count": "n"})


def diag_families(runs: pd.DataFrame) -> list[dict]:
    """Distinct (arch, m, alpha) of some runs (DenseNet: m, alpha NaN)."""
    return [
        {k: v for k, v in g.items() if k not in ("width", "depth")}
        for g in pd.DataFrame(groups(runs))
        .drop(columns=["width", "depth"])
        .drop_duplicates()
        .to_dict("records")
    ]


def spread(v: np.ndarray) -> float:
    """SD over inits (rows), averaged over angles (columns)."""
    return float(np.mean(v.std(0, ddof=1)))


def spread_ratio(v_wide: np.ndarray, v_narrow: np.ndarray, n_boot: int, seed: int = 0):
    """``spread(wide) / spread(narrow)`` and its bootstrap SE (inits resampled per width)."""
    r = spread(v_wide) / spread(v_narrow)
    rng = np.random.default_rng(seed)
    boot = [
        spread(v_wide[rng.integers(0, len(v_wide), len(v_wide))])
        / spread(v_narrow[rng.integers(0, len(v_narrow), len(v_narrow))])
        for _ in range(n_boot)
    ]
    return r, float(np.std(boot, ddof=1)) if n_boot > 1 else np.nan


def spread_exponent(
    ratio: float, ratio_se: float, n_narrow: int, n_wide: int
) -> tuple[float, float]:
    """The exponent ``beta`` of ``SD ~ n^(-beta)`` fitted between two widths from the SD ratio
    ``wide / narrow``: ``beta = -ln(ratio) / ln(n_wide / n_narrow)``, and its SE by the delta
    method, ``SE(ratio) / (ratio ln(n_wide / n_narrow))``.  NaN for a ratio that is not positive
    and finite or widths that are not distinct."""
    span = np.log(float(n_wide) / float(n_narrow)) if n_narrow > 0 and n_wide > 0 else np.nan
    if not (np.isfinite(ratio) and ratio > 0 and np.isfinite(span) and span != 0):
        return np.nan, np.nan
    se = float(ratio_se) / (ratio * abs(span)) if np.isfinite(ratio_se) else np.nan
    return float(-np.log(ratio) / span), se
