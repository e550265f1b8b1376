"""Study: dropout learning in trained logistic networks (002 Figs. 9.3-9.15, 11.1-11.3, §11.6).

Paper: Baldi & Sadowski, "The dropout learning algorithm" (2014), 002.  Each run is one
logistic classifier (``RunSpec``: fc, activation sigmoid, ``keep_rate`` = hidden keep
probability; the input keep probability is ``analysis.input_keep``) whose initial weights come
from the workflow's init rule.  ``measure`` trains it with dropout and, from the same weights,
with dropin (:mod:`sigprop.measure.dropout_learning`), and samples its dropout sub-networks by
batched Monte Carlo (:mod:`sigprop.measure.dropout_mc`) before, during and after training.

Claims (tolerances in ``config/studies/dropout_training.yaml``, fixed before the Monte Carlo
results were seen; see the config's header for what was seen when): |E - NWGM| and |E - W| lie within Bounds 1-2 of Eq. 87 (Fig. 9.3); Eq. 202 is a better
second-order approximation than Eq. 85 (App. B) and Eq. 85 itself is within a factor 2
(Fig. 9.3; an earlier finding says Eq. 85 is short by 2E(1-E), see
:mod:`sigprop.theory.ensembles`); the errors are small, roughly Gaussian and do not grow with
depth (Figs. 9.6-9.7, §9.5); W(1-W) bounds the dropout variance, 0 estimates it better at the
start and end of learning and the variance rises during learning (Figs. 9.8-9.11); W_i W_j
approximates E(O_i O_j) much better than 0, and W_ij W_j helps connected pairs after training
only (Figs. 9.12-9.14); E(sigma'(S)) ~ sigma'(E(S)) (Fig. 9.15); activations become sparse,
active units go through three phases, their consistency does not decline with depth
(Figs. 11.1-11.3); dropin fails where dropout succeeds (§11.6).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .. import tables
from ..claims import frame, row
from ..figures.dropout_training import (
    fig_approximations,
    fig_dropin,
    fig_errors,
    fig_moments,
    fig_sparsity,
)
from ..theory import ensembles as ens

TASK = "measure"
FIGURES = {"dropout_approximations": fig_approximations, "dropout_errors": fig_errors,
           "dropout_moments": fig_moments, "dropout_sparsity": fig_sparsity, "dropin": fig_dropin}
CAPTIONS = {
    "dropout_approximations": (
        "002 Figs. 9.3-9.5 after training: for every hidden unit and each of the probe inputs (one row "
        "per hidden layer), |E - NWGM| (left) and |E - W| (middle) against E = E(O) estimated from "
        "the Monte Carlo dropout samples; NWGM = sigma(E(S)) (Eq. 39), W = the deterministic ensemble "
        "network with weights scaled by the keep probabilities (Eq. 98). Overlaid: the second-order "
        "approximation V|1-2E|/(1-2V) of Eq. 85/87 (blue), the expansion around E of Eq. 202 (orange), "
        "Bound 1 E(1-E)|1-2E|/(1-2V) (green points) and Bound 2 E(1-E)|1-2E|/(1-2E(1-E)) (black "
        "curve). Right: histograms of approximation minus measured |E - NWGM| for Eq. 85 and Eq. 202 "
        "(Fig. 9.5), on units whose E - NWGM exceeds 3 Monte Carlo standard errors."),
    "dropout_errors": (
        "002 Figs. 9.6-9.7: distributions of NWGM - E and W - E per hidden layer before (grey) and "
        "after (colour) training, pooled over hidden units and probe inputs; dashed: Gaussian with "
        "the same mean and standard deviation; skewness and excess kurtosis in each panel. Before "
        "training W - E is mostly the Monte Carlo noise of E (standard error sqrt(V/n))."),
    "dropout_moments": (
        "002 Figs. 9.8-9.15, before (grey) and after (colour) training, all hidden units and probe "
        "inputs: (a) E(O^2) - W and E(O^2) - W^2, i.e. the variance estimates W(1-W) and 0 (Fig. 9.8); "
        "(b) V - W(1-W) (Fig. 9.9); (c) mean dropout variance V over training per hidden layer, "
        "dropout (solid) and dropin (dotted) (Fig. 9.10); (d) mean W(1-W) - V over training "
        "(Fig. 9.11); (e) E(O_i O_j) - W_i W_j for random pairs of units of the same hidden layer "
        "(unconnected, Fig. 9.12); (f) E(O_i O_j) - 0 for the same pairs (Fig. 9.13); (g) connected "
        "pairs j -> i in adjacent hidden layers: E(O_i O_j) - W_i W_j and E(O_i O_j) - W_ij W_j "
        "(W_ij: unit i with j removed, Eq. 121) (Fig. 9.14); (h) E(sigma'(S)) - sigma'(E(S)) "
        "(Fig. 9.15)."),
    "dropout_sparsity": (
        "002 Figs. 11.1-11.3: (a) distribution of the deterministic activations W per hidden layer "
        "over the test inputs at the end of training (log scale; grey: before training); (b) the "
        "learning phases of a typical active (red) and a typical inactive (blue) unit of the top hidden "
        "layer for probe input 0: Monte Carlo mean activation with its 5% and 95% dropout quantiles "
        "over training; (c) the dropout standard deviation of the active units (E > 0.1 at the end of "
        "training) per hidden layer over training: mean and 5%-95% band over active (unit, input) "
        "pairs."),
    "dropin": (
        "002 §11.6: the same network trained with dropout (units set to 0) and dropin (units set to 1) "
        "from the same initial weights, data order and mask draws: (a) test accuracy of the "
        "deterministic ensemble network over training (markers at the end: Monte Carlo ensemble); "
        "(b) mean training loss; (c) mean dropout variance of the hidden units over training."),
}
SOURCE_FIG93 = "002 §8 Eq. 87, §9.5, Figs. 9.3, 9.5"
SOURCE_APPB = "002 App. B Eq. 202, Figs. 9.4-9.5; Eq. 85"
SOURCE_FIG96 = "002 §9.5, Figs. 9.6-9.7"
SOURCE_FIG98 = "002 §9.6 Eqs. 117-118, Figs. 9.8-9.9"
SOURCE_FIG910 = "002 §9.6, §11.7, Figs. 9.10-9.11"
SOURCE_FIG912 = "002 §9.6 Eqs. 119-124, Figs. 9.12-9.14"
SOURCE_FIG915 = "002 Fig. 9.15, §11.5"
SOURCE_FIG11 = "002 §11.7, Figs. 11.1-11.3"
SOURCE_DROPIN = "002 §11.6"


# ------------------------------------------------------------------ measurement


def scale_params(cfg: dict) -> dict:
    """The Monte Carlo sizes of the configured scale, with the shared thresholds."""
    an = cfg.get("analysis", {})
    p = dict(an.get("per_scale", {}).get(cfg.get("scale", "quick"), {}))
    for k, d in (("active_threshold", 0.1), ("sparse_threshold", 0.1), ("hist_bins", 20)):
        p.setdefault(k, an.get(k, d))
    return p


def load_data(path: str | Path, device, dtype) -> dict:
    """A prepared data set as flattened tensors with inputs in [0, 1] (undoing the standardisation:
    per feature for sets standardised per feature, globally for sets standardised per channel)."""
    import torch

    from ..data.prepare import load
    from ..measure.dropout_learning import unit_interval
    ds = load(path)
    per_feature = ds.meta.get("normalization", {}).get("kind", "per_feature") == "per_feature"
    a, b = unit_interval(ds.x_train, ds.x_test, per_feature)
    t = lambda v: torch.as_tensor(v, dtype=dtype, device=device)
    return {"x_train": t(a), "y_train": torch.as_tensor(ds.y_train, device=device).long(),
            "x_test": t(b), "y_test": torch.as_tensor(ds.y_test, device=device).long()}


def measure(shard, params, buffers, cfg: dict, device: str = "cpu") -> pd.DataFrame:
    """Train and measure every run of the shard (:func:`sigprop.measure.dropout_learning.measure_run`).

    Reads the shard's prepared data set from ``cfg["data_path"]`` (the measure rule's ``data``
    input, passed by :func:`sigprop.workflow_steps.measure_shard`)."""
    import torch

    from ..measure.dropout_learning import measure_run
    from ..measure.dropout_mc import split_params
    an = cfg.get("analysis", {})
    dev = torch.device(device)
    dtype = params[0].dtype
    if "data_path" not in cfg:
        raise ValueError("dropout_training.measure needs cfg['data_path'] (the shard's prepared "
                         "data set, results/data/<dataset>.npz)")
    cache, frames = {}, []
    for m, run in enumerate(shard.runs):
        if run.activation != "sigmoid" or run.arch != "fc":
            raise ValueError(f"run {run.run_id}: dropout_training needs arch fc with sigmoid units")
        if run.dataset not in cache:
            cache[run.dataset] = load_data(cfg["data_path"], dev, dtype)
        ws, bs = split_params([p.to(dev) for p in params], m)
        long = measure_run(ws, bs, cache[run.dataset], run, scale_params(cfg),
                           float(an.get("input_keep", 0.8)), dev)
        frames.append(long.assign(model=m))
    return tables.run_rows(shard, pd.concat(frames, ignore_index=True), device,
                           order=("layer", "probe"))


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """Eq. 87 curves of E alone (Figs. 8.1-8.2, 9.3): ``bound2`` and ``bound3`` against
    ``x = E`` on ``theory.e_grid`` points of [0, 1], per setting."""
    e = np.linspace(0.0, 1.0, int(theory_cfg.get("e_grid", 201)))
    b = ens.eq87_bounds(e)
    rows = []
    for s in settings:
        for q in ("bound2", "bound3"):
            rows.append(pd.DataFrame({"study": study, **s, "quantity": q, "x": e, "value": b[q]}))
    return pd.concat(rows, ignore_index=True)


# ------------------------------------------------------------------ tables


def final_step(runs: pd.DataFrame) -> int:
    return int(runs["steps"].max())


def unit_table(runs: pd.DataFrame, step: int) -> pd.DataFrame:
    """One row per (run, layer, probe = input x unit) at ``step`` with the per-unit metrics as
    columns, plus the derived ``EO2 = V + E^2``, ``d_nwgm = NWGM - E``, ``d_w = W - E``."""
    from ..measure.dropout_learning import UNIT_METRICS
    d = runs[(runs.step == step) & runs.metric.isin(UNIT_METRICS)]
    w = d.pivot_table(index=["run_id", "layer", "probe"], columns="metric", values="value",
                      aggfunc="first").reset_index()
    w.columns.name = None
    if len(w):
        w["EO2"] = w.V + w.E ** 2
        w["d_nwgm"] = w.NWGM - w.E
        w["d_w"] = w.W - w.E
    return w


def pair_table(runs: pd.DataFrame, step: int, kind: str) -> pd.DataFrame:
    """Pairs of kind ``u`` (unconnected) or ``c`` (connected) at ``step``: columns ``EOO, WW``
    (and ``WijW``) per (run, layer, probe)."""
    d = runs[(runs.step == step) & runs.metric.str.startswith(f"p{kind}_")]
    w = d.pivot_table(index=["run_id", "layer", "probe"], columns="metric", values="value",
                      aggfunc="first").reset_index()
    w.columns = [c.split("_", 1)[1] if str(c).startswith(f"p{kind}_") else c for c in w.columns]
    return w


def layer_series(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``[steps, layers]`` mean over runs of a per-layer trajectory metric."""
    d = runs[runs.metric == metric]
    return d.pivot_table(index="step", columns="layer", values="value", aggfunc="mean").sort_index()


