"""Study: dropout ensemble averages without training (002, Baldi & Sadowski 2014).

Three simulations, each a grid block of the config whose label names its entry in
``theory.simulations`` (``part``: bounds, sampling or linear):

* **bounds** (Sec. 8, Eq. 87, Figs. 8.1-8.2): each run draws ``batch_size`` sets of
  ``width`` logistic outputs ``O_i = sigma(S_i)``, ``S_i ~ N(mu, s^2)`` (``mu``, ``s``
  uniform per set) and records every set's E, V, NWGM.  Theory: the curves of Eq. 87
  (:func:`sigprop.theory.ensembles.eq87_bounds`, :func:`~sigprop.theory.ensembles.eq87_argmax`).
* **sampling** (Secs. 9.3-9.4, Eqs. 103-108, Figs. 9.1-9.2): each run draws ``batch_size``
  samples of ``m = width`` values from one of the four distributions of the captions and
  records ``E_S`` and ``NWGM_S`` of every sample.  Theory: population moments and Eq. 104.
* **linear** (Secs. 2-3, Eqs. 15-17, 24-25): each run is its own initialized linear fc
  network with dropout on inputs (``input_keep``) and hidden units (``keep_rate``); the
  exact layer means/covariances are compared with ``batch_size`` dropout masks of one input.

The simulation math is in :mod:`sigprop.measure.ensembles_mc`.  Measured rows: ``probe``
is the set / sample / unit (or unit pair ``i*k + j``) index, ``layer`` the network layer
(0 outside the linear part).

Findings recorded in the claims: the Eq. 85 second-order term underestimates E - NWGM by
the factor 2E(1-E) (Eq. 202 of App. B does not), see :mod:`sigprop.theory.ensembles`.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .. import tables
from ..claims import frame, row
from ..figures.dropout_ensemble import bounds_figure, linear_figure, sampling_figure
from ..measure import ensembles_mc as mc
from ..theory import ensembles

TASK = "measure"
PARTS = ("bounds", "sampling", "linear")
FIGURES = {"dropout_bounds": bounds_figure, "dropout_sampling": sampling_figure,
           "dropout_linear": linear_figure}
CAPTIONS = {
    "dropout_bounds": (
        "002 Figs. 8.1-8.2 (Eq. 87 as printed): (a) the curve E(1-E)|1-2E|/(1-2E(1-E)) (Bound 2) "
        "and (b) 2E(1-E)|1-2E|, with their maxima on [0, 0.5] at E = 0.5 - sqrt(sqrt5 - 2)/2 and "
        "0.5 - sqrt(3)/6 (dotted). Points: simulated sets of logistic outputs O = sigma(S), "
        "S ~ N(mu, s^2) with mu, s uniform per set (colour: s), at their measured E and |E - NWGM|. "
        "(c) measured E - NWGM against the second-order approximations Eq. 85, "
        "V(1-2E)/(1-2V), and Eq. 202 (App. B), for sets with |1-2E| >= 0.1; dashed: equality. "
        "The simulation supports the curves as (approximate) bounds on |E - NWGM| for the spreads "
        "drawn: the few points above a curve are sets with large s. It does not support Eq. 85 "
        "as an approximation: the measured difference is larger by about 1/(2E(1-E)), which "
        "Eq. 202 accounts for (see the claims)."),
    "dropout_sampling": (
        "002 Figs. 9.1-9.2. Left (Fig. 9.1): histograms of NWGM_S (filled) and E_S (line) over "
        "repeated samples of m values with weights 1/m from U[0,1] (upper left), U[0,0.5] (lower "
        "left), N(0.5, 0.1) (upper right) and N(0.25, 0.05) (lower right), normals truncated to "
        "(0,1); ticks: population mean mu_O (black) and Eq. 104's NWGM mean sigma(mu_S) (red). "
        "Right (Fig. 9.2): Pearson correlation (dashed: the claims' threshold r = 0.9) and "
        "covariance between E_S and NWGM_S against the sample size m, each from the repeated "
        "samples at that m; dotted: the 1/m law through the largest m. Error bars: ±1 SE "
        "(Fisher transform for r). The simulation supports the paper's statements: r is close "
        "to 1 and varies little with m, the covariance falls as 1/m; for U[0,0.5] r decreases "
        "slowly with m (see the claims for the tolerances)."),
    "dropout_linear": (
        "002 Secs. 2-3: deep linear networks with dropout on the inputs (p = 0.8) and hidden units "
        "(keep rate), Eq. 22, one random input per network. (a) Monte Carlo mean of every unit of "
        "every layer against the exact expectation of Eq. 24 (dots) and against the unscaled "
        "network that ignores the keep probabilities (grey crosses); (b) Monte Carlo variances "
        "against Eqs. 16/25; (c) covariances of all pairs among the first units of each layer "
        "against Eqs. 17/25, both divided by the exact sqrt(V_i V_j); (d) z-scores "
        "(MC - exact)/SE of means, variances and covariances with the standard normal density. "
        "All dropout masks of an input are drawn in one batched tensor pass. The simulation "
        "supports the exact recursions; the unscaled network is rejected."),
}
SOURCE_BOUNDS = "002 Sec. 8, Eq. 87, Figs. 8.1-8.2"
SOURCE_EQ85 = "002 Sec. 8, Eqs. 84-85 (proof Eqs. 93-96)"
SOURCE_EQ202 = "002 App. B, Eq. 202; Figs. 9.4-9.5"
SOURCE_SIDES = "002 Sec. 8, properties 3-4, Eqs. 81-82"
SOURCE_SAMPLING = "002 Secs. 9.3-9.4, Eqs. 103-108, Figs. 9.1-9.2"
SOURCE_LINEAR = "002 Secs. 2-3, Eqs. 8, 15-17, 22, 24-25"
SIDE_ATOL = 1e-12


# ----------------------------------------------------------------- runs and simulations


def simulations(cfg: dict) -> dict:
    """``theory.simulations``: block label -> simulation spec (with its ``part``)."""
    sims = dict(cfg.get("theory", {}).get("simulations", {}))
    bad = {k: v.get("part") for k, v in sims.items() if v.get("part") not in PARTS}
    if bad:
        raise ValueError(f"theory.simulations: unknown part(s) {bad} (known: {list(PARTS)})")
    return sims


def labels_of(cfg: dict) -> dict:
    """``run_id -> block label`` for the config's scale (labels must name simulations)."""
    from ..config import run_labels
    labels = run_labels(cfg, cfg.get("scale", "quick"), cfg.get("name", "<study>"))
    sims = simulations(cfg)
    missing = sorted(set(labels.values()) - set(sims))
    if missing:
        raise ValueError(f"block label(s) {missing} name no entry of theory.simulations "
                         f"(known: {sorted(sims)})")
    return labels


