"""Statistics of the claims of Hayou, Ton, Doucet & Teh 2021, "Robust Pruning at Initialization"
(arXiv:2002.08797) Sec. 4.1, Figs. 3, 5, declared in ``CLAIMS`` (``__init__.py``): ordered-phase
init is untrainable after pruning in the paper's region (tested against an unpruned control with
the same init), the rescaling trick (Prop. 1) enlarges the trainable region, and EOC init has a
larger trainable region than ordered-phase init (Thm. 1).  Every comparison is a difference with
a standard error over seeds (:func:`sigprop.claims.z_above`); the ordered phase's chi_1 is our
choice (the paper gives no sigma's) and every row says so.  003 trains tanh (Fig. 3) and ELU
(Fig. 5) nets only (``claims.paper_activations``); the same claims for another activation (ReLU)
are ours: rows of kind ``beyond`` (003's claim extended to that activation), never in 003's
tally."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import false_pass_z, z_above
from ...claims.declared import build, result
from . import CLAIMS, SOURCE
from .analysis import SCHEMES, cell_table, in_region, trainable_counts


def _se(sd, n):
    """Standard error of a mean from its sd and n (NaN below 2 seeds)."""
    return float(sd) / np.sqrt(n) if n >= 2 and np.isfinite(sd) else np.nan


def _ordered(act, c, p, **over):
    """``ordered_untrainable_region[act]``: in the region's cells where the unpruned control with
    the same ordered-phase init trains, the pruned net is untrainable and falls below the
    control by more than k SE."""
    an, cl = p.analysis, p.claims
    region, train_acc, k = an.ordered_region, float(an.trainable_acc), float(cl.z)
    untrain_acc, want = float(cl.untrainable_acc), float(cl.untrainable_fraction)
    o = c[(c.scheme == "ordered") & ~c.dense]
    dense = c[(c.scheme == "ordered") & c.dense].set_index("depth")
    reg = o[in_region(o, region)]
    f = dict(
        act=act,
        chi=float(o.chi1.iloc[0]) if len(o) else np.nan,
        region=region,
        k=k,
        train=train_acc,
        untrain=untrain_acc,
        want=want,
        **over,
    )
    if reg.empty or dense.empty:
        why = (
            "no ordered-phase cells in the region"
            if reg.empty
            else "no dense ordered-phase control"
        )
        return result(
            "ordered_untrainable_region",
            act,
            measured=np.nan,
            tolerance=np.nan,
            verdict="inconclusive",
            texts={"expected": "cells in the region", "detail": why},
            **f,
        )
    parts, ok, trains, detect, tested = [], [], [], [], 0
    for r in reg.sort_values(["depth", "sparsity"]).itertuples():
        cell = f"L={int(r.depth)}, s={r.sparsity:g}: pruned {r.acc:.3f}"
        if r.depth not in dense.index:
            parts.append(f"{cell}, no dense control")
            continue
        d = dense.loc[r.depth]
        if d.acc < train_acc:
            parts.append(f"{cell}, dense {d.acc:.3f} (dense does not train: not a test of pruning)")
            continue
        tested += 1
        se = np.hypot(_se(d.sd, d.n), _se(r.sd, r.n))
        v, _, det = z_above(float(d.acc - r.acc), se, k)
        ok.append(v == "pass" and r.acc <= untrain_acc)
        trains.append(r.acc >= train_acc)
        detect.append(det)
        n = int(min(d.n, r.n))
        parts.append(
            f"{cell}, dense {d.acc:.3f}, drop {d.acc - r.acc:.3f} (SE {se:.3f}, {n} seeds)"
        )
    frac = float(np.mean(ok)) if tested else np.nan
    if not tested:
        verdict, detectable = "inconclusive", np.nan
        parts.append(
            "no region cell where the dense control trains: the design cannot test the claim"
        )
    elif not np.all(np.isfinite(detect)):
        verdict, detectable = "inconclusive", np.nan
    else:
        detectable = float(np.max(detect))
        verdict = "pass" if frac >= want else ("fail" if any(trains) else "inconclusive")
    values = dict(
        fraction=frac,
        tested_cells=tested,
        region_cells=len(reg),
        max_pruned_acc=float(reg.acc.max()),
    )
    return result(
        "ordered_untrainable_region",
        act,
        measured=frac,
        tolerance=0.0,
        verdict=verdict,
        detectable=detectable,
        values=values,
        cells="; ".join(parts),
        **f,
    )


def _count(claim, act, counts, a, b, k, **f):
    """Mean over seeds of the difference in trainable-cell counts between schemes ``a`` and
    ``b``, with its SE (unpaired), by :func:`sigprop.claims.z_above`."""
    ca = counts[counts.scheme == a]["count"].to_numpy(float)
    cb = counts[counts.scheme == b]["count"].to_numpy(float)
    if len(ca) == 0 or len(cb) == 0:
        texts = {
            "expected": "> 0",
            "detail": "no runs of {missing}",
            "test": "mean over seeds of the trainable-cell count difference > k SE",
        }
        return result(
            claim,
            act,
            measured=np.nan,
            tolerance=np.nan,
            verdict="inconclusive",
            texts=texts,
            missing=a if len(ca) == 0 else b,
            act=act,
            **f,
        )
    tot = {
        s: int(counts[counts.scheme == s].cells.max()) if (counts.scheme == s).any() else 0
        for s in SCHEMES
    }
    eff = float(ca.mean() - cb.mean())
    se = (
        float(np.sqrt(ca.var(ddof=1) / len(ca) + cb.var(ddof=1) / len(cb)))
        if min(len(ca), len(cb)) >= 2
        else np.nan
    )
    verdict, z_test, det = z_above(eff, se, k)
    n = int(min(len(ca), len(cb)))
    # a count is an integer: a mean over n seeds moves in steps of 1/n
    det = max(det, 1.0 / n) if np.isfinite(det) else det
    return result(
        claim,
        act,
        measured=eff,
        tolerance=k * se if np.isfinite(se) else np.nan,
        verdict=verdict,
        detectable=det,
        se=se,
        false_pass=false_pass_z(k, n - 1),
        values={a: float(ca.mean()), b: float(cb.mean()), "se": se},
        act=act,
        k=k,
        n=n,
        z_test=z_test,
        err=se,
        a=a,
        b=b,
        ta=tot.get(a, 0),
        tb=tot.get(b, 0),
        ca=ca.astype(int).tolist(),
        cb=cb.astype(int).tolist(),
        **f,
    )


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    an, cl = p.analysis, p.claims
    train_acc, k = float(an.trainable_acc), float(cl.z)
    cells = cell_table(runs, theory, an.metric)
    counts = trainable_counts(runs, theory, train_acc, an.metric)
    results = []
    for act in sorted(cells.activation.unique()):
        c = cells[cells.activation == act]
        n = counts[counts.activation == act]
        # 003's statement for an activation it does not train: a beyond row of the same claim
        ours = {}
        if act not in tuple(cl.paper_activations):
            where = SOURCE.split("003 ", 1)[-1]
            ours = dict(
                kind="beyond",
                source=f"003's {where} claim extended to {act}, which 003 does not train",
            )
        results.append(_ordered(act, c, p, **ours))
        by = {s: c[~c.dense & (c.scheme == s)] for s in SCHEMES}
        means = ", ".join(f"{s} {d.acc.mean():.3f}" for s, d in by.items())
        diverged = ", ".join(f"{s} {int(d.n_diverged.sum())}" for s, d in by.items())
        results.append(
            _count(
                "rescaling_enlarges_trainable_region",
                act,
                n,
                "EOC + rescaling",
                "EOC",
                k,
                means=means,
                diverged=diverged,
                **ours,
            )
        )
        chi = by["ordered"].chi1
        chi = float(chi.iloc[0]) if len(chi) else np.nan
        results.append(
            _count("eoc_more_trainable_than_ordered", act, n, "EOC", "ordered", k, chi=chi, **ours)
        )
    return build(p.study, CLAIMS, results, SOURCE)