def scalar(runs: pd.DataFrame, metric: str, step: int | None = None) -> float:
    d = runs[(runs.metric == metric) & ((runs.step == step) if step is not None else True)]
    return float(d.value.mean()) if len(d) else np.nan


# ------------------------------------------------------------------ statistics (arrays in, numbers out)


def within(d: np.ndarray, bound: np.ndarray, se: np.ndarray, z: float) -> np.ndarray:
    """``|d| <= bound + z se``: a Monte Carlo estimate ``d`` lies within ``bound`` up to noise."""
    return np.abs(d) <= bound + z * se


def rms(x) -> float:
    x = np.asarray(x, float)
    return float(np.sqrt(np.mean(x * x))) if x.size else np.nan


def skew_kurtosis(x) -> tuple[float, float]:
    """Sample skewness and excess kurtosis (moment estimators)."""
    x = np.asarray(x, float)
    c = x - x.mean()
    s2 = np.mean(c * c)
    if x.size < 3 or s2 <= 0:
        return np.nan, np.nan
    return float(np.mean(c ** 3) / s2 ** 1.5), float(np.mean(c ** 4) / s2 ** 2 - 3.0)


def median_abs_log_ratio(measured, approx) -> float:
    m, a = np.abs(np.asarray(measured, float)), np.abs(np.asarray(approx, float))
    ok = (m > 0) & (a > 0)
    return float(np.median(np.abs(np.log(m[ok] / a[ok])))) if ok.any() else np.nan