def with_labels(runs: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """The run table with ``label`` and ``part`` columns (rows of unknown runs dropped)."""
    labels, sims = labels_of(cfg), simulations(cfg)
    lab = runs.run_id.map(labels)
    out = runs.assign(label=lab)[lab.notna().to_numpy()]
    return out.assign(part=out.label.map(lambda s: sims[s]["part"]))


def _long(model: int, metrics: dict, probe=None, layer: int = 0) -> pd.DataFrame:
    frames = []
    for name, v in metrics.items():
        v = np.atleast_1d(np.asarray(v, float))
        p = np.arange(len(v)) if probe is None else np.asarray(probe)
        frames.append(pd.DataFrame({"model": model, "metric": name, "probe": p, "layer": layer,
                                    "value": v}))
    return pd.concat(frames, ignore_index=True)


def _measure_bounds(i, run, spec) -> pd.DataFrame:
    t0 = time.perf_counter()
    rng = mc.generator(run.key, mc.STREAM_BOUNDS)
    mu, sd = mc.set_parameters(rng, run.batch_size, spec["mu"], spec["sd"])
    chunk = max(1, int(2 ** 22 // max(run.width, 1)))   # whole sets per array pass (~32 MB)
    parts = [mc.set_statistics(mc.logistic_sets(rng, mu[a:a + chunk], sd[a:a + chunk], run.width))
             for a in range(0, run.batch_size, chunk)]
    cols = {k: np.concatenate([p[k] for p in parts]) for k in ("E", "V", "NWGM", "O_min", "O_max")}
    cols.update(mu_S=mu, sd_S=sd)
    dt = time.perf_counter() - t0
    return pd.concat([_long(i, cols), _long(i, {"seconds": dt, "values_per_second":
                                                 run.batch_size * run.width / dt})])


def _measure_sampling(i, run, spec) -> pd.DataFrame:
    t0 = time.perf_counter()
    r = mc.sampling_experiment(mc.generator(run.key, mc.STREAM_SAMPLING), spec, run.width,
                               run.batch_size)
    dt = time.perf_counter() - t0
    return pd.concat([_long(i, r), _long(i, {"seconds": dt, "values_per_second":
                                              run.batch_size * run.width / dt})])


def _measure_linear(i, run, spec, params, cov_units, device) -> pd.DataFrame:
    if run.activation != "linear":
        raise ValueError(f"linear simulation needs activation linear, run {run.run_id} has "
                         f"{run.activation}")
    ws, bs = mc.fc_layers(params, i)
    keeps = mc.layer_keeps(spec["input_keep"], run.keep_rate, len(ws))
    x = mc.input_vector(run.key, ws[0].shape[1])
    t0 = time.perf_counter()
    ex = mc.exact_linear_moments(ws, bs, keeps, x)
    t_exact = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim = mc.linear_mc(ws, bs, keeps, x, run.batch_size, run.key, cov_units, device)
    t_mc = time.perf_counter() - t0
    naive = mc.unscaled_means(ws, bs, x)
    frames = []
    for layer, (s, mean, cov, nv) in enumerate(zip(sim, ex["mean"], ex["cov"], naive), start=1):
        frames.append(_long(i, {"exact_mean": mean, "naive_mean": nv, "mc_mean": s["mean"],
                                "mc_mean_se": s["mean_se"], "exact_var": np.diag(cov),
                                "mc_var": s["var"], "mc_var_se": s["var_se"]}, layer=layer))
        if len(s["pair_i"]):
            pr = s["pair_i"] * cov_units + s["pair_j"]   # pair (i, j) of the first cov_units units
            frames.append(_long(i, {"exact_cov": cov[s["pair_i"], s["pair_j"]], "mc_cov": s["cov"],
                                    "mc_cov_se": s["cov_se"]}, probe=pr, layer=layer))
    flops = 2.0 * run.batch_size * sum(w.size for w in ws)
    frames.append(_long(i, {"mc_seconds": t_mc, "mc_samples": run.batch_size,
                            "mc_samples_per_second": run.batch_size / t_mc,
                            "mc_gflops": flops / t_mc / 1e9, "exact_seconds": t_exact}))
    return pd.concat(frames, ignore_index=True)


def measure(shard, params, buffers, cfg: dict, device: str = "cpu") -> pd.DataFrame:
    """Rows of every run of the shard, by the simulation its block label names."""
    labels, sims = labels_of(cfg), simulations(cfg)
    cov_units = int(cfg.get("analysis", {}).get("linear", {}).get("cov_units", 8))
    frames = []
    for i, run in enumerate(shard.runs):
        if run.run_id not in labels:
            raise ValueError(f"run {run.run_id} is made by no block of scale {cfg.get('scale')}")
        spec = sims[labels[run.run_id]]
        if spec["part"] == "bounds":
            frames.append(_measure_bounds(i, run, spec))
        elif spec["part"] == "sampling":
            frames.append(_measure_sampling(i, run, spec))
        else:
            frames.append(_measure_linear(i, run, spec, params, cov_units, device))
    long = pd.concat(frames, ignore_index=True)
    long["probe"] = long.probe.astype(np.int64)
    long["layer"] = long.layer.astype(np.int64)
    return tables.run_rows(shard, long, device, order=("layer", "probe"))


# ----------------------------------------------------------------- theory


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """Eq. 87 curves ``bound2`` (Fig. 8.1) and ``bound3`` (Fig. 8.2) against ``x = E``; their
    maximisers on [0, 0.5] (text after Eq. 87); per sampling distribution (``distribution``
    = block label) the population moments and Eq. 104 (:func:`ensembles_mc.population_moments`)."""
    E = np.linspace(0.0, 1.0, int(theory_cfg.get("points", 2001)))
    b = ensembles.eq87_bounds(E)
    rows = [pd.DataFrame({"study": study, "quantity": q, "x": E, "value": b[q],
                          "distribution": None}) for q in ("bound2", "bound3")]
    am = ensembles.eq87_argmax()
    rows.append(pd.DataFrame([{"study": study, "quantity": f"argmax_{q}", "x": np.nan,
                               "value": float(v), "distribution": None} for q, v in am.items()]))
    sims = {k: v for k, v in theory_cfg.get("simulations", {}).items() if v.get("part") == "sampling"}
    for label, spec in sims.items():
        pm = mc.population_moments(spec)
        rows.append(pd.DataFrame([{"study": study, "quantity": q, "x": np.nan, "value": v,
                                   "distribution": label} for q, v in pm.items()]))
    return pd.concat(rows, ignore_index=True)


def theory_value(theory: pd.DataFrame, quantity: str, distribution: str | None = None) -> float:
    t = theory[theory.quantity == quantity]
    if distribution is not None:
        t = t[t.distribution == distribution]
    return float(t.value.iloc[0]) if len(t) else np.nan


# ----------------------------------------------------------------- analysis tables


def _wide(runs: pd.DataFrame, index: list[str]) -> pd.DataFrame:
    return runs.pivot_table(index=index, columns="metric", values="value", aggfunc="first")


def bounds_sets(runs: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """One row per simulated set: E, V, NWGM, mu_S, sd_S, O_min, O_max, E - NWGM and the Eq. 87
    curves and second-order approximations (Eqs. 85, 202) at the set's E and V."""
    r = with_labels(runs, cfg)
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


def sampling_table(runs: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    """Per (distribution, m): Pearson r and covariance of (E_S, NWGM_S) with SEs, the variances,
    mean bias NWGM_S - E_S with SE, and skewness/kurtosis of NWGM_S (samples of all seeds pooled)."""
    r = with_labels(runs, cfg)
    r = r[(r.part == "sampling") & r.metric.isin(["E_S", "NWGM_S"])]
    out = []
    for (label, m), g in r.groupby(["label", "width"], sort=True):
        w = _wide(g, ["run_id", "probe"])
        e, nw = w.E_S.to_numpy(), w.NWGM_S.to_numpy()
        pc = mc.pearson_cov(e, nw)
        d = nw - e
        sk, ku = mc.skew_kurtosis(nw)
        out.append({"distribution": label, "m": int(m), "n": pc["n"], "r": pc["r"],
                    "r_se": pc["r_se"], "cov": pc["cov"], "cov_se": pc["cov_se"],
                    "var_E": e.var(ddof=1), "var_NWGM": nw.var(ddof=1), "mean_E": e.mean(),
                    "mean_NWGM": nw.mean(), "bias": d.mean(), "bias_se": d.std(ddof=1) / np.sqrt(len(d)),
                    "skew_NWGM": sk, "kurt_NWGM": ku})
    return pd.DataFrame(out)


def sampling_values(runs: pd.DataFrame, cfg: dict, label: str, m: int) -> pd.DataFrame:
    """E_S and NWGM_S of every sample of one (distribution, m)."""
    r = with_labels(runs, cfg)
    r = r[(r.label == label) & (r.width == m) & r.metric.isin(["E_S", "NWGM_S"])]
    return _wide(r, ["run_id", "probe"]).reset_index()


def linear_table(runs: pd.DataFrame, cfg: dict) -> dict[str, pd.DataFrame]:
    """``units`` (per run, layer, unit: exact/naive/MC means and variances with z-scores) and
    ``pairs`` (per run, layer, pair: exact/MC covariance with z)."""
    r = with_labels(runs, cfg)
    r = r[r.part == "linear"]
    if not len(r):
        return {"units": pd.DataFrame(), "pairs": pd.DataFrame(), "cost": pd.DataFrame()}
    u = _wide(r[r.metric.isin(["exact_mean", "naive_mean", "mc_mean", "mc_mean_se", "exact_var",
                               "mc_var", "mc_var_se"])], ["run_id", "layer", "probe"]).reset_index()
    u["z_mean"] = mc.z_scores(u.mc_mean, u.mc_mean_se, u.exact_mean)
    u["z_naive"] = mc.z_scores(u.mc_mean, u.mc_mean_se, u.naive_mean)
    u["z_var"] = mc.z_scores(u.mc_var, u.mc_var_se, u.exact_var)
    p = r[r.metric.isin(["exact_cov", "mc_cov", "mc_cov_se"])]
    p = _wide(p, ["run_id", "layer", "probe"]).reset_index() if len(p) else pd.DataFrame(
        columns=["run_id", "layer", "probe", "exact_cov", "mc_cov", "mc_cov_se"])
    p["z_cov"] = mc.z_scores(p.mc_cov, p.mc_cov_se, p.exact_cov) if len(p) else []
    c = _wide(r[r.metric.isin(["mc_seconds", "mc_samples", "mc_samples_per_second", "mc_gflops",
                               "exact_seconds"])], ["run_id"]).reset_index()
    c = c.merge(r[["run_id", "width", "depth", "batch_size", "keep_rate"]].drop_duplicates(), on="run_id")
    return {"units": u, "pairs": p, "cost": c}


# ----------------------------------------------------------------- claims


def _linear_claims(study, runs, cfg, k) -> list[dict]:
    an = cfg.get("analysis", {}).get("linear", {})
    want = float(an.get("within_fraction", 0.95))
    t = linear_table(runs, cfg)
    u, p, c = t["units"], t["pairs"], t["cost"]
    if not len(u):
        return []
    size = (f"{len(c)} networks ({int(c.width.iloc[0])} wide, {int(c.depth.iloc[0])} hidden layers, "
            f"keep {c.keep_rate.iloc[0]:g} hidden / "
            f"{simulations(cfg)['linear']['input_keep'] if 'linear' in simulations(cfg) else '?'} "
            f"inputs), {int(c.mc_samples.iloc[0])} masks per input; exact moments by "
            "theory.ensembles.linear_dropout_expectation")
    rows = []
    for cid, claim, z, eq in (
            ("linear_mean_eq24", ("The dropout expectation of every unit of a deep linear network is "
                                  "the deterministic network with weights scaled by the keep "
                                  "probabilities"), u.z_mean, "Eq. 24"),
            ("linear_var_eq25", ("The dropout variances of a deep linear network follow the "
                                 "recursion of Eq. 25 (Eq. 16 for one layer)"), u.z_var, "Eqs. 16, 25"),
            ("linear_cov_eq25", ("The dropout covariances of pairs of units follow the recursion of "
                                 "Eq. 25 (Eq. 17 for one layer)"), p.z_cov, "Eqs. 17, 25")):
        z = np.asarray(z, float)
        frac = mc.within_fraction(z, k)
        rows.append(row(study, cid, claim, SOURCE_LINEAR, measured=frac,
                        expected=f">= {want:g} of values within {k:g} SE of {eq}", tolerance=0.0,
                        verdict="pass" if frac >= want else "fail",
                        detail=(f"{len(z)} values; max |z| {np.max(np.abs(z)):.2f}, RMS z "
                                f"{np.sqrt(np.mean(z ** 2)):.3f}; {size}"),
                        values={"n": len(z), "max_abs_z": np.max(np.abs(z)),
                                "rms_z": np.sqrt(np.mean(z ** 2))}))
    fn = mc.within_fraction(u.z_naive, k)
    rows.append(row(study, "linear_unscaled_rejected",
                    "Without multiplying the weights by the keep probabilities the expectation is "
                    "wrong (Eq. 8): the test that accepts Eq. 24 rejects the unscaled network",
                    SOURCE_LINEAR, measured=fn,
                    expected=f"< {want:g} of units within {k:g} SE of the unscaled network",
                    tolerance=0.0, verdict="pass" if fn < want else "fail",
                    detail=(f"{len(u)} units; median |z| of the unscaled network "
                            f"{np.median(np.abs(u.z_naive)):.1f} (Eq. 24: "
                            f"{np.median(np.abs(u.z_mean)):.2f}); {size}"),
                    values={"median_abs_z_unscaled": np.median(np.abs(u.z_naive))}))
    return rows


def _bounds_claims(study, runs, theory, cfg) -> list[dict]:
    an = cfg.get("analysis", {}).get("bounds", {})
    want = float(an.get("within_fraction", 1.0))
    ftol = float(an.get("fraction_tolerance", 0.05))
    s_small = float(an.get("small_spread", 0.3))
    asym = float(an.get("min_asymmetry", 0.1))
    rtol = float(an.get("ratio_tolerance", 0.1))
    w = bounds_sets(runs, cfg)
    rows = []
    if len(w):
        m = with_labels(runs, cfg)
        m = m[m.part == "bounds"]
        sizes = (f"{len(w)} sets of {int(m.width.iloc[0])} outputs, s in "
                 f"[{w.sd_S.min():.2f}, {w.sd_S.max():.2f}], mu in [{w.mu_S.min():.2f}, {w.mu_S.max():.2f}]")
        hi = w.sd_S >= np.quantile(w.sd_S, 0.75)
        for cid, q, claim, src in (
                ("bound2_fig81", "bound2", "|E - NWGM| <~ E(1-E)|1-2E|/(1-2E(1-E)) (Bound 2)",
                 SOURCE_BOUNDS + " (Fig. 8.1)"),
                ("bound3_fig82", "bound3", "|E - NWGM| <~ 2E(1-E)|1-2E|", SOURCE_BOUNDS + " (Fig. 8.2)"),
                ("bound1_eq87", "bound1", "|E - NWGM| <~ E(1-E)|1-2E|/(1-2V) (Bound 1)", SOURCE_BOUNDS)):
            frac = mc.bound_fraction(w["diff"], w[q])
            frac_hi = mc.bound_fraction(w["diff"][hi], w[q][hi])
            excess = np.max(np.abs(w["diff"]) - w[q])
            rows.append(row(study, cid, claim + " for logistic outputs", src, measured=frac,
                            expected=f"all sets (fraction {want:g})", tolerance=ftol,
                            verdict="pass" if frac >= want - ftol else "fail",
                            detail=(f"{sizes}; within for the quarter with the largest s "
                                    f"(s >= {np.quantile(w.sd_S, 0.75):.2f}): {frac_hi:.4f}; "
                                    f"largest excess |E - NWGM| - bound {excess:.2e}"),
                            values={"fraction_largest_s_quarter": frac_hi, "max_excess": excess}))
        sel = (w.sd_S <= s_small) & (np.abs(1 - 2 * w.E) >= asym)
        ratio85 = (w["diff"] / w.eq85)[sel]
        ratio202 = (w["diff"] / w.eq202)[sel]
        inv = (1.0 / (2 * w.E * (1 - w.E)))[sel]
        for cid, rat, claim, src in (
                ("eq85_second_order", ratio85, "To second order E - NWGM ~ V(1-2E)/(1-2V) (Eq. 85)",
                 SOURCE_EQ85),
                ("eq202_second_order", ratio202, ("To second order (expansion around E) "
                                                  "E - NWGM ~ E - (E - V/2E)/(1 - V/(2E(1-E))) "
                                                  "(Eq. 202)"), SOURCE_EQ202)):
            med = float(np.median(rat)) if len(rat) else np.nan
            ok = bool(np.isfinite(med) and abs(med - 1) <= rtol)
            rows.append(row(study, cid, claim, src, measured=med,
                            expected="median (E - NWGM)/approximation = 1", tolerance=rtol,
                            verdict="pass" if ok else "fail",
                            detail=(f"{int(sel.sum())} sets with s <= {s_small:g} and |1-2E| >= {asym:g}; "
                                    f"quartiles of the ratio {np.quantile(rat, 0.25):.3f}-"
                                    f"{np.quantile(rat, 0.75):.3f}; median 1/(2E(1-E)) over these sets "
                                    f"{np.median(inv):.3f} (the factor by which Eq. 85 drops the "
                                    f"consistent second-order term, cf. Eq. 202)")
                            if len(rat) else "no sets in the second-order regime",
                            values={"median_inv_2E1mE": float(np.median(inv)) if len(inv) else np.nan}))
        low, high = w.O_max <= 0.5, w.O_min >= 0.5
        ok_low = (w.NWGM <= w.E + SIDE_ATOL)[low]
        ok_high = (w.NWGM >= w.E - SIDE_ATOL)[high]
        n_side = int(low.sum() + high.sum())
        frac = float((ok_low.sum() + ok_high.sum()) / n_side) if n_side else np.nan
        rows.append(row(study, "nwgm_side_eqs81_82",
                        "If all O_i <= 0.5 then NWGM <= E; if all O_i >= 0.5 then NWGM >= E",
                        SOURCE_SIDES, measured=frac, expected="all such sets (exact inequality)",
                        tolerance=0.0, verdict="pass" if n_side and frac == 1.0 else "fail",
                        detail=f"{int(low.sum())} consistently low and {int(high.sum())} consistently "
                               f"high sets (of {len(w)}); comparison to {SIDE_ATOL:g}"))
    # maximisers of the curves (text after Eq. 87), against the tabulated curves
    for q, fig in (("bound2", "8.1"), ("bound3", "8.2")):
        t = theory[(theory.quantity == q) & (theory.x <= 0.5)].sort_values("x")
        if not len(t):
            continue
        x = t.x.to_numpy()
        grid = float(x[t.value.to_numpy().argmax()])
        formula = theory_value(theory, f"argmax_{q}")
        h = float(np.diff(x).max())
        rows.append(row(study, f"{q}_argmax", f"The maximum of the Fig. {fig} curve over [0, 0.5] is "
                        f"at E = {'0.5 - sqrt(sqrt5 - 2)/2' if q == 'bound2' else '0.5 - sqrt(3)/6'}",
                        SOURCE_BOUNDS, measured=grid, expected=f"{formula:.6f}", tolerance=h,
                        verdict="pass" if abs(grid - formula) <= h else "fail",
                        detail=f"argmax of the curve on a grid of spacing {h:.1e}"))
    return rows


def _sampling_claims(study, runs, theory, cfg, k) -> list[dict]:
    an = cfg.get("analysis", {}).get("sampling", {})
    hist_m = int(an.get("hist_m", 100))
    r_min = float(an.get("r_min", 0.9))
    r_range = float(an.get("r_range_max", 0.05))
    stol = float(an.get("cov_slope_tolerance", 0.1))
    fit_min = int(an.get("fit_min_m", 5))
    vtol = float(an.get("var_rel_tolerance", 0.1))
    small_var = float(an.get("small_variance", 0.01))
    skew_max, kurt_max = float(an.get("skew_max", 0.3)), float(an.get("kurtosis_max", 0.5))
    s = sampling_table(runs, cfg)
    rows = []
    order = [k for k, v in simulations(cfg).items() if v["part"] == "sampling"]
    for label in [d for d in order if len(s) and d in set(s.distribution)]:
        g = s[s.distribution == label].sort_values("m")
        ms = g.m.to_numpy()
        n = f"{int(g.n.min())}-{int(g.n.max())} samples per m, m = {', '.join(map(str, ms))}"
        tag = f"[{label}]"
        rmin = float(g.r.min())
        rows.append(row(study, f"corr_close_to_one{tag}", "The Pearson correlation between E_S and "
                        "NWGM_S is close to 1", SOURCE_SAMPLING + " (Fig. 9.2 left)", measured=rmin,
                        expected=f"r >= {r_min:g} at every m", tolerance=0.0,
                        verdict="pass" if rmin >= r_min else "fail",
                        detail=f"min r at m = {int(ms[g.r.argmin()])}; r = "
                               + ", ".join(f"{v:.4f}" for v in g.r) + f"; {n}"))
        spread = float(g.r.max() - g.r.min())
        rows.append(row(study, f"corr_constant_in_m{tag}", "The Pearson correlation is roughly "
                        "constant in the sample size m", SOURCE_SAMPLING + " (Fig. 9.2 left)",
                        measured=spread, expected=f"max r - min r <= {r_range:g}", tolerance=0.0,
                        verdict="pass" if spread <= r_range else "fail",
                        detail=f"r from {g.r.iloc[0]:.4f} (m = {ms[0]}) to {g.r.iloc[-1]:.4f} "
                               f"(m = {ms[-1]}); SE of r <= {g.r_se.max():.4f}; {n}"))
        fit = g[g.m >= fit_min]
        slope = mc.loglog_slope(fit.m, fit["cov"]) if len(fit) >= 2 and (fit["cov"] > 0).all() else np.nan
        rows.append(row(study, f"cov_decays_as_inv_m{tag}", "The covariance of E_S and NWGM_S "
                        "decreases to 0 inversely to the sample size (order V/m)",
                        SOURCE_SAMPLING + " (Eqs. 106-108, Fig. 9.2 right)", measured=slope,
                        expected="log-log slope -1", tolerance=stol,
                        verdict="pass" if np.isfinite(slope) and abs(slope + 1) <= stol else "fail",
                        detail=f"fit over m >= {fit_min}; m Cov = "
                               + ", ".join(f"{c * m:.4g}" for c, m in zip(g["cov"], ms)) + f"; {n}"))
        last = g.iloc[-1]
        c2 = theory_value(theory, "C2_eq104", label)
        var_o = theory_value(theory, "var_O", label)
        meas_c2 = float(last.var_NWGM * last.m)
        rel = meas_c2 / c2 - 1
        rows.append(row(study, f"var_nwgm_eq104{tag}", "Var(NWGM_S) ~ t^2 sigma_S^2 / m with "
                        "t = sigma'(mu_S) (Eq. 104)", SOURCE_SAMPLING + " (Eq. 104)",
                        measured=meas_c2, expected=f"{c2:.5g}", tolerance=vtol * c2,
                        verdict="pass" if abs(rel) <= vtol else "fail",
                        detail=f"m Var(NWGM_S) at m = {int(last.m)} ({int(last.n)} samples), "
                               f"relative gap {rel:+.3f}; C1 = m Var(E_S) = {last.var_E * last.m:.5g} "
                               f"vs sigma_O^2 = {var_o:.5g}"))
        if var_o <= small_var:
            c1 = float(last.var_E * last.m)
            relc = meas_c2 / c1 - 1
            rows.append(row(study, f"c1_equals_c2{tag}", "sigma_O^2 = C1 ~ C2 when sigma_O^2 is "
                            "small (Var(E_S) ~ C1/m, Var(NWGM_S) ~ C2/m)", SOURCE_SAMPLING + " (Sec. 9.3)",
                            measured=relc, expected="C2/C1 - 1 = 0", tolerance=vtol,
                            verdict="pass" if abs(relc) <= vtol else "fail",
                            detail=f"at m = {int(last.m)}: C1 = {c1:.5g}, C2 = {meas_c2:.5g}; "
                                   f"sigma_O^2 = {var_o:.5g} <= {small_var:g}"))
        h = g[g.m == hist_m]
        if not len(h):
            continue
        h = h.iloc[0]
        mu_o = theory_value(theory, "mu_O", label)
        sd_o = float(np.sqrt(var_o))
        if abs(mu_o - 0.5) < 1e-9:
            rows.append(row(study, f"no_bias_at_half{tag}", "With mu_O = 0.5, NWGM_S and E_S have the "
                            "same mean (sigma(mu_S) = mu_O)", SOURCE_SAMPLING + " (Sec. 9.3, Fig. 9.1)",
                            measured=float(h.bias), expected="0", tolerance=k * float(h.bias_se),
                            verdict="pass" if abs(h.bias) <= k * h.bias_se else "fail",
                            detail=f"mean NWGM_S - E_S at m = {hist_m}, {int(h.n)} samples, "
                                   f"SE {h.bias_se:.2e}"))
        else:
            eq104 = theory_value(theory, "nwgm_mean_eq104", label) - mu_o
            rows.append(row(study, f"bias_small{tag}", "Away from 0.5 a bias NWGM_S - E_S appears but is "
                            "small: smaller than the error sigma_O of a single random sample",
                            SOURCE_SAMPLING + " (Sec. 9.3, Fig. 9.1; Sec. 8 end)",
                            measured=float(h.bias), expected=f"|bias| < sigma_O = {sd_o:.4f}",
                            tolerance=sd_o, verdict="pass" if abs(h.bias) < sd_o else "fail",
                            detail=f"mean NWGM_S - E_S at m = {hist_m} ({int(h.n)} samples, SE "
                                   f"{h.bias_se:.1e}); population sigma(mu_S) - mu_O = {eq104:.4f}; "
                                   f"|bias|/sigma_O = {abs(h.bias) / sd_o:.3f}"))
        ok = abs(h.skew_NWGM) <= skew_max and abs(h.kurt_NWGM) <= kurt_max
        rows.append(row(study, f"nwgm_approx_normal{tag}", "NWGM_S is approximately normally "
                        "distributed", SOURCE_SAMPLING + " (Sec. 9.2, Eq. 104, Fig. 9.1)",
                        measured=float(h.skew_NWGM), expected=f"|skewness| <= {skew_max:g} and "
                        f"|excess kurtosis| <= {kurt_max:g}", tolerance=skew_max,
                        verdict="pass" if ok else "fail",
                        detail=f"m = {hist_m}, {int(h.n)} samples: skewness {h.skew_NWGM:+.3f} "
                               f"(SE ~{np.sqrt(6 / h.n):.3f}), excess kurtosis {h.kurt_NWGM:+.3f} "
                               f"(SE ~{np.sqrt(24 / h.n):.3f})",
                        values={"excess_kurtosis": float(h.kurt_NWGM)}))
    return rows


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    study = cfg["name"]
    k = float(cfg.get("analysis", {}).get("z_max", 3.0))
    rows = (_bounds_claims(study, runs, theory, cfg) + _sampling_claims(study, runs, theory, cfg, k)
            + _linear_claims(study, runs, cfg, k))
    return frame(rows)
