"""The measurement: each run of a shard by the simulation of its grid block (Baldi & Sadowski
2014, Secs. 2-3, 8, 9.3-9.4); the simulation math is :mod:`sigprop.studies.dropout_ensemble.monte_carlo`."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ... import tables
from . import monte_carlo as mc


def simulation_of(label: str, m):
    """The simulation (:class:`~sigprop.studies.dropout_ensemble.Simulation`) of a run of the
    grid block ``label``."""
    sims = {s.label: s for s in m.simulations}
    if label not in sims:
        raise ValueError(
            f"block label '{label}' names no entry of measure.simulations (known: {sorted(sims)})"
        )
    return sims[label]


def _long(model: int, metrics: dict, probe=None, layer: int = 0) -> pd.DataFrame:
    frames = []
    for name, v in metrics.items():
        v = np.atleast_1d(np.asarray(v, float))
        p = np.arange(len(v)) if probe is None else np.asarray(probe)
        frames.append(
            pd.DataFrame({"model": model, "metric": name, "probe": p, "layer": layer, "value": v})
        )
    return pd.concat(frames, ignore_index=True)


def _measure_bounds(i, run, spec) -> pd.DataFrame:
    t0 = time.perf_counter()
    rng = mc.generator(run.key, mc.STREAM_BOUNDS)
    mu, sd = mc.set_parameters(rng, run.batch_size, spec["mu"], spec["sd"])
    chunk = max(1, int(2**22 // max(run.width, 1)))  # whole sets per array pass (~32 MB)
    parts = [
        mc.set_statistics(mc.logistic_sets(rng, mu[a : a + chunk], sd[a : a + chunk], run.width))
        for a in range(0, run.batch_size, chunk)
    ]
    cols = {k: np.concatenate([p[k] for p in parts]) for k in ("E", "V", "NWGM", "O_min", "O_max")}
    cols.update(mu_S=mu, sd_S=sd)
    dt = time.perf_counter() - t0
    return pd.concat(
        [
            _long(i, cols),
            _long(i, {"seconds": dt, "values_per_second": run.batch_size * run.width / dt}),
        ]
    )


def _measure_sampling(i, run, spec) -> pd.DataFrame:
    t0 = time.perf_counter()
    r = mc.sampling_experiment(
        mc.generator(run.key, mc.STREAM_SAMPLING), spec, run.width, run.batch_size
    )
    dt = time.perf_counter() - t0
    return pd.concat(
        [
            _long(i, r),
            _long(i, {"seconds": dt, "values_per_second": run.batch_size * run.width / dt}),
        ]
    )


def _measure_linear(i, run, spec, params, cov_units, device) -> pd.DataFrame:
    if run.activation != "linear":
        raise ValueError(
            f"linear simulation needs activation linear, run {run.run_id} has {run.activation}"
        )
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
        frames.append(
            _long(
                i,
                {
                    "exact_mean": mean,
                    "naive_mean": nv,
                    "mc_mean": s["mean"],
                    "mc_mean_se": s["mean_se"],
                    "exact_var": np.diag(cov),
                    "mc_var": s["var"],
                    "mc_var_se": s["var_se"],
                },
                layer=layer,
            )
        )
        if len(s["pair_i"]):
            pr = s["pair_i"] * cov_units + s["pair_j"]  # pair (i, j) of the first cov_units units
            frames.append(
                _long(
                    i,
                    {
                        "exact_cov": cov[s["pair_i"], s["pair_j"]],
                        "mc_cov": s["cov"],
                        "mc_cov_se": s["cov_se"],
                    },
                    probe=pr,
                    layer=layer,
                )
            )
    flops = 2.0 * run.batch_size * sum(w.size for w in ws)
    frames.append(
        _long(
            i,
            {
                "mc_seconds": t_mc,
                "mc_samples": run.batch_size,
                "mc_samples_per_second": run.batch_size / t_mc,
                "mc_gflops": flops / t_mc / 1e9,
                "exact_seconds": t_exact,
            },
        )
    )
    return pd.concat(frames, ignore_index=True)


def measure(
    shard, params, buffers, p, device: str = "cpu", data_path=None, masks_path=None
) -> pd.DataFrame:
    """Rows of every run of the shard, by the simulation of its block (``p.labels``, one per
    run: the study declares ``measure_reads_labels``)."""
    if p.labels is None or len(p.labels) != len(shard.runs):
        raise ValueError(f"shard {shard.shard_id}: the measure job needs one block label per run")
    cov_units = p.measure.cov_units
    frames = []
    for i, run in enumerate(shard.runs):
        sim = simulation_of(p.labels[i], p.measure)
        spec = sim.spec()
        if sim.part == "bounds":
            frames.append(_measure_bounds(i, run, spec))
        elif sim.part == "sampling":
            frames.append(_measure_sampling(i, run, spec))
        else:
            frames.append(_measure_linear(i, run, spec, params, cov_units, device))
    long = pd.concat(frames, ignore_index=True)
    long["probe"] = long.probe.astype(np.int64)
    long["layer"] = long.layer.astype(np.int64)
    return tables.run_rows(shard, long, device, order=("layer", "probe"))