def settle_change(series: pd.Series, window: float) -> float:
    """Relative change of a trajectory over its last ``window`` fraction of training:
    ``|v(T) - v(T - window T)| / v(T)`` (nearest snapshot at or before ``T - window T``)."""
    s = series.dropna().sort_index()
    T = s.index.max()
    back = s[s.index <= T - window * T]
    if not len(back) or s.iloc[-1] == 0:
        return np.nan
    return float(abs(s.iloc[-1] - back.iloc[-1]) / abs(s.iloc[-1]))


def _active_mean(runs: pd.DataFrame, metric: str) -> pd.Series:
    """Mean over layers (weighted by the active counts) of a per-layer active-unit trajectory."""
    v, n = layer_series(runs, metric), layer_series(runs, "n_active")
    n = n.reindex(index=v.index, columns=v.columns).fillna(0)
    return (v.fillna(0) * n).sum(axis=1) / n.sum(axis=1)


# ------------------------------------------------------------------ claims


def _ok(x: bool) -> str:
    return "pass" if bool(x) else "fail"


def _bound_claims(study, u: pd.DataFrame, tag: str, an: dict) -> list[dict]:
    z, want = float(an.get("noise_z", 3.0)), float(an.get("within_fraction", 0.95))
    b = ens.eq87_bounds(u.E.to_numpy(), u.V.to_numpy())
    rows = []
    for q, col, se in (("NWGM", "d_nwgm", "se_nwgm"), ("W", "d_w", "se_e")):
        for bname in ("bound1", "bound2"):
            inside = within(u[col].to_numpy(), b[bname], u[se].to_numpy(), z)
            raw = np.abs(u[col].to_numpy()) <= b[bname]
            frac = float(inside.mean())
            per_layer = u.assign(k=inside).groupby("layer").k.mean()
            rows.append(row(study, f"{q.lower()}_within_{bname}[{tag}]",
                            f"|E - {q}| lies within {bname.replace('bound', 'Bound ')} of Eq. 87 (002 "
                            "Fig. 9.3: deviations 'well within the bounds derived in Section 8')",
                            SOURCE_FIG93, measured=frac,
                            expected=f">= {want:g} of (unit, input) pairs within the bound + {z:g} MC SE",
                            tolerance=0.0, verdict=_ok(frac >= want),
                            detail=(f"{len(u)} (unit, input) pairs; per layer "
                                    + ", ".join(f"l{k}: {v:.3f}" for k, v in per_layer.items())
                                    + f"; without the MC allowance {raw.mean():.3f}"),
                            values={"fraction": frac, "fraction_raw": float(raw.mean())}))
    return rows


