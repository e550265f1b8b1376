"""Study: trainability of pruned FFNNs at EOC, EOC + rescaling and ordered-phase init (003 Figs. 3, 5).

003 (Hayou, Ton, Doucet, Teh, "Robust Pruning at Initialization") Sec. 4.1: FFNNs
pruned at initialization by sensitivity-based pruning (SNIP score ``|W dL/dW|``,
Sec. 2.2) to sparsity ``s`` and trained; test accuracy over depth ``L`` x ``s``
for three initializations: on the edge of chaos (``chi = 1``), on the EOC with
the rescaling trick (Prop. 1, Eq. 7, Alg. 1; variance-preserving form, see
:mod:`sigprop.theory.pruning`), and in the ordered phase (``chi < 1``).  Fig. 3
is tanh, Fig. 5 (App. H) ELU; ReLU is added here.  Runs are pruned and trained
by the workflow's prune and train stages; the scheme of a run is read from its
fields: ``prune_rescale`` (EOC + rescaling) or the phase of its
``(sigma_w2, sigma_b2)`` (``chi_1`` of :mod:`sigprop.theory.meanfield`).

Claims (thresholds in the study config, ``analysis``):
(1) ordered-phase init is untrainable in the paper's region "s > 40% and L > 60"
    (Sec. 4.1), tested on the config's ``ordered_region`` (quick scale: a scaled
    region of its small grid);
(2) rescaling enlarges the trainable region: more trainable (s, L) cells with
    EOC + rescaling than with EOC alone (Sec. 4.1, Prop. 1);
(3) EOC init has at least as many trainable cells as ordered-phase init (Sec. 4.1,
    Thm. 1: "For an EOC initialization, the set (s, L) ... becomes larger").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claims import frame, row
from ..figures.pruning_eoc import accuracy_grid
from ..theory import meanfield

TASK = "train"
FIGURES = {"pruning_eoc_accuracy": accuracy_grid}
CAPTIONS = {
    "pruning_eoc_accuracy": (
        "Final test accuracy of FFNNs pruned at initialization by SNIP (003 Sec. 2.2) over depth L "
        "(rows of each panel) and sparsity s (columns), mean over seeds, for EOC init + rescaling "
        "(003 Prop. 1 / Alg. 1, variance-preserving), EOC init and ordered-phase init (columns of "
        "panels), one row of panels per activation (003 Fig. 3: tanh; Fig. 5: ELU; ReLU added). "
        "Cells are marked 'x' when below the study's trainability threshold; the dashed box is the "
        "region where the claims expect ordered-phase init to be untrainable. A run whose loss "
        "diverged (NaN) counts as accuracy 0."),
}
SOURCE = "003 Sec. 4.1, Figs. 3, 5"
SCHEMES = ("EOC + rescaling", "EOC", "ordered")
SETTING = ["activation", "sigma_w2", "sigma_b2", "keep_rate"]


def theory_table(study: str, theory_cfg: dict, settings: list[dict]) -> pd.DataFrame:
    """Per setting: ``chi_1`` (= 003's ``chi = f'(1)`` at keep rate 1) and ``q*``."""
    rows = []
    for s in settings:
        act, sw, sb, rho = s["activation"], s["sigma_w2"], s["sigma_b2"], s["keep_rate"]
        base = {"study": study, "activation": act, "sigma_w2": sw, "sigma_b2": sb, "keep_rate": rho}
        rows.append({**base, "quantity": "chi1", "value": float(meanfield.chi1(sw, sb, rho, act))})
        rows.append({**base, "quantity": "q_star", "value": float(meanfield.q_star(sw, sb, rho, act))})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ analysis


def final_accuracy(runs: pd.DataFrame, metric: str = "test_acc") -> pd.DataFrame:
    """One row per run: its hyperparameters and ``acc``, the metric at the run's last step
    (NaN, i.e. untrainable, for a diverged run)."""
    d = runs[runs.metric == metric]
    last = d[d.step == d.groupby("run_id").step.transform("max")]
    keep = ["run_id", "activation", "sigma_w2", "sigma_b2", "keep_rate", "depth", "sparsity",
            "prune_rescale", "seed", "value"]
    return last[keep].rename(columns={"value": "acc"}).reset_index(drop=True)


def schemes(acc: pd.DataFrame, theory: pd.DataFrame, eoc_tol: float = 1e-3) -> pd.Series:
    """The init scheme of each run: ``EOC + rescaling`` (``prune_rescale``), ``EOC``
    (``|chi_1 - 1| <= eoc_tol``), ``ordered`` (``chi_1 < 1``) or ``chaotic``."""
    chi = theory[theory.quantity == "chi1"].set_index(SETTING).value
    c = chi.reindex(pd.MultiIndex.from_frame(acc[SETTING])).to_numpy(float)
    out = np.where(c < 1 - eoc_tol, "ordered", np.where(c > 1 + eoc_tol, "chaotic", "EOC"))
    out = np.where(acc.prune_rescale.astype(bool).to_numpy(), "EOC + rescaling", out)
    return pd.Series(out, index=acc.index, name="scheme")


def cell_table(runs: pd.DataFrame, theory: pd.DataFrame, metric: str = "test_acc") -> pd.DataFrame:
    """Mean final accuracy per (activation, scheme, depth, sparsity) cell, with ``n`` seeds and
    ``chi1``; a diverged run counts as accuracy 0 (not trainable)."""
    acc = final_accuracy(runs, metric)
    acc["scheme"] = schemes(acc, theory)
    acc["diverged"] = acc.acc.isna()
    acc["acc"] = acc.acc.fillna(0.0)
    chi = theory[theory.quantity == "chi1"].set_index(SETTING).value
    acc["chi1"] = chi.reindex(pd.MultiIndex.from_frame(acc[SETTING])).to_numpy(float)
    return (acc.groupby(["activation", "scheme", "depth", "sparsity"], as_index=False)
            .agg(acc=("acc", "mean"), n=("acc", "size"), n_diverged=("diverged", "sum"),
                 chi1=("chi1", "first")))


def region_of(cfg: dict) -> dict | None:
    """``analysis.ordered_region`` for the config's scale (``{quick: {...}, paper: {...}}``), or the
    mapping itself when it is not keyed by scale."""
    reg = cfg.get("analysis", {}).get("ordered_region")
    if reg is None or "min_depth" in reg:
        return reg
    return reg.get(cfg.get("scale", "quick"))


def in_region(cells: pd.DataFrame, region: dict) -> np.ndarray:
    """Cells with ``sparsity >= min_sparsity`` and ``depth >= min_depth``."""
    return ((cells.sparsity >= float(region["min_sparsity"]) - 1e-12)
            & (cells.depth >= int(region["min_depth"]))).to_numpy()


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict) -> pd.DataFrame:
    an = cfg.get("analysis", {})
    study = cfg["name"]
    metric = an.get("metric", "test_acc")
    train_acc = float(an["trainable_acc"])
    untrain_acc = float(an["untrainable_acc"])
    region = region_of(cfg)
    want = float(an.get("untrainable_fraction", 1.0))
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
                f"in the region s >= {region['min_sparsity']:g}, L >= {region['min_depth']} "
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
