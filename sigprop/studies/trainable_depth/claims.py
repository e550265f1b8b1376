"""The statistics of the claim of Huang, Xu, Du, Zeng, Zhao 2019, "Mean field theory for deep
dropout networks" (arXiv:1912.09132) §5.2 / Table 1 / Fig. 7, declared in ``CLAIMS``
(``__init__.py``): the trainable region's boundary follows min(12ξ1, 12ξ2) ("realistic
condition") better than Schoenholz et al.'s 6ξ2 ("independent assumption").

The fit errors are computed per seed (each seed's runs give one trainability map) and judged on
the seed mean of their difference with its SE over seeds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import false_pass_z, margin_verdict
from ...claims.declared import build, result
from . import CLAIMS, SOURCE, UNRESOLVABLE, trainability
from .analysis import curve


def seed_cells(runs: pd.DataFrame, metric: str, fraction: float, chance: float) -> dict:
    """``{seed: trainable cells of that seed's runs}`` (:func:`sigprop.studies.trainable_depth.trainability.trainable`,
    threshold per panel and seed); one seed 0 when the table has no ``seed`` column."""
    runs = trainability.add_panels(runs)
    if "seed" not in runs.columns:
        runs = runs.assign(seed=0)
    return {
        int(s): trainability.trainable(
            trainability.final_accuracy(g, metric, chance), fraction, chance
        )
        for s, g in runs.groupby("seed", sort=True)
    }


def decide(mean: float, se: float, n: int, cells: int, k: float, tol: float):
    """The verdict on the seed mean of err(6ξ2) − err(min(12ξ1, 12ξ2)).

    The SE is at least one cell per seed, 1 / (cells √n) (the difference moves in steps of one
    cell, and identical values over a few seeds do not show an SE of 0); the margin is
    max(k SE, ``tol``).  Pass above the margin, fail below minus it, else inconclusive (also
    with fewer than 2 seeds, and on the margin itself: a mean of whole cells can equal it
    exactly, :func:`sigprop.claims.margin_verdict`).  Returns ``(verdict, margin, se_used)``.
    """
    if n < 2 or not np.isfinite(mean) or cells < 1:
        return "inconclusive", float("nan"), float("nan")
    se_used = max(float(se) if np.isfinite(se) else 0.0, 1.0 / (cells * np.sqrt(n)))
    margin = max(k * se_used, tol)
    return margin_verdict(mean, margin), float(margin), float(se_used)


def disagreement(cells: pd.DataFrame, rule_a, rule_b) -> float:
    """The fraction of cells the two rules 'trainable iff L <= curve(σ_w²)' classify
    differently: the largest |err(a) − err(b)| the cells can show, whatever trains (on every
    other cell both rules are right or both wrong).  0 when both curves lie beyond the depth
    grid on the same side in every column: the comparison is censored by the grid."""
    rho, sw = cells.keep_rate.to_numpy(), cells.sigma_w2.to_numpy()
    d = cells.depth.to_numpy()
    a = d <= np.asarray(rule_a(rho, sw))
    b = d <= np.asarray(rule_b(rho, sw))
    return float(np.mean(a != b)) if len(cells) else float("nan")


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    """'The trainable region's boundary follows min(12ξ1, 12ξ2) better than 6ξ2.'

    Measure: per seed, for each curve, the fraction of (σ_w², L) cells whose trainability the
    rule 'trainable iff L ≤ curve(σ_w²)' gets wrong (the fit error); the statistic is the seed
    mean of err(6ξ2) − err(min(12ξ1, 12ξ2)) with its SE over seeds (:func:`decide`: pass above
    max(``seed_z`` SE, ``error_tolerance``), fail below minus that).  One row over all panels
    and one per panel (the runs' blocks, 000 Fig. 7 (a)-(h)).  ``values`` keep the seed-mean
    fit errors ``err_min_12xi1_12xi2``, ``err_6xi2`` and ``cells`` (read by 000 Table 1).

    Censoring by the grid: the difference can be nonzero only on the cells where the two rules
    disagree (:func:`disagreement`); when their fraction is at most the margin (e.g. both
    curves beyond the largest depth in every σ_w² column) no outcome could pass or fail, so
    ``detectable`` is inf and the row is inconclusive.
    """
    metric, fraction = p.analysis.metric, float(p.claims.trainable_fraction)
    tol, k = float(p.claims.error_tolerance), float(p.claims.seed_z)
    fields = dict(k=k, tol=tol, metric=metric, fraction=fraction)
    chance = 1.0 / trainability.n_classes(runs)
    by_seed = seed_cells(runs, metric, fraction, chance)
    seeds = sorted(by_seed)
    rule_min, rule_6 = curve(theory, "min_12xi1_12xi2"), curve(theory, "6xi2")
    names = sorted(set().union(*(set(c.panel) for c in by_seed.values())))
    groups = [("all", None)] + [
        (n.split(" ")[0] if n.startswith("(") else n.replace(" ", ""), n) for n in names
    ]
    out = []
    for label, panel in groups:
        e_min, e_6, n_cells, reach, rho = [], [], [], [], float("nan")
        for s in seeds:
            g = by_seed[s] if panel is None else by_seed[s][by_seed[s].panel == panel]
            if g.empty:
                continue
            e_min.append(trainability.boundary_error(g, rule_min))
            e_6.append(trainability.boundary_error(g, rule_6))
            n_cells.append(len(g))
            reach.append(disagreement(g, rule_6, rule_min))
            if panel is not None:
                rho = float(g.keep_rate.iloc[0])
        n = len(e_min)
        diff = np.asarray(e_6) - np.asarray(e_min)
        mean = float(diff.mean()) if n else float("nan")
        se = float(diff.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
        cells = int(min(n_cells)) if n_cells else 0
        verdict, margin, se_used = decide(mean, se, n, cells, k, tol)
        # |seed mean| <= mean disagreement whatever trains: at or below the margin, no
        # attainable difference can pass or fail, so nothing is detectable
        attainable = float(np.mean(reach)) if reach else float("nan")
        unresolvable = bool(np.isfinite(margin) and attainable <= margin + 1e-12)
        detectable = float("inf") if unresolvable else margin
        verdict = "inconclusive" if unresolvable else verdict
        errs = (float(np.mean(e_min)), float(np.mean(e_6))) if n else (np.nan, np.nan)
        values = dict(err_min_12xi1_12xi2=errs[0], err_6xi2=errs[1], cells=cells, keep_rate=rho)
        values.update(se_diff=se_used, n_seeds=n, disagreement=attainable)
        out.append(
            result(
                "boundary_min12xi_vs_6xi2",
                label,
                measured=mean,
                tolerance=tol,
                verdict=verdict,
                values=values,
                detectable=detectable,
                se=se_used,
                false_pass=false_pass_z(k, n - 1),
                # the pooled row re-uses the panels' cells: shown as a summary, never tallied
                kind="summary" if panel is None else None,
                texts={"detail": UNRESOLVABLE} if unresolvable else None,
                **values,
                where="all panels" if panel is None else panel,
                per_seed=", ".join(f"{d:+.3f}" for d in diff),
                mean=mean,
                bound=margin,
                **fields,
            )
        )
    return build(p.study, CLAIMS, out, SOURCE)