def _approx_claims(study, u: pd.DataFrame, an: dict) -> list[dict]:
    z, fac = float(an.get("noise_z", 3.0)), float(an.get("approx_factor", 2.0))
    res = u[np.abs(u.d_nwgm) > z * u.se_nwgm]
    diff = (res.E - res.NWGM).to_numpy()
    a85 = ens.e_minus_nwgm_second_order(res.E.to_numpy(), res.V.to_numpy())
    a202 = ens.e_minus_nwgm_second_order_about_mean(res.E.to_numpy(), res.V.to_numpy())
    l85, l202 = median_abs_log_ratio(diff, a85), median_abs_log_ratio(diff, a202)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(diff) / np.abs(a85)
    ratio = ratio[np.isfinite(ratio)]
    med = float(np.median(ratio)) if ratio.size else np.nan
    corr = float(np.median(1.0 / (2 * res.E * (1 - res.E)))) if len(res) else np.nan
    sign85 = float(np.mean(np.sign(diff) == np.sign(a85))) if len(res) else np.nan
    det = (f"{len(res)} of {len(u)} (unit, input) pairs with |E - NWGM| > {z:g} MC SE; "
           f"median |log(measured/Eq.85)| = {l85:.3f}, |log(measured/Eq.202)| = {l202:.3f}; "
           f"median measured/Eq.85 = {med:.3f} vs median 1/(2E(1-E)) = {corr:.3f}; "
           f"sign of Eq. 85 right for {sign85:.3f}")
    return [
        row(study, "eq202_beats_eq85[final]",
            "The second-order expansion around E (Eq. 202) approximates E - NWGM better than the "
            "expansion around 0.5 (Eqs. 85/87)", SOURCE_APPB, measured=l202,
            expected=f"median |log ratio| of Eq. 202 < that of Eq. 85 ({l85:.3f})", tolerance=0.0,
            verdict=_ok(l202 < l85) if len(res) else "inconclusive", detail=det,
            values={"log_ratio_eq85": l85, "log_ratio_eq202": l202}),
        row(study, "eq85_predicts_e_minus_nwgm[final]",
            "|E - NWGM| ~ V|1-2E|/(1-2V) (Eqs. 85/87, the 'second order approximation' of Fig. 9.3)",
            SOURCE_APPB, measured=med, expected=f"median measured/Eq.85 in [1/{fac:g}, {fac:g}]",
            tolerance=fac, verdict=(_ok(1 / fac <= med <= fac) if len(res) else "inconclusive"),
            detail=det + ("; an earlier finding (sigprop.theory.ensembles) is that Eq. 85 is short by "
                          "the factor 2E(1-E)"),
            values={"median_ratio": med, "median_inverse_2E1mE": corr}),
    ]


