"""Claims of 004 Thms. 3/6 (initialization), Fig. 2 and the Sec. 5 findings (Chen, Wang, Zhao,
Papailiopoulos & Koutris 2018, arXiv:1806.03791)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, kendall_tau, row
from .analysis import batch_table, init_table, net_table

SOURCE_FIG2 = "004 Sec. 5, Fig. 2"
SOURCE_THM = "004 Sec. 4, Thm. 3 (Eq. 4.1); App. C, Thm. 6"
SOURCE_THRESH = "004 Sec. 5 (findings 1-3), Figs. 3(a), 4(a)"


def trend(df: pd.DataFrame, x: str, y: str, by: str) -> tuple[float, str]:
    """Mean over groups ``by`` of Kendall tau-b(x, y), over groups with >= 2 values of x;
    without such a group (e.g. nets of fixed parameter count, one width per depth), tau-b
    over all rows.  Returns (tau, description)."""
    d = df[[x, y, by]]
    taus = {k: kendall_tau(g[x], g[y]) for k, g in d.groupby(by)}
    taus = {k: v for k, v in taus.items() if np.isfinite(v)}
    if taus:
        return float(np.mean(list(taus.values()))), (
            f"tau-b per {by}: " + ", ".join(f"{k}: {v:+.2f}" for k, v in taus.items()))
    return kendall_tau(d[x], d[y]), f"tau-b over all {len(d)} nets (no {by} with two values of {x})"


def _tau_claim(study, cid, claim, source, tau, desc, tau_min, sign=+1) -> dict:
    ok = bool(np.isfinite(tau) and sign * tau >= tau_min)
    exp = f"tau-b {'>=' if sign > 0 else '<='} {sign * tau_min:+g}"
    return row(study, cid, claim, source, measured=tau, expected=exp, tolerance=tau_min,
               verdict="pass" if ok else "fail",
               detail=desc if np.isfinite(tau) else f"no rank correlation computable; {desc}")


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    """Claims of 004 Thms. 3/6 (initialization), Fig. 2 and the Sec. 5 findings (see the config)."""
    study = p.study
    nt = net_table(runs, p.analysis)
    rows = _init_claims(study, init_table(runs, theory), p)
    if len(nt):
        rows += _fig2_claims(study, nt, p) + _threshold_claims(study, nt, batch_table(runs), p)
    return frame(rows)


def _init_claims(study: str, it: pd.DataFrame, p) -> list[dict]:
    tau_min, k = float(p.claims.tau_min), float(p.claims.z_max)
    want = float(p.claims.within_fraction)
    if not len(it):
        return []
    rows = []
    for cid, claim, x, by, sign in (
            ("diversity_rises_with_width[thm6]", ("At N(0,1) initialization (004's setting) the "
             "E-ratio (n x gradient diversity) rises with the width"), "width", "depth", +1),
            ("diversity_falls_with_depth[thm6]", ("At N(0,1) initialization (004's setting) the "
             "E-ratio falls with the depth"), "depth", "width", -1)):
        tau, desc = trend(it, x, "rho", by)
        rows.append(_tau_claim(study, cid, claim + " (004 Thm. 3 and its discussion)", SOURCE_THM,
                               tau, desc + f"; {int(it.draws.min())}+ draws per net", tau_min, sign))
    z_b = (it.rho - it.bound) / it.rho_se
    ok_b = bool((it.rho + k * it.rho_se >= it.bound).all())
    worst = it.loc[z_b.idxmin()]
    rows.append(row(study, "thm3_bound_holds", "The Thm. 3 (Eq. 4.1) lower bound holds for the "
                    "E-ratio rho = E[n sum ||grad f_i||^2] / E[||sum grad f_i||^2] of every net",
                    SOURCE_THM, measured=float(z_b.min()), expected="rho >= bound (z >= -k)",
                    tolerance=k, verdict="pass" if ok_b else "fail",
                    detail=(f"min over {len(it)} nets of (rho - bound)/SE at width "
                            f"{int(worst.width)}, depth {int(worst.depth)}: rho = {worst.rho:.4g} "
                            f"± {worst.rho_se:.2g}, bound = {worst.bound:.4g}; n = {int(worst.n)}, "
                            f"d = {int(worst.d)} (the bound is for n -> infinity; Thm. 6 at this n "
                            f"is {worst.thm6:.4g}); bound/rho from "
                            f"{(it.bound / it.rho).min():.2f} to {(it.bound / it.rho).max():.2f}")))
    z6 = (it.rho - it.thm6) / it.rho_se
    frac = float(np.mean(np.abs(z6) <= k))
    rel = it.rho / it.thm6 - 1
    rows.append(row(study, "thm6_expectation", "Thm. 6 gives the expected sums of squared "
                    "per-example gradient norms and of inner products (their ratio at the "
                    "data set's n) of linear nets at N(0,1) initialization",
                    SOURCE_THM, measured=frac,
                    expected=f">= {want:g} of nets with |rho - Thm. 6| <= {k:g} SE",
                    tolerance=want, verdict="pass" if frac >= want else "fail",
                    detail=(f"{len(it)} nets, {int(it.draws.min())}-{int(it.draws.max())} draws "
                            f"each; max |z| {np.nanmax(np.abs(z6)):.2f}; rho/Thm. 6 - 1 from "
                            f"{rel.min():+.3f} to {rel.max():+.3f} (median {rel.median():+.3f}); "
                            f"SE/rho median {(it.rho_se / it.rho).median():.3f}")))
    return rows


def _fig2_claims(study: str, nt: pd.DataFrame, p) -> list[dict]:
    tau_min, budget = float(p.claims.tau_min), float(p.analysis.fig2_epochs)
    nt = nt.fillna({"largest_batch": 0.0})      # no converging batch size: below every batch
    rows = []
    for cid, claim, x, by, sign, y in (
            ("diversity_rises_with_width[train]", ("The gradient diversity averaged over "
             "training rises with the width (Fig. 2(a))"), "width", "depth", +1, "div_train"),
            ("diversity_falls_with_depth[train]", ("The gradient diversity averaged over "
             "training falls with the depth (Fig. 2(a))"), "depth", "width", -1, "div_train"),
            ("diversity_rises_with_width[init]", ("The gradient diversity of the trained nets "
             "at their initialization (fc init, the data set) rises with the width"),
             "width", "depth", +1, "div_init"),
            ("diversity_falls_with_depth[init]", ("The gradient diversity of the trained nets "
             "at their initialization falls with the depth"), "depth", "width", -1, "div_init"),
            ("largest_batch_rises_with_width", (f"The largest batch size converging to the loss "
             f"target within {budget:g} epochs rises with the width (Fig. 2(b))"), "width",
             "depth", +1, "largest_batch"),
            ("largest_batch_falls_with_depth", (f"The largest batch size converging within "
             f"{budget:g} epochs falls with the depth (Sec. 1: deeper nets are less amenable to "
             "large-batch training)"), "depth", "width", -1, "largest_batch")):
        tau, desc = trend(nt, x, y, by)
        if y == "largest_batch":
            desc += ("; no converging batch counts as 0; a group with one value counts as tau 0; "
                     "largest batch per net " + ", ".join(
                         f"K{int(r.width)}L{int(r.depth)}: {r.largest_batch:g}" for r in nt.itertuples()))
        elif y == "div_train":
            m = nt.groupby("depth").measurements.mean()
            desc += ("; the average runs over the measurements before the target is reached: mean "
                     "measurements per run by depth " + ", ".join(f"{k}: {v:.1f}" for k, v in m.items()))
        rows.append(_tau_claim(study, cid, claim, SOURCE_FIG2, tau, desc, tau_min, sign))
    for which, col in (("train", "div_train"), ("init", "div_init")):
        tau = kendall_tau(nt[col], nt.largest_batch)
        rows.append(_tau_claim(
            study, f"largest_batch_rises_with_diversity[{which}]",
            "The largest batch size converging within the budget grows with the gradient "
            f"diversity ({'averaged over training' if which == 'train' else 'at initialization'}"
            "; Fig. 2(c))", SOURCE_FIG2, tau,
            f"tau-b over {len(nt)} nets (no converging batch counts as 0); largest batch from "
            f"{nt.largest_batch.min():g} to {nt.largest_batch.max():g}", tau_min))
    return rows


def _threshold_claims(study: str, nt: pd.DataFrame, bt: pd.DataFrame, p) -> list[dict]:
    tau_min, want = float(p.claims.tau_min), float(p.claims.within_fraction)
    th_cfg = p.analysis.threshold
    frac = float(nt.has_threshold.mean())
    bad = nt[~nt.has_threshold]
    rows = [row(study, "batch_threshold_exists", "For every net there is a batch-size "
                "threshold B*: up to B* the epochs to the target stay near their minimum, "
                "beyond it they grow", SOURCE_THRESH, measured=frac,
                expected=f">= {want:g} of nets", tolerance=want,
                verdict="pass" if frac >= want else "fail",
                detail=(f"flat: epochs <= max({th_cfg.flat_factor} e_min, e_min + 1)"
                        f"; growth: epochs at the largest batch >= "
                        f"{th_cfg.growth_factor} e_min; B* per net "
                        + ", ".join(f"K{int(r.width)}L{int(r.depth)}: {r.threshold:g}"
                                    for r in nt.itertuples())
                        + ("; no threshold: " + ", ".join(f"K{int(r.width)}L{int(r.depth)}"
                                                          for r in bad.itertuples())
                           if len(bad) else "")))]
    tau, desc = trend(nt[nt.has_threshold], "width", "threshold", "depth")
    rows.append(_tau_claim(study, "threshold_rises_with_width", "The batch threshold B* rises "
                           "with the width", SOURCE_THRESH, tau, desc, tau_min))
    tau, desc = trend(nt[nt.has_threshold], "depth", "threshold", "width")
    rows.append(_tau_claim(study, "threshold_falls_with_depth", "The observed threshold B* "
                           "becomes smaller when the network becomes deeper",
                           "004 Sec. 1 (contribution); Sec. 5, Fig. 3", tau, desc, tau_min, -1))
    top = bt[bt.batch_size == bt.batch_size.max()].copy()
    top["ep"] = top["median"].replace(np.inf, np.nan).fillna(top.budget + 1)
    tau, desc = trend(top, "width", "ep", "depth")
    rows.append(_tau_claim(study, "wider_fewer_epochs_at_large_batch", "At the largest batch "
                           f"size ({int(bt.batch_size.max())}) wider nets need fewer epochs to "
                           "the target", SOURCE_THRESH, tau,
                           desc + "; unconverged runs ranked as budget + 1 (a depth where none "
                           "converges counts as tau 0)", tau_min, -1))
    return rows
