"""Claims of Baldi & Sadowski 2014 (002) §§9.5-9.6, 11.6-11.7 on trained logistic networks:
the Eq. 87 bounds and second-order approximations (Figs. 9.3-9.5), the error distributions
(Figs. 9.6-9.7), variances and covariances (Figs. 9.8-9.15), sparsity and learning phases
(Figs. 11.1-11.3) and dropin (§11.6), declared in ``CLAIMS`` (``__init__.py``).

Each claim's statistic is computed per trained network (:func:`_seed_stats`, one seed
each) and judged on its mean over seeds with the SE over seeds (:func:`claims_table`,
``claims.seed_z`` SE margins); with one seed no claim is decided.  The Bound 2 rows follow from
the Bound 1 rows (Bound 1 <= Bound 2 pointwise since V <= E(1-E)) and are sanity rows.

Papers cited by prefix: 002 = Baldi, Sadowski (2014), doi:10.1016/j.artint.2014.02.004.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...claims import false_pass_z, z_above
from ...claims.declared import build, result
from ...theory import ensembles as ens
from . import CLAIMS, NO_UNITS, PER_SEED, SOURCE
from .analysis import (
    active_mean,
    final_step,
    layer_series,
    median_abs_log_ratio,
    pair_table,
    rms,
    scalar,
    settle_change,
    skew_kurtosis,
    unit_table,
    within,
)

NESTED = {"nwgm_within_bound2": "nwgm_within_bound1", "w_within_bound2": "w_within_bound1"}
"""Bound 1 <= Bound 2 pointwise (V <= E(1-E)), so a pair within Bound 1 (+ MC allowance) is
within Bound 2: the Bound 2 rows follow from the Bound 1 rows and are sanity rows."""
FRACTIONS = {
    "nwgm_within_bound1",
    "w_within_bound1",
    "w1mw_bounds_variance",
    "zero_better_variance_estimate",
}
"""Claims on a fraction of (unit, input) pairs: their SE over seeds has a binomial floor."""


def _layers(s: pd.Series, fmt: str) -> str:
    return ", ".join(f"l{k}: {v:{fmt}}" for k, v in s.items())


def _bounds(u: pd.DataFrame, tag: str, z: float) -> dict:
    b = ens.eq87_bounds(u.E.to_numpy(), u.V.to_numpy())
    out = {}
    for q, col, se in (("NWGM", "d_nwgm", "se_nwgm"), ("W", "d_w", "se_e")):
        for bound in ("bound1", "bound2"):
            inside = within(u[col].to_numpy(), b[bound], u[se].to_numpy(), z)
            out[f"{q.lower()}_within_{bound}", tag] = dict(
                measured=float(inside.mean()),
                q=q,
                pairs=len(u),
                layers=_layers(u.assign(k=inside).groupby("layer").k.mean(), ".3f"),
                raw=(np.abs(u[col].to_numpy()) <= b[bound]).mean(),
            )
    return out


def _approx(u: pd.DataFrame, z: float) -> dict:
    res = u[np.abs(u.d_nwgm) > z * u.se_nwgm]
    diff = (res.E - res.NWGM).to_numpy()
    a85 = ens.e_minus_nwgm_second_order(res.E.to_numpy(), res.V.to_numpy())
    a202 = ens.e_minus_nwgm_second_order_about_mean(res.E.to_numpy(), res.V.to_numpy())
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(diff) / np.abs(a85)
    ratio = ratio[np.isfinite(ratio)]
    some = len(res) > 0
    f = dict(
        resolved=len(res),
        pairs=len(u),
        l85=median_abs_log_ratio(diff, a85),
        l202=median_abs_log_ratio(diff, a202),
        med=float(np.median(ratio)) if ratio.size else np.nan,
        corr=float(np.median(1.0 / (2 * res.E * (1 - res.E)))) if some else np.nan,
        sign85=float(np.mean(np.sign(diff) == np.sign(a85))) if some else np.nan,
    )
    return {
        ("eq202_beats_eq85", "final"): dict(f, measured=f["l202"]),
        ("eq85_predicts_e_minus_nwgm", "final"): dict(f, measured=f["med"]),
    }


def _errors(u: pd.DataFrame, tag: str) -> dict:
    out = {}
    for q, col in (("NWGM", "d_nwgm"), ("W", "d_w")):
        g = u.groupby("layer")[col]
        r = g.apply(rms)
        sk = g.apply(lambda x: skew_kurtosis(x)[0])
        ku = g.apply(lambda x: skew_kurtosis(x)[1])
        shape = ", ".join(
            f"l{k}: {a:+.2f}/{b:+.2f}" for (k, a), b in zip(sk.items(), ku.to_numpy())
        )
        s = q.lower()
        out[f"{s}_error_small", tag] = dict(measured=float(r.max()), q=q, layers=_layers(r, ".4f"))
        out[f"{s}_error_gaussian_skew", tag] = dict(
            measured=float(sk.abs().max()), q=q, shape=shape
        )
        out[f"{s}_error_gaussian_kurtosis", tag] = dict(
            measured=float(ku.abs().max()), q=q, shape=shape
        )
    r = u.groupby("layer").d_w.apply(rms)
    out["w_error_no_depth_growth", tag] = dict(
        measured=float(r.iloc[-1] / r.iloc[0]), layers=_layers(r, ".4f")
    )
    return out


def _variances(u: pd.DataFrame, tag: str) -> dict:
    w1mw = u.W * (1 - u.W)
    d0, d1 = np.abs(u.EO2 - u.W**2), np.abs(u.EO2 - u.W)
    return {
        ("w1mw_bounds_variance", tag): dict(
            measured=float(np.mean(u.V <= w1mw)), pairs=len(u), v=u.V.median(), w1mw=w1mw.median()
        ),
        ("zero_better_variance_estimate", tag): dict(
            measured=float(np.mean(d0 < d1)), pairs=len(u), d0=np.median(d0), d1=np.median(d1)
        ),
    }


def _variance_rise(runs: pd.DataFrame) -> dict:
    v, g = layer_series(runs, "traj_V").mean(axis=1), layer_series(runs, "traj_gap").mean(axis=1)
    return {
        ("variance_rises_during_learning", ""): dict(
            measured=float(v.max() / v.iloc[0]),
            gap_drop=float(g.iloc[0] - g.min()),
            v0=v.iloc[0],
            v_max=v.max(),
            v_step=v.idxmax(),
            v_end=v.iloc[-1],
            g0=g.iloc[0],
            g_min=g.min(),
            g_step=g.idxmin(),
            g_end=g.iloc[-1],
        )
    }


def _learning(runs: pd.DataFrame, p) -> dict:
    """Sparsity (Fig. 11.1) and the phases of active and inactive units (Figs. 11.2-11.3)."""
    out = {}
    T = final_step(runs)
    fr = runs[(runs.metric == "act_frac_below")].groupby(["step", "layer"]).value.mean()
    fin, ini = fr.loc[T], fr.loc[0]
    out["sparse_activations", "final"] = dict(
        measured=float(fin.min()),
        layers=", ".join(f"l{k}: {fin[k]:.3f} ({ini[k]:.3f})" for k in fin.index),
    )
    a = active_mean(runs, "active_std_mean").dropna()
    ina = layer_series(runs, "inactive_std_mean").mean(axis=1).dropna()
    na = dict(measured=np.nan, empty=True)
    if len(a):
        f = dict(
            a0=a.iloc[0], a_max=a.max(), a_step=a.idxmax(), a_end=a.iloc[-1], a_last=a.index[-1]
        )
        out["active_units_variance_rises", ""] = dict(f, measured=float(a.max() / a.iloc[0]))
        ch = settle_change(a, float(p.claims.settle_window))
        out["active_units_variance_settles", ""] = dict(f, measured=ch)
    else:
        out["active_units_variance_rises", ""] = out["active_units_variance_settles", ""] = na
    out["inactive_units_stay_consistent", ""] = (
        dict(
            measured=float(ina.max() / a.max()), i0=ina.iloc[0], i_max=ina.max(), i_end=ina.iloc[-1]
        )
        if len(a) and len(ina)
        else na
    )
    act = layer_series(runs, "active_std_mean")
    per = act.loc[T] if T in act.index else pd.Series(dtype=float)
    out["active_consistency_across_layers", "final"] = dict(
        measured=float(per.iloc[-1] / per.iloc[0]) if len(per) > 1 else np.nan,
        layers=_layers(per, ".4f"),
    )
    return out


def _pairs(runs: pd.DataFrame, step: int, tag: str) -> dict:
    out = {}
    for kind, name in (("u", "unconnected"), ("c", "connected")):
        pt = pair_table(runs, step, kind)
        if not len(pt):
            continue
        err, zero = np.abs(pt.EOO - pt.WW), np.abs(pt.EOO)
        out[f"ww_approximates_pairs_{name}", tag] = dict(
            measured=float(np.median(err) / np.median(zero)),
            pairs=len(pt),
            err=np.median(err),
            zero=np.median(zero),
            closer=np.mean(err < zero),
        )
        if kind == "c":
            e1, e2 = float(np.mean(err)), float(np.mean(np.abs(pt.EOO - pt.WijW)))
            helps = "helps" if tag == "final" else "no_help"
            out[f"wij_correction_{helps}", tag] = dict(measured=e2 / e1, e1=e1, e2=e2)
    return out


def _dropin(runs: pd.DataFrame) -> dict:
    T = final_step(runs)
    f = {
        f"{m}_{k}": scalar(runs, f"{pre}{k}", T)
        for m, pre in (("dropout", ""), ("dropin", "dropin_"))
        for k in ("test_acc", "test_acc_mc", "train_loss")
    }
    return {
        (m, ""): dict(f, measured=max(f[f"{n}_test_acc"], f[f"{n}_test_acc_mc"]))
        for m, n in (("dropout_learns", "dropout"), ("dropin_fails", "dropin"))
    }


def _seed_stats(runs: pd.DataFrame, p) -> dict:
    """The statistics of ONE trained network (one seed), per (claim, qualifier): its measured
    value and the fields of its declared texts."""
    T = final_step(runs)
    u0, u1 = unit_table(runs, 0), unit_table(runs, T)
    z = float(p.analysis.noise_z)
    out = {**_bounds(u1, "final", z), **_bounds(u0, "init", z), **_approx(u1, z)}
    out |= {**_errors(u0, "init"), **_errors(u1, "final")}
    out |= {**_variances(u0, "init"), **_variances(u1, "final")}
    out |= _variance_rise(runs)
    out |= {**_pairs(runs, 0, "init"), **_pairs(runs, T, "final")}
    for tag, u in (("init", u0), ("final", u1)):
        d = np.abs(u.Esp - u.spE)
        out["sigma_prime_of_mean", tag] = dict(
            measured=float(d.median()), p95=d.quantile(0.95), sp=u.spE.median()
        )
    return out | _learning(runs, p) | _dropin(runs)


def trained_seeds(per: dict, p) -> tuple[list, list]:
    """``(trained, untrained)`` run ids: a seed trained when its dropout net's final test
    accuracy (the ``dropout_learns`` statistic) reaches ``claims.trained_acc``; without that
    statistic every seed counts as trained."""
    acc = {rid: s.get(("dropout_learns", ""), {}).get("measured", np.nan) for rid, s in per.items()}
    if all(not np.isfinite(a) for a in acc.values()):
        return list(per), []
    t = float(p.claims.trained_acc)
    return (
        [rid for rid, a in acc.items() if np.isfinite(a) and a >= t],
        [rid for rid, a in acc.items() if not (np.isfinite(a) and a >= t)],
    )


def _rules(c) -> dict:
    """How a claim's per-seed statistic is judged: ``(effects, tolerance)`` where ``effects(r)``
    maps one seed's statistics to the numbers that must all be positive for the claim (the
    claim's threshold subtracted, oriented so that > 0 means the paper's statement holds), in
    the order of the conditions its declared test names."""

    def ge(t, tol=0.0):
        return (lambda r: [r["measured"] - t]), float(tol)

    def le(t, tol=None):
        return (lambda r: [t - r["measured"]]), float(t if tol is None else tol)

    fac, rise = c.approx_factor, c.rise_factor
    return {
        "nwgm_within_bound1": ge(c.within_fraction),
        "w_within_bound1": ge(c.within_fraction),
        "eq202_beats_eq85": ((lambda r: [r["l85"] - r["l202"]]), 0.0),
        "eq85_predicts_e_minus_nwgm": (
            (lambda r: [r["measured"] - 1 / fac, fac - r["measured"]]),
            float(fac),
        ),
        "nwgm_error_small": le(c.small_rms),
        "nwgm_error_gaussian_skew": le(c.max_skew),
        "nwgm_error_gaussian_kurtosis": le(c.max_excess_kurtosis),
        "w_error_small": le(c.small_rms),
        "w_error_gaussian_skew": le(c.max_skew),
        "w_error_gaussian_kurtosis": le(c.max_excess_kurtosis),
        "w_error_no_depth_growth": le(c.depth_growth),
        "w1mw_bounds_variance": ge(c.within_fraction),
        "zero_better_variance_estimate": ge(c.majority_fraction),
        "variance_rises_during_learning": (
            (lambda r: [r["measured"] - rise, r["gap_drop"]]),
            float(rise),
        ),
        "ww_approximates_pairs_unconnected": le(c.pair_ratio),
        "ww_approximates_pairs_connected": le(c.pair_ratio),
        "wij_correction_no_help": ge(1.0, 1.0),
        "wij_correction_helps": le(1.0),
        "sigma_prime_of_mean": le(c.sigma_prime_tol),
        "sparse_activations": ge(c.sparse_fraction),
        "active_units_variance_rises": ge(rise, rise),
        "active_units_variance_settles": le(c.settle_tol),
        "inactive_units_stay_consistent": le(c.inactive_ratio),
        "active_consistency_across_layers": le(c.layer_sd_ratio),
        "dropout_learns": ge(c.success_acc),
        "dropin_fails": le(c.fail_acc, 0.0),
    }


def _floor_se(r: dict, threshold: float, n_seeds: int) -> float:
    """A floor for the SE over seeds of a fraction: the binomial SE at the threshold of the
    pooled (unit, input) pairs (so that identical fractions over seeds, e.g. all 1.0, do not
    claim an SE of 0)."""
    n = r.get("pairs", np.nan)
    return float(np.sqrt(threshold * (1 - threshold) / (n * n_seeds))) if np.isfinite(n) else 0.0


def _measured_se(measured: np.ndarray, first: np.ndarray | None, first_se: float) -> float:
    """The SE of a row's measured seed mean: the SE its test used for its first condition when
    that condition is the measured value minus a fixed threshold (or the reverse) in every seed,
    else the plain SE over seeds of the measured values (a condition on other statistics);
    NaN with fewer than two seeds or a missing value."""
    if first is None or len(measured) < 2 or not np.isfinite(measured).all():
        return float("nan")
    for sign in (1.0, -1.0):
        offset = first - sign * measured
        if np.ptp(offset) <= 1e-12 * max(1.0, float(np.abs(offset).max())):
            return float(first_se)
    return float(np.std(measured, ddof=1) / np.sqrt(len(measured)))


def _judge(e: np.ndarray, n: int, k: float, floor: float) -> tuple:
    """``(verdict, detectable, margins, SEs)`` of the effects ``e`` [seeds, conditions]: every
    condition's mean must clear ``k`` SE over seeds (at least ``floor``) to pass."""
    if n < 2 or not np.isfinite(e).all():
        with np.errstate(invalid="ignore"):
            emean = np.array(
                [
                    np.mean(col[np.isfinite(col)]) if np.isfinite(col).any() else np.nan
                    for col in e.T
                ]
            )
        return "inconclusive", np.nan, emean, np.full(e.shape[1], np.nan)
    emean = e.mean(0)
    se = np.maximum(e.std(0, ddof=1) / np.sqrt(n), floor)
    parts = [z_above(float(a), float(b), k) for a, b in zip(emean, se)]
    vs = [q[0] for q in parts]
    verdict = (
        "pass"
        if all(x == "pass" for x in vs)
        else ("fail" if any(x == "fail" for x in vs) else "inconclusive")
    )
    return verdict, float(max(q[2] for q in parts)), emean, se


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    """One row per claim: the claim's statistic is computed per trained network (seed), then
    judged on its mean over seeds with SE = SD / sqrt(n_seeds) (``claims.seed_z`` SE margins,
    :func:`sigprop.claims.z_above`; several conditions must all clear their margins).  Rows
    whose statistic follows from another row (:data:`NESTED`) are sanity rows; [final] rows
    average only the seeds that trained (:func:`trained_seeds`)."""
    k = float(p.claims.seed_z)
    ids = sorted(runs.run_id.unique())
    seeds = {rid: int(runs.loc[runs.run_id == rid, "seed"].iloc[0]) for rid in ids}
    per = {rid: _seed_stats(runs[runs.run_id == rid], p) for rid in ids}
    trained, untrained = trained_seeds(per, p)
    rules = _rules(p.claims)
    thresholds = dataclasses.asdict(p.claims) | dict(
        noise_z=p.analysis.noise_z, sparse_threshold=p.measure.sparse_threshold, k=k
    )
    out_names = ", ".join(f"seed {seeds[rid]}" for rid in untrained)
    results, verdicts = [], {}
    for (claim, tag), stats0 in per[ids[0]].items():
        final = tag == "final"
        use = [rid for rid in ids if rid in trained] if final else ids
        n = len(use)
        rs = [per[rid][claim, tag] for rid in use] or [stats0]
        m = np.array([r["measured"] for r in rs], float)[:n]
        first = rs[0]
        mean = float(np.nanmean(m)) if np.isfinite(m).any() else np.nan
        vals = {**{f"seed{seeds[rid]}": x for rid, x in zip(use, m)}, "n_seeds": n}
        left = final and untrained
        f = {key: v for key, v in first.items() if key != "measured"} | thresholds
        f |= dict(
            n=n,
            trained="trained " if final else "",
            seed=seeds[use[0]] if use else "",
            per_seed=", ".join(f"seed {seeds[rid]}: {x:.4g}" for rid, x in zip(use, m)),
            left_out=f"; seeds that did not train (final dropout test accuracy below "
            f"{float(p.claims.trained_acc):g}) left out of this [final] statistic: {out_names}"
            if left
            else "",
            untrained=f"; {len(untrained)} untrained seed(s) left out ({out_names})"
            if left
            else "",
        )
        texts = (
            {"detail": "no trained seed{left_out}"}
            if not use
            else ({"detail": PER_SEED + NO_UNITS} if first.get("empty") else None)
        )
        if claim in NESTED:
            tight = [per[rid][NESTED[claim], tag]["measured"] for rid in use]
            ok = all(r["measured"] >= b for r, b in zip(rs, tight))
            results.append(
                result(
                    claim,
                    tag,
                    measured=mean,
                    tolerance=0.0,
                    verdict="pass" if ok else "fail",
                    values=vals,
                    texts=texts,
                    tighter=f"{NESTED[claim]}[{tag}]",
                    **f,
                )
            )
            continue
        effects, tolerance = rules[claim]
        e = np.array([effects(r) for r in rs], float)  # [seeds, conditions]
        fraction = claim in FRACTIONS and n >= 2  # a binomial floor at the threshold
        floor = _floor_se(first, mean - e.mean(0)[0], n) if fraction else 0.0
        verdict, det, emean, se = _judge(e, n, k, floor)
        if claim == "dropin_fails" and verdicts.get("dropout_learns") != "pass":
            verdict = "inconclusive"
        verdicts[claim] = verdict
        vals["se"] = float(se[0]) if np.isfinite(se[0]) else np.nan
        decided = n >= 2 and np.isfinite(e).all()
        results.append(
            result(
                claim,
                tag,
                measured=mean,
                tolerance=tolerance,
                verdict=verdict,
                values=vals,
                detectable=det,
                se=_measured_se(m, e[:, 0] if decided else None, vals["se"]),
                false_pass=false_pass_z(k, n - 1),
                texts=texts,
                margins=", ".join(f"{a:+.4g} (SE {b:.2g})" for a, b in zip(emean, se)),
                **f,
            )
        )
    return build(p.study, CLAIMS, results, SOURCE)