def _error_claims(study, u0: pd.DataFrame, u1: pd.DataFrame, an: dict) -> list[dict]:
    tol = float(an.get("small_rms", 0.05))
    ms, mk = float(an.get("max_skew", 1.0)), float(an.get("max_excess_kurtosis", 3.0))
    grow = float(an.get("depth_growth", 2.0))
    rows = []
    for tag, u in (("init", u0), ("final", u1)):
        for q, col in (("NWGM", "d_nwgm"), ("W", "d_w")):
            g = u.groupby("layer")[col]
            r = g.apply(rms)
            sk = g.apply(lambda x: skew_kurtosis(x)[0])
            ku = g.apply(lambda x: skew_kurtosis(x)[1])
            layers = ", ".join(f"l{k}: {v:.4f}" for k, v in r.items())
            rows.append(row(study, f"{q.lower()}_error_small[{tag}]",
                            f"{q} - E is small in every hidden layer", SOURCE_FIG96,
                            measured=float(r.max()), expected=f"RMS per layer <= {tol:g}", tolerance=tol,
                            verdict=_ok(r.max() <= tol), detail=f"RMS per layer {layers}",
                            values={f"rms_l{k}": v for k, v in r.items()}))
            shape = ", ".join(f"l{k}: {a:+.2f}/{b:+.2f}" for (k, a), b in zip(sk.items(), ku.to_numpy()))
            rows.append(row(study, f"{q.lower()}_error_gaussian_skew[{tag}]",
                            f"{q} - E is roughly Gaussian per layer: small skewness", SOURCE_FIG96,
                            measured=float(sk.abs().max()), expected=f"|skewness| <= {ms:g} in every layer",
                            tolerance=ms, verdict=_ok(sk.abs().max() <= ms),
                            detail=f"skewness/excess kurtosis per layer {shape}"))
            rows.append(row(study, f"{q.lower()}_error_gaussian_kurtosis[{tag}]",
                            f"{q} - E is roughly Gaussian per layer: tails not heavy", SOURCE_FIG96,
                            measured=float(ku.abs().max()),
                            expected=f"|excess kurtosis| <= {mk:g} in every layer", tolerance=mk,
                            verdict=_ok(ku.abs().max() <= mk),
                            detail=f"skewness/excess kurtosis per layer {shape}"))
        r = u.groupby("layer").d_w.apply(rms)
        ratio = float(r.iloc[-1] / r.iloc[0])
        rows.append(row(study, f"w_error_no_depth_growth[{tag}]",
                        "The W - E errors do not accumulate with depth (they act like noise and cancel)",
                        "002 §9.5 Eqs. 109-116, Fig. 9.7", measured=ratio,
                        expected=f"RMS(W - E) last / first hidden layer <= {grow:g}", tolerance=grow,
                        verdict=_ok(ratio <= grow),
                        detail="RMS(W - E) per layer " + ", ".join(f"l{k}: {v:.4f}" for k, v in r.items())))
    return rows


