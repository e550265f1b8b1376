"""Claims of Hayou et al. 2021 (arXiv:2002.08797) Sec. 4.1: ordered-phase init is untrainable
after pruning in the paper's region, the rescaling trick enlarges the trainable region, and EOC
init keeps at least as many trainable cells as ordered-phase init."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, row
from . import SOURCE
from .analysis import SCHEMES, cell_table, in_region


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    an, cl = p.analysis, p.claims
    study = p.study
    metric = an.metric
    train_acc = float(an.trainable_acc)
    untrain_acc = float(cl.untrainable_acc)
    region = an.ordered_region
    want = float(cl.untrainable_fraction)
    cells = cell_table(runs, theory, metric)
    rows = []
    for act in sorted(cells.activation.unique()):
        c = cells[cells.activation == act]
        n_cells = {s: int(((c.scheme == s) & (c.acc >= train_acc)).sum()) for s in SCHEMES}
        tot = {s: int((c.scheme == s).sum()) for s in SCHEMES}
        o = c[c.scheme == "ordered"]
        reg = o[in_region(o, region)]
        if len(reg):
            frac = float((reg.acc <= untrain_acc).mean())
            rows.append(row(
                study, f"ordered_untrainable_region[{act}]",
                f"Ordered-phase init ({act}, chi_1 = {reg.chi1.iloc[0]:.3g}) is untrainable after pruning "
                f"in the region s >= {region.min_sparsity:g}, L >= {region.min_depth} "
                "(paper: s > 40% and L > 60)",
                SOURCE, measured=frac,
                expected=f">= {want:g} of the region's cells with test accuracy <= {untrain_acc:g}",
                tolerance=0.0, verdict="pass" if frac >= want else "fail",
                detail="; ".join(f"L={int(r.depth)}, s={r.sparsity:g}: {r.acc:.3f}" for r in reg.itertuples()),
                values={"fraction": frac, "max_acc": float(reg.acc.max())}))
        else:
            rows.append(row(study, f"ordered_untrainable_region[{act}]", "ordered-phase region untrainable",
                            SOURCE, measured=np.nan, expected="cells in the region", tolerance=np.nan,
                            verdict="fail", detail="no ordered-phase cells in the configured region"))
        r, e, od = n_cells["EOC + rescaling"], n_cells["EOC"], n_cells["ordered"]
        ok = tot["EOC + rescaling"] > 0 and tot["EOC"] > 0 and r > e
        rows.append(row(
            study, f"rescaling_enlarges_trainable_region[{act}]",
            f"The rescaling trick (Prop. 1) gives more trainable (s, L) cells than EOC init alone ({act})",
            SOURCE, measured=float(r - e), expected="> 0 more trainable cells with rescaling",
            tolerance=0.0, verdict="pass" if ok else "fail",
            detail=(f"trainable (test acc >= {train_acc:g}) cells: EOC + rescaling {r}/{tot['EOC + rescaling']}, "
                    f"EOC {e}/{tot['EOC']}, ordered {od}/{tot['ordered']}; mean accuracy over the grid: "
                    + ", ".join(f"{s} {c[c.scheme == s].acc.mean():.3f}" for s in SCHEMES)
                    + "; diverged runs (counted as accuracy 0): "
                    + ", ".join(f"{s} {int(c[c.scheme == s].n_diverged.sum())}" for s in SCHEMES)),
            values={"rescaled": r, "eoc": e, "ordered": od}))
        ok = tot["EOC"] > 0 and tot["ordered"] > 0 and e >= od
        rows.append(row(
            study, f"eoc_at_least_ordered[{act}]",
            f"EOC init keeps at least as many trainable (s, L) cells as ordered-phase init ({act})",
            SOURCE, measured=float(e - od), expected=">= 0", tolerance=0.0,
            verdict="pass" if ok else "fail",
            detail=f"trainable cells: EOC {e}/{tot['EOC']}, ordered {od}/{tot['ordered']}",
            values={"eoc": e, "ordered": od}))
    return frame(rows)
