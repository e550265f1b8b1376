"""The statistics of the claims of Huang, Xu, Du, Zeng, Zhao 2019, "Mean field theory for deep
dropout networks" (arXiv:1912.09132) Sec. 3.1 (declared in ``CLAIMS``, ``__init__.py``): the
length map (Eq. 2) and the correlation map (Eqs. 3-4) match simulated dropout layers (Fig. 1),
and c* = 1 only without dropout.

- ``{q,c}_map_matches_simulation[act]`` (an equivalence): one joint test over all (rho, probe)
  points of the panel, which share the instantiations (seeds): the largest |mean - theory| / SE
  over the points against its bootstrap null over the seeds
  (:func:`sigprop.claims.max_abs_z_bootstrap`); detectable: the common relative offset from
  Eqs. 2-4 the test resolves; margin ``claims.margin`` (a 10 % relative offset): a pass whose
  detectable exceeds it is ``inconclusive`` (:func:`sigprop.claims.row`).
- ``c_star_below_one_iff_dropout[act, rho<1]`` (sanity, one-sided): 1 - c_out at c_in = 1 is
  larger than ``z_max`` SE (:func:`sigprop.claims.z_above`), i.e. c = 1 is not a fixed point
  with dropout, which holds by construction (independent masks).
- ``c_star_below_one_iff_dropout[act, rho=1]`` (sanity): without dropout the two probes are the
  same input with the same mask, so c_out = 1 exactly (gap 0, SE 0): an identity of the
  apparatus, not evidence.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import max_abs_z_bootstrap, z_above
from ...claims.declared import build, result
from . import C_STAR_WITHOUT_DROPOUT, CLAIMS, SOURCE
from .analysis import summary


def instantiations(runs: pd.DataFrame, kind: str) -> pd.DataFrame:
    """``[seed, (keep_rate, probe)]``: each instantiation's map output at every probe of a panel
    (the runs of one activation).  Runs with the same seed at different keep rates are one row:
    resampling rows keeps whatever the points share."""
    d = runs[runs.metric == f"{kind}map_out"]
    return d.pivot_table(
        index="seed", columns=["keep_rate", "probe"], values="value", aggfunc="first"
    ).sort_index(axis=1)


def joint_test(runs: pd.DataFrame, s: pd.DataFrame, kind: str, n_boot: int, level: float) -> dict:
    """:func:`sigprop.claims.max_abs_z_bootstrap` of the panel's instantiations against the
    theory of ``s`` (:func:`.analysis.summary`) at the same (keep_rate, probe) points.  Points
    whose SE is 0 (the rho = 1, c = 1 identity) carry no z and are left to the sanity row."""
    x = instantiations(runs, kind).dropna(axis=0, how="any")
    th = s.set_index(["keep_rate", "probe"]).theory.reindex(x.columns).to_numpy(float)
    return max_abs_z_bootstrap(x.to_numpy(float), th, n_boot=n_boot, level=level)


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    c = p.claims
    k, n_boot, level = float(c.z_max), int(c.n_boot), float(c.joint_level)
    results = []
    for panel in p.analysis.panels:
        act, kind = panel.activation, panel.map
        r_act = runs[runs.activation == act]
        s = summary(r_act, theory, kind)
        j = joint_test(r_act, s, kind, n_boot, level)
        ok = np.isfinite(j["T"]) and np.isfinite(j["crit"])
        verdict = ("pass" if j["T"] <= j["crit"] else "fail") if ok else "inconclusive"
        rel = np.max(np.abs(s["mean"] - s.theory) / np.maximum(np.abs(s.theory), 1e-12))
        n_pts = int((s.se > 0).sum())
        values = {"T": j["T"], "crit": j["crit"], "p": j["p"], "n_points": n_pts}
        f = dict(act=act, points=n_pts, n=j["n"], n_boot=n_boot, level=level, rel=rel)
        f.update(T=j["T"], crit=j["crit"], p=j["p"], det=j["detectable"])
        cid = {"q": "q_map_matches_simulation", "c": "c_map_matches_simulation"}[kind]
        results.append(
            result(
                cid,
                act,
                measured=j["T"],
                tolerance=j["crit"],
                verdict=verdict,
                values=dict(values, max_rel_error=rel),
                detectable=j["detectable"],
                margin=float(c.margin),
                **f,
            )
        )
        if kind != "c":
            continue
        for r in s[np.isclose(s.x, 1.0)].itertuples():
            gap, se = 1.0 - r.mean, r.se
            f = dict(
                measured=gap, tolerance=k * se, k=k, n=int(r.n), gap_se=se, theory=1 - r.theory
            )
            q = f"{act}, rho={r.keep_rate:g}"
            if r.keep_rate == 1.0:
                ok = abs(gap) <= k * se + 1e-12
                verdict, texts = "pass" if ok else "fail", C_STAR_WITHOUT_DROPOUT
                results.append(
                    result("c_star_below_one_iff_dropout", q, verdict=verdict, texts=texts, **f)
                )
                continue
            v, rule, det = z_above(gap, se, k)
            results.append(
                result("c_star_below_one_iff_dropout", q, verdict=v, detectable=det, rule=rule, **f)
            )
    return build(p.study, CLAIMS, results, SOURCE)