def _variance_claims(study, u0, u1, runs, an) -> list[dict]:
    want, maj = float(an.get("within_fraction", 0.95)), float(an.get("majority_fraction", 0.5))
    rise = float(an.get("rise_factor", 2.0))
    rows = []
    for tag, u in (("init", u0), ("final", u1)):
        frac = float(np.mean(u.V <= u.W * (1 - u.W)))
        rows.append(row(study, f"w1mw_bounds_variance[{tag}]",
                        "W(1-W) is an upper bound of the dropout variance (Eq. 117)", SOURCE_FIG98,
                        measured=frac, expected=f">= {want:g} of (unit, input) pairs with V <= W(1-W)",
                        tolerance=0.0, verdict=_ok(frac >= want),
                        detail=f"{len(u)} pairs; median V = {u.V.median():.4f}, median W(1-W) = "
                               f"{(u.W * (1 - u.W)).median():.4f}"))
        zero = float(np.mean(np.abs(u.EO2 - u.W ** 2) < np.abs(u.EO2 - u.W)))
        rows.append(row(study, f"zero_better_variance_estimate[{tag}]",
                        "At the beginning and end of learning the variances are small and 0 (E(O^2) ~ W^2, "
                        "Eq. 118) is the better estimate than W(1-W) (E(O^2) ~ W, Eq. 117)", SOURCE_FIG98,
                        measured=zero, expected=f">= {maj:g} of (unit, input) pairs", tolerance=0.0,
                        verdict=_ok(zero >= maj),
                        detail=f"median |E(O^2) - W^2| = {np.median(np.abs(u.EO2 - u.W ** 2)):.4f}, median "
                               f"|E(O^2) - W| = {np.median(np.abs(u.EO2 - u.W)):.4f}"))
    v, g = layer_series(runs, "traj_V").mean(axis=1), layer_series(runs, "traj_gap").mean(axis=1)
    peak = float(v.max() / v.iloc[0])
    ok = peak >= rise and g.min() < g.iloc[0]
    rows.append(row(study, "variance_rises_during_learning",
                    "During learning the dropout variances grow from their small initial values and come "
                    "closer to the upper bound W(1-W)", SOURCE_FIG910, measured=peak,
                    expected=f"max_t mean V / initial mean V >= {rise:g} and min_t mean(W(1-W) - V) < "
                             "its initial value", tolerance=rise, verdict=_ok(ok),
                    detail=(f"mean V: initial {v.iloc[0]:.4f}, peak {v.max():.4f} at step {v.idxmax()}, "
                            f"final {v.iloc[-1]:.4f}; mean W(1-W) - V: initial {g.iloc[0]:.4f}, min "
                            f"{g.min():.4f} at step {g.idxmin()}, final {g.iloc[-1]:.4f}")))
    return rows


