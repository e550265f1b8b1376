"""Claims of Huang, Xu, Du, Zeng, Zhao 2019, "Mean field theory for deep dropout networks"
(arXiv:1912.09132) Sec. 3.1: the length map (Eq. 2) and the correlation map (Eqs. 3-4) match
simulated dropout layers (Fig. 1), and c* = 1 only without dropout.

Rows (the claims contract of :mod:`sigprop.claims`):

- ``{q,c}_map_matches_simulation[act]`` (claim, an equivalence): one joint test over all
  (rho, probe) points of the panel, which share the instantiations (seeds): the largest
  |mean - theory| / SE over the points against its bootstrap null over the seeds
  (:func:`sigprop.claims.max_abs_z_bootstrap`); detectable: the common relative offset from
  Eqs. 2-4 the test resolves; margin ``claims.margin`` (a 10 % relative offset): a pass whose
  detectable exceeds it is ``inconclusive`` (:func:`sigprop.claims.row`).
- ``c_star_below_one_iff_dropout[act, rho<1]`` (claim, one-sided, no margin): 1 - c_out at
  c_in = 1 is larger than ``z_max`` SE (:func:`sigprop.claims.z_above`), i.e. c = 1 is not a
  fixed point with dropout.
- ``c_star_below_one_iff_dropout[act, rho=1]`` (sanity): without dropout the two probes are the
  same input with the same mask, so c_out = 1 exactly (gap 0, SE 0): an identity of the
  apparatus, not evidence.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, max_abs_z_bootstrap, row, sanity, z_above
from . import SOURCE
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
    study, c = p.study, p.claims
    k, n_boot, level = float(c.z_max), int(c.n_boot), float(c.joint_level)
    margin = float(c.margin)
    rows = []
    for panel in p.analysis.panels:
        act, kind = panel.activation, panel.map
        r_act = runs[runs.activation == act]
        s = summary(r_act, theory, kind)
        j = joint_test(r_act, s, kind, n_boot, level)
        ok = np.isfinite(j["T"]) and np.isfinite(j["crit"])
        verdict = ("pass" if j["T"] <= j["crit"] else "fail") if ok else "inconclusive"
        rel = np.max(np.abs(s["mean"] - s.theory) / np.maximum(np.abs(s.theory), 1e-12))
        n_pts = int((s.se > 0).sum())
        rows.append(
            row(
                study,
                f"{kind}_map_matches_simulation[{act}]",
                f"The {kind}-map of Eq. {'2' if kind == 'q' else '3-4'} matches simulated {act} "
                "dropout networks within the standard error at every (rho, probe) point",
                SOURCE,
                measured=j["T"],
                expected=f"max |z| <= {j['crit']:.2f} (bootstrap {level:g} critical value)",
                tolerance=j["crit"],
                verdict=verdict,
                detail=(
                    f"{n_pts} (rho, probe) points sharing {j['n']} instantiations (seeds); "
                    f"max |z| {j['T']:.2f}, bootstrap p = {j['p']:.2f}; max relative error "
                    f"{rel:.2e}; detectable: a common relative offset of {j['detectable']:.3f}"
                ),
                values={
                    "T": j["T"],
                    "crit": j["crit"],
                    "p": j["p"],
                    "n_points": n_pts,
                    "max_rel_error": rel,
                },
                test=(
                    f"joint max |mean - Eq. {'2' if kind == 'q' else '3-4'}| / SE over {n_pts} "
                    f"(rho, probe) points, bootstrap over {j['n']} shared instantiations "
                    f"({n_boot} resamples), pass at T <= the {level:g} quantile; detectable in "
                    "relative offset from theory"
                ),
                detectable=j["detectable"],
                margin=margin,
            )
        )
        if kind != "c":
            continue
        top = s[np.isclose(s.x, 1.0)]
        for r in top.itertuples():
            gap, se = 1.0 - r.mean, r.se
            cid = f"c_star_below_one_iff_dropout[{act}, rho={r.keep_rate:g}]"
            text = "c* = 1 only at rho = 1; with dropout c* < 1"
            detail = (
                f"1 - c_out at c_in = 1, mean over {int(r.n)} instantiations (SE {se:.2e}); "
                f"theory {1 - r.theory:.4f}"
            )
            if r.keep_rate == 1.0:
                ok = abs(gap) <= k * se + 1e-12
                rows.append(
                    sanity(
                        study,
                        cid,
                        text,
                        SOURCE,
                        measured=gap,
                        expected="0 (c* = 1 without dropout)",
                        tolerance=k * se,
                        verdict="pass" if ok else "fail",
                        detail=detail + "; rho = 1: the two probes are one input with one mask, so "
                        "c_out = 1 identically (an identity of the apparatus, not evidence)",
                        test="identity: 1 - c_out = 0 at rho = 1 (no mask, identical probes)",
                    )
                )
                continue
            v, test, det = z_above(gap, se, k)
            rows.append(
                sanity(
                    study,
                    cid,
                    text,
                    SOURCE,
                    measured=gap,
                    expected=(
                        f"1 - c_out(1) > {k:g} SE (c = 1 is not a fixed point: "
                        "c* below 1 with dropout)"
                    ),
                    tolerance=k * se,
                    verdict=v,
                    detail=detail + "; holds by construction: two identical inputs "
                    "under independent dropout masks differ whenever rho < 1, so c = 1 "
                    "cannot be a fixed point (a check of the apparatus, not counted)",
                    test=test + ", SE over instantiations",
                    detectable=det,
                )
            )
    return frame(rows)
