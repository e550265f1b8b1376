"""Study: the iterated length and correlation maps with dropout (000 Fig. 1).

A measurement at initialization, no training: for each panel of the caption
(linear and tanh length maps, ReLU and erf correlation maps) and keep rates
ρ ∈ {1, 0.7, 0.4}, one random dropout layer of many instantiations maps probe
inputs of known (q, c) to outputs; the theory curves are 000 Eqs. 2–4 from
:mod:`sigprop.theory.meanfield`.  Note the caption's σ_w, σ_b are standard
deviations (σ_w = 0.5 gives σ_w² = 0.25; a linear map with σ_w² = 0.5 and
ρ = 0.4 would have no fixed point).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import tables
from ..claims import frame, row
from ..runs import settings
from ..figures.meanfield_maps import figure
from ..theory import meanfield

TASK = "measure"
FIGURES = {"meanfield_maps": figure}
CAPTIONS = {"meanfield_maps": (
    "One-layer length map q^l(q^{l-1}) (linear, tanh) and correlation map c^l(c^{l-1}) at q* "
    "(ReLU, erf) with keep rates ρ (000 Fig. 1). Lines: 000 Eqs. 2–4 by quadrature/closed form; "
    "dots: mean over random instantiations with ±1 standard error; diamonds: fixed points q*, c*; "
    "dashed: the unity line.")}
SOURCE = "000 §3.1, Eqs. 2-4, Fig. 1"


def c_probe_q(setting: dict, theory_cfg: dict) -> float:
    """Length at which the correlation map is probed: q* of the setting, or, where q* is
    infinite (e.g. ReLU above its edge of chaos, 000 Fig. 1c at rho = 0.4), the cap
    ``theory.q_cap`` standing for the scale-free limit."""
    q = float(meanfield.q_star(setting["sigma_w2"], setting["sigma_b2"], setting["keep_rate"],
                               setting["activation"]))
    return q if np.isfinite(q) else float(theory_cfg.get("q_cap", 1e3))


def measure(shard, params, buffers, cfg: dict, device: str = "cpu") -> pd.DataFrame:
    """Rows ``metric ∈ {qmap_in, qmap_out, cmap_in, cmap_out, cmap_q}`` per run and probe."""
    from ..measure.maps import one_layer_maps  # torch: imported only in the job
    an = cfg["analysis"]
    q_probes = np.asarray(an["q_probes"], float)
    c_probes = np.asarray(an["c_probes"], float)
    runs = shard.runs
    frames = []
    qmap = one_layer_maps(params, runs, q_probes, np.full_like(q_probes, 0.5))
    frames.append(qmap.assign(qmap_in=qmap.q_in, qmap_out=qmap.q_out)[["model", "probe", "qmap_in", "qmap_out"]])
    for s in settings(runs):  # correlation maps at each setting's own q*
        idx = [i for i, r in enumerate(runs) if r.keep_rate == s["keep_rate"]
               and r.sigma_w2 == s["sigma_w2"] and r.sigma_b2 == s["sigma_b2"]]
        q_c = c_probe_q(s, cfg.get("theory", {}))
        cm = one_layer_maps([p[idx] for p in params], [runs[i] for i in idx],
                            np.full_like(c_probes, q_c), c_probes)
        cm["model"] = np.asarray(idx)[cm.model.to_numpy()]
        frames.append(cm.assign(cmap_in=cm.c_in, cmap_out=cm.c_out, cmap_q=q_c)
                      [["model", "probe", "cmap_in", "cmap_out", "cmap_q"]])
    long = pd.concat([f.melt(id_vars=["model", "probe"], var_name="metric") for f in frames])
    long = long.dropna(subset=["value"]).assign(layer=1)
    return tables.run_rows(shard, long, device, order=("probe",))


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """q-map and c-map curves (c-map at q*) and the fixed points, per setting."""
    n = int(theory_cfg.get("points", 200))
    rows = []
    for s in settings:
        act, sw, sb, rho = s["activation"], s["sigma_w2"], s["sigma_b2"], s["keep_rate"]
        q_star = float(meanfield.q_star(sw, sb, rho, act))
        c_star = float(meanfield.c_star(sw, sb, rho, act))
        q_c = c_probe_q(s, theory_cfg)
        q_hi = float(theory_cfg.get("q_max", 2.5 * q_star))
        qs = np.linspace(0.0, q_hi, n)
        cs = np.linspace(0.0, 1.0, n)
        base = dict(study=study, activation=act, sigma_w2=sw, sigma_b2=sb, keep_rate=rho)
        rows.append(pd.DataFrame({**base, "quantity": "q_map", "x": qs,
                                  "value": meanfield.q_map(qs, sw, sb, rho, act)}))
        rows.append(pd.DataFrame({**base, "quantity": "c_map", "x": cs,
                                  "value": meanfield.c_map(cs, q_c, sw, sb, rho, act)}))
        rows.append(pd.DataFrame([{**base, "quantity": "q_star", "x": np.nan, "value": q_star},
                                  {**base, "quantity": "c_star", "x": np.nan, "value": c_star}]))
    return pd.concat(rows, ignore_index=True)


def summary(runs: pd.DataFrame, theory: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Per (setting, probe): simulated mean ± SE of the map, the theory at the probe, z."""
    key = ["activation", "sigma_w2", "sigma_b2", "keep_rate", "probe"]
    x = runs[runs.metric == f"{kind}map_in"].set_index(["run_id", "probe"]).value
    y = runs[runs.metric == f"{kind}map_out"].set_index(["run_id", "probe"])
    d = y.assign(x=x).reset_index()
    g = d.groupby(key)
    out = g.agg(x=("x", "first"), mean=("value", "mean"), sd=("value", "std"), n=("value", "size")).reset_index()
    out["se"] = out.sd / np.sqrt(out.n)
    if kind == "c":  # the length each setting's correlation map was probed at
        qc = runs[runs.metric == "cmap_q"].groupby(key[:-1]).value.first().rename("q_probe")
        out = out.join(qc, on=key[:-1])
    th = []
    for r in out.itertuples():
        if kind == "q":
            th.append(float(meanfield.q_map(r.x, r.sigma_w2, r.sigma_b2, r.keep_rate, r.activation)))
        else:
            th.append(float(meanfield.c_map(r.x, r.q_probe, r.sigma_w2, r.sigma_b2, r.keep_rate,
                                            r.activation)))
    out["theory"] = th
    with np.errstate(divide="ignore", invalid="ignore"):
        out["z"] = np.where(out.se > 0, (out["mean"] - out.theory) / out.se,
                            np.where(np.isclose(out["mean"], out.theory, rtol=1e-9, atol=1e-12), 0.0, np.inf))
    return out


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    an = cfg.get("analysis", {})
    study = cfg["name"]
    k = float(an.get("z_max", 3.0))
    want = float(an.get("within_fraction", 0.95))
    tol = float(an.get("fraction_tolerance", 0.05))
    rows = []
    for panel in an["panels"]:
        act, kind = panel["activation"], panel["map"]
        s = summary(runs[runs.activation == act], theory, kind)
        frac = float(np.mean(np.abs(s.z) <= k))
        verdict = "pass" if frac >= want - tol else "fail"
        rows.append(row(study, f"{kind}_map_matches_simulation[{act}]",
                        f"The {kind}-map of Eq. {'2' if kind == 'q' else '3-4'} matches simulated "
                        f"{act} dropout networks within the standard error",
                        SOURCE, measured=frac, expected=f">= {want:g} of points within {k:g} SE",
                        tolerance=tol, verdict=verdict,
                        detail=(f"{len(s)} (rho, probe) points, {int(s.n.min())}-{int(s.n.max())} "
                                f"instantiations each; max |z| {np.abs(s.z).max():.2f}; max relative "
                                f"error {np.max(np.abs(s['mean'] - s.theory) / np.maximum(np.abs(s.theory), 1e-12)):.2e}")))
        if kind != "c":
            continue
        top = s[np.isclose(s.x, 1.0)]
        for r in top.itertuples():
            gap, se = 1.0 - r.mean, r.se
            if r.keep_rate == 1.0:
                ok = abs(gap) <= k * se + 1e-12
                expected = "0 (c* = 1 without dropout)"
            else:
                ok = gap > k * se
                expected = f"> {k:g} SE (c* < 1 with dropout)"
            rows.append(row(study, f"c_star_below_one_iff_dropout[{act}, rho={r.keep_rate:g}]",
                            "c* = 1 only at rho = 1; with dropout c* < 1", SOURCE, measured=gap,
                            expected=expected, tolerance=k * se, verdict="pass" if ok else "fail",
                            detail=f"1 - c_out at c_in = 1, mean over {int(r.n)} instantiations "
                                   f"(SE {se:.2e}); theory {1 - r.theory:.4f}"))
    return frame(rows)