def _pair_claims(study, runs, s0, s1, an) -> list[dict]:
    tol = float(an.get("pair_ratio", 0.2))
    rows = []
    for tag, s in (("init", s0), ("final", s1)):
        for kind, name in (("u", "unconnected"), ("c", "connected")):
            p = pair_table(runs, s, kind)
            if not len(p):
                continue
            err, zero = np.abs(p.EOO - p.WW), np.abs(p.EOO)
            ratio = float(np.median(err) / np.median(zero))
            rows.append(row(study, f"ww_approximates_pairs_{name}[{tag}]",
                            f"E(O_i O_j) ~ W_i W_j for {name} pairs, much better than 0 (Eq. 119/124)",
                            SOURCE_FIG912, measured=ratio,
                            expected=f"median |E(O_iO_j) - W_iW_j| / median |E(O_iO_j)| <= {tol:g}",
                            tolerance=tol, verdict=_ok(ratio <= tol),
                            detail=f"{len(p)} (pair, input); median |error| {np.median(err):.4f}, "
                                   f"median E(O_iO_j) {np.median(zero):.4f}; W_iW_j closer than 0 for "
                                   f"{np.mean(err < zero):.3f} of them"))
            if kind == "c":
                e1, e2 = float(np.mean(err)), float(np.mean(np.abs(p.EOO - p.WijW)))
                r = e2 / e1
                want_better = tag == "final"
                rows.append(row(study, f"wij_correction_{'helps' if want_better else 'no_help'}[{tag}]",
                                "W_ij W_j (Eq. 124) improves on W_i W_j for connected pairs at the end of "
                                "learning but not at the beginning", SOURCE_FIG912, measured=r,
                                expected=("mean |err W_ijW_j| / mean |err W_iW_j| < 1" if want_better
                                          else "mean |err W_ijW_j| / mean |err W_iW_j| >= 1"),
                                tolerance=1.0, verdict=_ok(r < 1 if want_better else r >= 1),
                                detail=f"mean |error|: W_iW_j {e1:.5f}, W_ijW_j {e2:.5f}"))
    return rows


def _sigma_prime_claims(study, u0, u1, an) -> list[dict]:
    tol = float(an.get("sigma_prime_tol", 0.02))
    rows = []
    for tag, u in (("init", u0), ("final", u1)):
        d = np.abs(u.Esp - u.spE)
        rows.append(row(study, f"sigma_prime_of_mean[{tag}]", "E(sigma'(S)) ~ sigma'(E(S))",
                        SOURCE_FIG915, measured=float(d.median()), expected=f"median |difference| <= {tol:g}",
                        tolerance=tol, verdict=_ok(d.median() <= tol),
                        detail=f"95th percentile {d.quantile(0.95):.4f}; median sigma'(E(S)) "
                               f"{u.spE.median():.4f}"))
    return rows


def _learning_claims(study, runs, an) -> list[dict]:
    rows = []
    sf, thr = float(an.get("sparse_fraction", 0.5)), float(an.get("sparse_threshold", 0.1))
    T = final_step(runs)
    fr = runs[(runs.metric == "act_frac_below")].groupby(["step", "layer"]).value.mean()
    fin, ini = fr.loc[T], fr.loc[0]
    rows.append(row(study, "sparse_activations[final]",
                    "Dropout learning produces sparse representations (Fig. 11.1)", SOURCE_FIG11,
                    measured=float(fin.min()),
                    expected=f">= {sf:g} of the activations below {thr:g} in every hidden layer",
                    tolerance=0.0, verdict=_ok(fin.min() >= sf),
                    detail="fraction below threshold per layer, after (before) training: "
                           + ", ".join(f"l{k}: {fin[k]:.3f} ({ini[k]:.3f})" for k in fin.index)))
    rise, win, stol = float(an.get("rise_factor", 2.0)), float(an.get("settle_window", 0.2)), \
        float(an.get("settle_tol", 0.2))
    a = _active_mean(runs, "active_std_mean").dropna()
    ina = layer_series(runs, "inactive_std_mean").mean(axis=1).dropna()
    none = "no active (or inactive) units at the end of training"
    up = float(a.max() / a.iloc[0]) if len(a) else np.nan
    rows.append(row(study, "active_units_variance_rises",
                    "Phase 2: the dropout variance of active units increases during learning (Fig. 11.2)",
                    SOURCE_FIG11, measured=up, expected=f"peak / initial mean dropout SD of active units "
                    f">= {rise:g}", tolerance=rise, verdict=_ok(up >= rise) if len(a) else "inconclusive",
                    detail=(f"mean SD of active units: initial {a.iloc[0]:.4f}, peak {a.max():.4f} at step "
                            f"{a.idxmax()}, final {a.iloc[-1]:.4f}") if len(a) else none))
    ch = settle_change(a, win) if len(a) else np.nan
    rows.append(row(study, "active_units_variance_settles",
                    "Phase 3: as learning converges the consistency of the active units stabilises "
                    "(Fig. 11.2)", SOURCE_FIG11, measured=ch,
                    expected=f"relative change of their mean SD over the last {win:g} of training <= {stol:g}",
                    tolerance=stol, verdict=_ok(ch <= stol) if np.isfinite(ch) else "inconclusive",
                    detail=(f"mean SD of active units {a.iloc[-1]:.4f} at step {a.index[-1]}, peak at step "
                            f"{a.idxmax()}") if len(a) else none))
    ir = float(an.get("inactive_ratio", 0.5))
    both = len(a) and len(ina)
    r = float(ina.max() / a.max()) if both else np.nan
    rows.append(row(study, "inactive_units_stay_consistent",
                    "Inactive units quickly learn to stay silent; their dropout variance grows only "
                    "minimally (Fig. 11.2)", SOURCE_FIG11, measured=r,
                    expected=f"peak mean SD of inactive / of active units <= {ir:g}", tolerance=ir,
                    verdict=_ok(r <= ir) if both else "inconclusive",
                    detail=(f"inactive: initial {ina.iloc[0]:.4f}, peak {ina.max():.4f}, final "
                            f"{ina.iloc[-1]:.4f}") if both else none))
    lr_ = float(an.get("layer_sd_ratio", 1.25))
    act = layer_series(runs, "active_std_mean")
    per = act.loc[T] if T in act.index else pd.Series(dtype=float)
    q = float(per.iloc[-1] / per.iloc[0]) if len(per) > 1 else np.nan
    rows.append(row(study, "active_consistency_across_layers[final]",
                    "The consistency of active units does not noticeably decline in the upper layers "
                    "(Fig. 11.3)", SOURCE_FIG11, measured=q,
                    expected=f"final mean SD of active units, last / first hidden layer <= {lr_:g}",
                    tolerance=lr_, verdict=_ok(q <= lr_) if np.isfinite(q) else "inconclusive",
                    detail="per layer " + ", ".join(f"l{k}: {v:.4f}" for k, v in per.items())))
    return rows


