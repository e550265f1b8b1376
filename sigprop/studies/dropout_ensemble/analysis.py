"""Tables of the simulations (Baldi & Sadowski 2014, Secs. 2-3, 8, 9.3-9.4), shared by the
figures and the claims: per simulated set (Eq. 87), per (distribution, m) (Figs. 9.1-9.2) and
per unit / unit pair of the linear networks (Eqs. 24-25)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import ensembles
from . import monte_carlo as mc


def simulations(p) -> dict:
    """``measure.simulations`` by label: block label -> :class:`Simulation` (in config order)."""
    return {s.label: s for s in p.measure.simulations}


def sampling_labels(p) -> list[str]:
    """Labels of the sampling simulations, in config order (the panel order of Fig. 9.1)."""
    return [s.label for s in p.measure.simulations if s.part == "sampling"]


def with_labels(runs: pd.DataFrame, p) -> pd.DataFrame:
    """The run table with ``label`` (the run's ``block``) and ``part`` columns."""
    if "block" not in runs.columns:
        raise ValueError(
            "the run table has no 'block' column (the label of the grid block of "
            "each run, added when the shard tables are merged)"
        )
    sims = simulations(p)
    missing = sorted(set(runs.block.dropna()) - set(sims))
    if missing:
        raise ValueError(
            f"block label(s) {missing} name no entry of measure.simulations (known: {sorted(sims)})"
        )
    lab = runs.block.astype(object)
    out = runs.assign(label=lab)[lab.notna().to_numpy()]
    return out.assign(part=out.label.map(lambda s: sims[s].part))


def theory_value(theory: pd.DataFrame, quantity: str, distribution: str | None = None) -> float:
    t = theory[theory.quantity == quantity]
    if distribution is not None:
        t = t[t.distribution == distribution]
    return float(t.value.iloc[0]) if len(t) else np.nan


def _wide(runs: pd.DataFrame, index: list[str]) -> pd.DataFrame:
    return runs.pivot_table(index=index, columns="metric", values="value", aggfunc="first")


def bounds_sets(runs: pd.DataFrame, p) -> pd.DataFrame:
    """One row per simulated set: E, V, NWGM, mu_S, sd_S, O_min, O_max, E - NWGM and the Eq. 87
    curves and second-order approximations (Eqs. 85, 202) at the set's E and V."""
    r = with_labels(runs, p)
    r = r[(r.part == "bounds") & ~r.metric.isin(["seconds", "values_per_second"])]
    if not len(r):
        return pd.DataFrame(columns=["E", "V", "NWGM", "diff"])
    w = _wide(r, ["run_id", "probe"]).reset_index()
    w["diff"] = w.E - w.NWGM
    b = ensembles.eq87_bounds(w.E.to_numpy(), w.V.to_numpy())
    for k in ("bound1", "bound2", "bound3"):
        w[k] = b[k]
    with np.errstate(divide="ignore", invalid="ignore"):
        w["eq85"] = ensembles.e_minus_nwgm_second_order(w.E, w.V)
        w["eq202"] = ensembles.e_minus_nwgm_second_order_about_mean(w.E, w.V)
    return w


def sampling_table(runs: pd.DataFrame, p) -> pd.DataFrame:
    """Per (distribution, m): Pearson r and covariance of (E_S, NWGM_S) with SEs, the variances,
    mean bias NWGM_S - E_S with SE, and skewness/kurtosis of NWGM_S (samples of all seeds pooled)."""
    r = with_labels(runs, p)
    r = r[(r.part == "sampling") & r.metric.isin(["E_S", "NWGM_S"])]
    out = []
    for (label, m), g in r.groupby(["label", "width"], sort=True):
        w = _wide(g, ["run_id", "probe"])
        e, nw = w.E_S.to_numpy(), w.NWGM_S.to_numpy()
        pc = mc.pearson_cov(e, nw)
        d = nw - e
        sk, ku = mc.skew_kurtosis(nw)
        out.append(
            {
                "distribution": label,
                "m": int(m),
                "n": pc["n"],
                "r": pc["r"],
                "r_se": pc["r_se"],
                "cov": pc["cov"],
                "cov_se": pc["cov_se"],
                "var_E": e.var(ddof=1),
                "var_NWGM": nw.var(ddof=1),
                "mean_E": e.mean(),
                "mean_NWGM": nw.mean(),
                "bias": d.mean(),
                "bias_se": d.std(ddof=1) / np.sqrt(len(d)),
                "skew_NWGM": sk,
                "kurt_NWGM": ku,
            }
        )
    return pd.DataFrame(out)


def sampling_values(runs: pd.DataFrame, p, label: str, m: int) -> pd.DataFrame:
    """E_S and NWGM_S of every sample of one (distribution, m)."""
    r = with_labels(runs, p)
    r = r[(r.label == label) & (r.width == m) & r.metric.isin(["E_S", "NWGM_S"])]
    return _wide(r, ["run_id", "probe"]).reset_index()


def linear_table(runs: pd.DataFrame, p) -> dict[str, pd.DataFrame]:
    """``units`` (per run, layer, unit: exact/naive/MC means and variances with z-scores) and
    ``pairs`` (per run, layer, pair: exact/MC covariance with z)."""
    r = with_labels(runs, p)
    r = r[r.part == "linear"]
    if not len(r):
        return {"units": pd.DataFrame(), "pairs": pd.DataFrame(), "cost": pd.DataFrame()}
    u = _wide(
        r[
            r.metric.isin(
                [
                    "exact_mean",
                    "naive_mean",
                    "mc_mean",
                    "mc_mean_se",
                    "exact_var",
                    "mc_var",
                    "mc_var_se",
                ]
            )
        ],
        ["run_id", "layer", "probe"],
    ).reset_index()
    u["z_mean"] = mc.z_scores(u.mc_mean, u.mc_mean_se, u.exact_mean)
    u["z_naive"] = mc.z_scores(u.mc_mean, u.mc_mean_se, u.naive_mean)
    u["z_var"] = mc.z_scores(u.mc_var, u.mc_var_se, u.exact_var)
    pr = r[r.metric.isin(["exact_cov", "mc_cov", "mc_cov_se"])]
    pr = (
        _wide(pr, ["run_id", "layer", "probe"]).reset_index()
        if len(pr)
        else pd.DataFrame(columns=["run_id", "layer", "probe", "exact_cov", "mc_cov", "mc_cov_se"])
    )
    pr["z_cov"] = mc.z_scores(pr.mc_cov, pr.mc_cov_se, pr.exact_cov) if len(pr) else []
    c = _wide(
        r[
            r.metric.isin(
                ["mc_seconds", "mc_samples", "mc_samples_per_second", "mc_gflops", "exact_seconds"]
            )
        ],
        ["run_id"],
    ).reset_index()
    c = c.merge(
        r[["run_id", "width", "depth", "batch_size", "keep_rate"]].drop_duplicates(), on="run_id"
    )
    return {"units": u, "pairs": pr, "cost": c}
