"""Claims of Huang et al. 2019 (arXiv:1912.09132) §5.2 / Table 1 on the trainable depth of
dropout networks."""

from __future__ import annotations

import pandas as pd

from ...claims import frame, row
from ...measure import trainability
from . import SOURCE
from .analysis import curve


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    """'The trainable region's boundary follows min(12ξ1, 12ξ2) better than 6ξ2.'

    Measure: for each curve, the fraction of (σ_w², L) cells whose trainability
    the rule 'trainable iff L ≤ curve(σ_w²)' gets wrong (the fit error).  The
    measured value is err(6ξ2) − err(min(12ξ1, 12ξ2)); verdict 'pass' when it
    exceeds the tolerance, 'fail' when it is below −tolerance, 'inconclusive'
    when both rules classify the grid equally well within the tolerance.  One row over all
    panels and one per panel (the runs' blocks, 000 Fig. 7 (a)-(h)).
    """
    metric = p.analysis.metric
    fraction = float(p.claims.trainable_fraction)
    tol = float(p.claims.error_tolerance)
    study = p.study
    chance = 1.0 / trainability.n_classes(runs)
    acc = trainability.final_accuracy(trainability.add_panels(runs), metric, chance)
    cells = trainability.trainable(acc, fraction, chance)
    rule_min = curve(theory, "min_12xi1_12xi2")
    rule_6 = curve(theory, "6xi2")
    rows = []
    panels = [("all", cells)] + [(k.split(" ")[0] if k.startswith("(") else k.replace(" ", ""), g)
                                 for k, g in cells.groupby("panel")]
    for label, g in panels:
        e_min = trainability.boundary_error(g, rule_min)
        e_6 = trainability.boundary_error(g, rule_6)
        diff = e_6 - e_min
        verdict = "pass" if diff > tol else ("fail" if diff < -tol else "inconclusive")
        rows.append(row(
            study, f"boundary_min12xi_vs_6xi2[{label}]",
            "The trainable region's boundary follows min(12ξ1, 12ξ2) better than 6ξ2",
            SOURCE, measured=diff, expected="> 0 (err(6ξ2) − err(min(12ξ1,12ξ2)))", tolerance=tol,
            verdict=verdict,
            detail=(f"{'all panels' if label == 'all' else g.panel.iloc[0]}: misclassified cells: "
                    f"min(12ξ1,12ξ2) {e_min:.3f}, 6ξ2 {e_6:.3f} over {len(g)} cells; "
                    f"trainable = {metric} ≥ chance + {fraction:g}·(panel best − chance)"),
            values={"err_min_12xi1_12xi2": e_min, "err_6xi2": e_6, "cells": len(g),
                    "keep_rate": float(g.keep_rate.iloc[0]) if label != "all" else float("nan")}))
    return frame(rows)