def _dropin_claims(study, runs, an, scale) -> list[dict]:
    T = final_step(runs)
    succ = an.get("success_acc", 0.85)
    succ = float(succ.get(scale, min(succ.values())) if isinstance(succ, dict) else succ)
    fail = float(an.get("fail_acc", 0.5))
    acc = {m: max(scalar(runs, f"{pre}test_acc", T), scalar(runs, f"{pre}test_acc_mc", T))
           for m, pre in (("dropout", ""), ("dropin", "dropin_"))}
    det = ", ".join(f"{m}: deterministic {scalar(runs, f'{pre}test_acc', T):.3f}, MC "
                    f"{scalar(runs, f'{pre}test_acc_mc', T):.3f}, final loss "
                    f"{scalar(runs, f'{pre}train_loss', T):.3f}"
                    for m, pre in (("dropout", ""), ("dropin", "dropin_")))
    return [
        row(study, "dropout_learns", "Dropout training succeeds on the task", SOURCE_DROPIN,
            measured=acc["dropout"], expected=f"test accuracy >= {succ:g}", tolerance=0.0,
            verdict=_ok(acc["dropout"] >= succ), detail=det),
        row(study, "dropin_fails", "Dropin (units set to 1 instead of 0) does not work where dropout does",
            SOURCE_DROPIN, measured=acc["dropin"],
            expected=f"dropin test accuracy <= {fail:g} while dropout >= {succ:g}", tolerance=0.0,
            verdict=_ok(acc["dropin"] <= fail and acc["dropout"] >= succ), detail=det,
            values={"acc_dropout": acc["dropout"], "acc_dropin": acc["dropin"]}),
    ]


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    an = cfg.get("analysis", {})
    study = cfg["name"]
    T = final_step(runs)
    u0, u1 = unit_table(runs, 0), unit_table(runs, T)
    rows = []
    rows += _bound_claims(study, u1, "final", an)
    rows += _bound_claims(study, u0, "init", an)
    rows += _approx_claims(study, u1, an)
    rows += _error_claims(study, u0, u1, an)
    rows += _variance_claims(study, u0, u1, runs, an)
    rows += _pair_claims(study, runs, 0, T, an)
    rows += _sigma_prime_claims(study, u0, u1, an)
    rows += _learning_claims(study, runs, an)
    rows += _dropin_claims(study, runs, an, cfg.get("scale", "quick"))
    return frame(rows)
