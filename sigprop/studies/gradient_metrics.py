"""Study: gradient metrics of deep dropout networks without gradient independence (000 Figs. 2-3).

A measurement at initialization, no training: every model is a random depth-L
dropout network (000 Eq. 1) fed a pair of inputs at its mean-field fixed point;
the per-layer metrics ``g_aa``, ``g_ab`` and ``g~_ab`` of 000 Eq. (8) are
computed exactly from autograd deltas with the same weights forward and backward
(:mod:`sigprop.measure.gradients`).  Theory: 000 Eq. (12) (linear nets) from
:mod:`sigprop.theory.gradients`, and the slopes ``chi_1`` (Eq. 10) and ``chi_2``
from :mod:`sigprop.theory.meanfield`, for the laws ``g^l ∝ chi^(L-l)``
(Eqs. 11 and 13) anchored at the measured last layer.

Claims: (1) Eq. (12) predicts the mean of ``g_aa`` in linear nets; (2) in linear
nets with ρ < 1 the mean of ``g_ab`` decays per layer at ``chi_1``, not ``chi_2``,
away from the output; (3) for ReLU, tanh and hard tanh the per-layer decay rates
of ``g_aa`` and ``g~_ab`` equal ``chi_1`` (000 Fig. 3, conjecture Eq. 13).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import tables
from ..claims import frame, row
from ..runs import SETTING_FIELDS
from ..figures.gradient_metrics import fig2, fig3
from ..theory import gradients as tg
from ..theory import meanfield

TASK = "measure"
FIGURES = {"gradient_metrics_linear": fig2, "gradient_metrics_activations": fig3}
CAPTIONS = {
    "gradient_metrics_linear": (
        "Gradient metrics of random linear dropout networks (000 Fig. 2, sigma_w^2 = 0.5, "
        "sigma_b^2 = 0.1), mean over instantiations (dashed, ±1 SE band) against theory (solid). "
        "(a) g_aa^l with 000 Eq. 12; (b) g_ab^l (absolute value per network, then mean) with Eq. 12; "
        "(c) g_ab^l in the last layers; (d) g_ab^l with the law chi_1^(L-l) anchored at the measured "
        "last layer (dotted: chi_2^(L-l))."),
    "gradient_metrics_activations": (
        "g_aa^l (solid), g~_ab^l (dashed) and chi_1^(L-l) anchored at the measured last-layer g_aa "
        "(dotted) for ReLU (sigma_w^2 = 1.0), tanh and hard tanh (sigma_w^2 = 1.4), sigma_b^2 = 0.1, "
        "per keep rate rho (000 Fig. 3); mean over instantiations; chi_1 from 000 Eq. 10 at q*."),
}
SOURCE_EQ12 = "000 §4.1, Eqs. 8, 12, Fig. 2(a)"
SOURCE_CHI1 = "000 §4.1, Eq. 13, Fig. 2(b-d)"
SOURCE_FIG3 = "000 §4.2, Eq. 13, Fig. 3"
SETTING = list(SETTING_FIELDS)


def measure(shard, params, buffers, cfg: dict, device: str = "cpu") -> pd.DataFrame:
    """Rows ``metric ∈ {g_aa, g_ab, g_ab_abs (g~_ab), g_ab_signed}`` per run and layer ``1..L``."""
    from ..measure.gradients import gradient_metrics  # torch: imported only in the job
    runs = shard.runs
    g = gradient_metrics(params, runs)
    frames = []
    for metric, v in g.items():
        m, n_layers = v.shape
        frames.append(pd.DataFrame({"model": np.repeat(np.arange(m), n_layers),
                                    "layer": np.tile(np.arange(1, n_layers + 1), m),
                                    "metric": metric, "value": v.ravel()}))
    long = pd.concat(frames, ignore_index=True).assign(probe=0)
    return tables.run_rows(shard, long, device, order=("layer",))


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """Per setting: q*, c*, chi_1, chi_2 (``x`` NaN); for linear nets Eq. 12 ``g_aa``, ``g_ab``
    against ``x = L - l`` (layers from the output, 0..``layers_from_output``), which is all
    Eq. 12 depends on, so one table serves every depth."""
    kmax = int(theory_cfg.get("layers_from_output", 200))
    rows = []
    for s in settings:
        act, sw, sb, rho = s["activation"], s["sigma_w2"], s["sigma_b2"], s["keep_rate"]
        q = float(meanfield.q_star(sw, sb, rho, act))
        base = {"study": study, "activation": act, "sigma_w2": sw, "sigma_b2": sb, "keep_rate": rho}
        scal = {"q_star": q, "c_star": float(meanfield.c_star(sw, sb, rho, act)),
                "chi1": float(meanfield.chi1(sw, sb, rho, act)),
                "chi2": float(meanfield.chi2(sw, sb, rho, act))}
        rows.append(pd.DataFrame([{**base, "quantity": k, "x": np.nan, "value": v}
                                  for k, v in scal.items()]))
        if act == "linear" and np.isfinite(q) and sw < 1.0:
            k = np.arange(kmax + 1)
            rows.append(pd.DataFrame({**base, "quantity": "g_aa_eq12", "x": k,
                                      "value": tg.g_aa(kmax - k, kmax, sw, sb, rho)}))
            rows.append(pd.DataFrame({**base, "quantity": "g_ab_eq12", "x": k,
                                      "value": tg.g_ab(kmax - k, kmax, sw, sb, rho)}))
    return pd.concat(rows, ignore_index=True)


# ------------------------------------------------------------------ analysis


def settings_of(runs: pd.DataFrame) -> list[dict]:
    keys = SETTING + ["depth"]
    return [dict(zip(keys, t)) for t in sorted(set(map(tuple, runs[keys].drop_duplicates().to_numpy())))]


def _select(runs: pd.DataFrame, s: dict) -> pd.DataFrame:
    m = np.ones(len(runs), bool)
    for k, v in s.items():
        m &= (runs[k] == v).to_numpy() if isinstance(v, str) else np.isclose(runs[k], v)
    return runs[m]


def matrix(runs: pd.DataFrame, s: dict, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """``[instantiations, layers]`` values of ``metric`` for setting ``s`` and the layers."""
    d = _select(runs[runs.metric == metric], s)
    p = d.pivot_table(index="run_id", columns="layer", values="value", aggfunc="first").sort_index(axis=1)
    return p.to_numpy(float), p.columns.to_numpy(int)


def profile(runs: pd.DataFrame, s: dict, metric: str) -> pd.DataFrame:
    """Per layer: mean, SE, n over instantiations, and the SE of the log of the mean."""
    v, layers = matrix(runs, s, metric)
    n = v.shape[0]
    mean = v.mean(0)
    se = v.std(0, ddof=1) / np.sqrt(n) if n > 1 else np.full_like(mean, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return pd.DataFrame({"layer": layers, "mean": mean, "se": se, "n": n, "se_log": se / mean})


def theory_value(theory: pd.DataFrame, s: dict, quantity: str) -> float:
    t = _select(theory[theory.quantity == quantity], {k: s[k] for k in SETTING})
    return float(t.value.iloc[0]) if len(t) else np.nan


def theory_curve(theory: pd.DataFrame, s: dict, quantity: str, layers: np.ndarray) -> np.ndarray:
    """Eq. 12 at layers ``l`` of a depth-``s['depth']`` net (the table is indexed by L - l)."""
    t = _select(theory[theory.quantity == quantity], {k: s[k] for k in SETTING}).set_index("x").value
    k = (int(s["depth"]) - np.asarray(layers)).astype(float)
    return t.reindex(k).to_numpy(float)


def decay_rate(v: np.ndarray, layers: np.ndarray, use: np.ndarray, n_boot: int = 200,
               seed: int = 0) -> tuple[float, float]:
    """Per-layer decay factor ``r`` (``mean g^l ∝ r^(L-l)``) by a least-squares line through
    ``log mean`` over the layers ``use``; SE by bootstrap over the instantiations."""
    x = layers[use].astype(float)

    def rate(rows):
        m = rows[:, use].mean(0)
        if np.any(m <= 0):
            return np.nan
        return float(np.exp(-np.polyfit(x, np.log(m), 1)[0]))

    r = rate(v)
    rng = np.random.default_rng(seed)
    boot = [rate(v[rng.integers(0, len(v), len(v))]) for _ in range(n_boot)] if len(v) > 1 else []
    se = float(np.nanstd(boot, ddof=1)) if len(boot) > 1 else np.nan
    return r, se


def fit_window(layers: np.ndarray, depth: int, min_from_output: int, min_layer: int = 1) -> np.ndarray:
    return (depth - layers >= min_from_output) & (layers >= min_layer)


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    an = cfg.get("analysis", {})
    study = cfg["name"]
    k = float(an.get("z_max", 3.0))
    want = float(an.get("within_fraction", 0.95))
    ftol = float(an.get("fraction_tolerance", 0.05))
    rtol = float(an.get("rate_rel_tolerance", 0.02))
    n_boot = int(an.get("n_boot", 200))
    gab_from = int(an.get("gab_fit_min_from_output", 25))
    act_from = int(an.get("fit_min_from_output", 5))
    rows = []
    settings = settings_of(runs)
    # (1) Eq. 12 predicts g_aa in linear nets
    for s in [s for s in settings if s["activation"] == "linear"]:
        p = profile(runs, s, "g_aa")
        th = theory_curve(theory, s, "g_aa_eq12", p.layer.to_numpy())
        lr = np.log(p["mean"].to_numpy() / th)
        z = lr / p.se_log.to_numpy()
        frac = float(np.mean(np.abs(z) <= k))
        rows.append(row(study, f"eq12_predicts_g_aa[linear, rho={s['keep_rate']:g}]",
                        "Eq. 12 predicts the mean g_aa^l of linear dropout networks at every layer",
                        SOURCE_EQ12, measured=frac,
                        expected=f">= {want:g} of layers with |log(mean/Eq.12)| <= {k:g} SE of the log mean",
                        tolerance=ftol, verdict="pass" if frac >= want - ftol else "fail",
                        detail=(f"L = {s['depth']}, {int(p.n.min())} instantiations; max |log ratio| "
                                f"{np.nanmax(np.abs(lr)):.3f} (max |z| {np.nanmax(np.abs(z)):.2f}); "
                                f"ratio at l = 1: {np.exp(lr[0]):.3f}, at l = L: {np.exp(lr[-1]):.3f}")))
    # (2) g_ab decays at chi_1, not chi_2 (linear, rho < 1), far from the output
    for s in [s for s in settings if s["activation"] == "linear" and s["keep_rate"] < 1]:
        v, layers = matrix(runs, s, "g_ab")
        use = fit_window(layers, int(s["depth"]), gab_from)
        c1, c2 = theory_value(theory, s, "chi1"), theory_value(theory, s, "chi2")
        if use.sum() < 3:
            rows.append(row(study, f"g_ab_follows_chi1[linear, rho={s['keep_rate']:g}]",
                            "g_ab^l = g_ab^{l+1} chi_1, not chi_2", SOURCE_CHI1, measured=np.nan,
                            expected=f"chi1 = {c1:.4f}", tolerance=np.nan, verdict="fail",
                            detail=f"fewer than 3 layers at least {gab_from} from the output"))
            continue
        r, se = decay_rate(v, layers, use, n_boot)
        ok = abs(r - c1) <= k * se and abs(r - c1) < abs(r - c2)
        rows.append(row(study, f"g_ab_follows_chi1[linear, rho={s['keep_rate']:g}]",
                        "Away from the output the mean g_ab^l of linear dropout networks decays per "
                        "layer at chi_1 = sigma_w^2/rho (Eq. 13), not at chi_2 = sigma_w^2",
                        SOURCE_CHI1, measured=r, expected=f"chi1 = {c1:.4f} (chi2 = {c2:.4f})",
                        tolerance=k * se, verdict="pass" if ok else "fail",
                        detail=(f"fit of log mean g_ab over layers {layers[use].min()}-{layers[use].max()} "
                                f"(>= {gab_from} from the output L = {s['depth']}), {len(v)} "
                                f"instantiations; bootstrap SE {se:.4f}; |r - chi1| = {abs(r - c1):.4f}, "
                                f"|r - chi2| = {abs(r - c2):.4f}")))
    # (3) Fig. 3: g_aa and g~_ab decay at chi_1 for nonlinear activations
    for s in [s for s in settings if s["activation"] != "linear"]:
        c1 = theory_value(theory, s, "chi1")
        for metric, label in (("g_aa", "g_aa"), ("g_ab_abs", "g~_ab")):
            v, layers = matrix(runs, s, metric)
            use = fit_window(layers, int(s["depth"]), act_from)
            r, se = decay_rate(v, layers, use, n_boot)
            tol = max(k * se, rtol * c1)
            ok = bool(np.isfinite(r) and abs(r - c1) <= tol)
            rows.append(row(study, f"{metric}_decays_at_chi1[{s['activation']}, rho={s['keep_rate']:g}]",
                            f"{label}^l = {label}^{{l+1}} chi_1 for {s['activation']} dropout networks",
                            SOURCE_FIG3, measured=r, expected=f"chi1 = {c1:.4f}", tolerance=tol,
                            verdict="pass" if ok else "fail",
                            detail=(f"fit of log mean over layers {layers[use].min()}-{layers[use].max()} "
                                    f"(L = {s['depth']}), {len(v)} instantiations; bootstrap SE {se:.4f}; "
                                    f"tolerance max({k:g} SE, {rtol:g} chi1); "
                                    f"chi2 = {theory_value(theory, s, 'chi2'):.4f}")))
    return frame(rows)
