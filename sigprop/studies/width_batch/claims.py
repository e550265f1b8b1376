"""Claims of 004 Sec. 5 (findings 1-3) and Secs. 3-4 (Chen, Wang, Zhao, Papailiopoulos & Koutris
2018, arXiv:1806.03791), per panel (block).

All four are ``claim`` rows (measured on trained nets, they could come out either way).  The
three ordering claims use :func:`sigprop.claims.rank_claim`: Kendall's tau over the nets (one
item per net, epochs averaged over seeds) passes at ``claims.min_tau`` when a random order
would pass at most 5 % of the time (``false_pass``), fails at tau <= -min_tau when that is as
significant, and is inconclusive otherwise, with fewer than 4 ordered items, or when every net
ties in y (no order to test: tau is undefined, never read as 0); the test string states the
attainable tau-b levels and the chances of a pass and a fail under a random order, from the
null law with the ties kept.  ``threshold_exists`` is a
count over nets; its resolution (``detectable``) is one net, 1 / (nets with a B*)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import frame, rank_claim, row
from . import SOURCE
from .analysis import curves, diversity_bound, net_table


def _rank_row(study, cid, claim, source, x, y, need, expected, detail) -> dict:
    """An ordering claim through :func:`~sigprop.claims.rank_claim` (one item per net)."""
    r = rank_claim(x, y, need)
    return row(
        study,
        cid,
        claim,
        source,
        measured=r["measured"],
        expected=expected,
        tolerance=need,
        verdict=r["verdict"],
        detail=detail,
        values={"n_items": r["n"]},
        test=r["test"] + " (items: nets; y averaged over seeds)",
        detectable=r["detectable"],
        false_pass=r["false_pass"],
    )


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    study = p.study
    a = p.analysis
    need, frac = float(p.claims.min_tau), float(p.claims.min_fraction)
    factor = float(a.threshold_factor)
    budgets = [float(x) for x in a.budgets]
    mid = budgets[len(budgets) // 2]
    c = curves(runs, a)
    rows = []
    for panel, cp in c.groupby("panel", sort=False):
        nets = net_table(cp, a)
        wide = nets.head_width if (nets.get("head_depth", pd.Series([0])) > 0).any() else nets.width
        wide = wide.astype(float)
        reached = nets[nets.threshold.notna()]
        below = reached.threshold < reached.max_batch
        f = float(below.mean()) if len(reached) else np.nan
        desc = "; ".join(
            f"L={int(r.depth)},K={int(r.width)}: B*={r.threshold:g}" for r in nets.itertuples()
        )
        rows.append(
            row(
                study,
                f"threshold_exists[{panel}]",
                "A batch threshold exists beyond which more epochs are needed",
                SOURCE + " (finding 1)",
                measured=f,
                expected=f"fraction of nets with B* < largest batch >= {frac:g}",
                tolerance=frac,
                verdict="inconclusive" if not np.isfinite(f) else ("pass" if f >= frac else "fail"),
                detail=f"B* = largest batch with epochs <= {factor:g} x fewest; " + desc,
                values={"n_nets": len(reached)},
                test=(
                    f"count: fraction of the {len(reached)} nets with a B* whose B* is "
                    f"below the largest batch >= {frac:g} (B*: epochs, mean over seeds, "
                    f"within {factor:g} x the net's fewest); resolution one net"
                ),
                detectable=1.0 / len(reached) if len(reached) else np.nan,
            )
        )
        rows.append(
            _rank_row(
                study,
                f"threshold_grows_with_width[{panel}]",
                "The batch threshold grows with width (at a fixed parameter count)",
                SOURCE + " (finding 2)",
                wide,
                reached.threshold.reindex(nets.index),
                need,
                f"Kendall tau(K, B*) >= {need:g}",
                desc + " (nan: no batch reached the target, no B*: left out)",
            )
        )
        slow = nets.epochs_at_max_batch.fillna(np.inf)
        rows.append(
            _rank_row(
                study,
                f"wide_fewer_epochs_at_large_batch[{panel}]",
                "At the largest batch, wider nets need fewer epochs",
                SOURCE + " (finding 3)",
                wide,
                -slow.replace(np.inf, 1e300),
                need,
                f"Kendall tau(K, -epochs at b={nets.max_batch.max():g}) >= {need:g}",
                "; ".join(f"K={int(k)}: {e:.3g}" for k, e in zip(wide, nets.epochs_at_max_batch))
                + " (nan: not reached within the budget, ranked slowest)",
            )
        )
        arch, ds = nets.arch.iloc[0], nets.dataset.iloc[0]  # a panel is one arch on one data set
        if arch != "fc":  # Thm. 3 is for fully connected nets: no bound for LeNet / ResNet panels
            continue
        bound = [diversity_bound(arch, ds, int(r.width), int(r.depth)) for r in nets.itertuples()]
        lb = nets[f"largest_within_{mid:g}"]
        rows.append(
            _rank_row(
                study,
                f"largest_batch_follows_diversity_bound[{panel}]",
                "Nets with larger gradient diversity (004 Thm. 3 bound) reach the target "
                f"with larger batches within {mid:g} epochs",
                "004 Secs. 3-4, Thm. 3, Fig. 5",
                bound,
                lb.fillna(0.0),
                need,
                f"Kendall tau(bound, largest batch) >= {need:g}",
                "; ".join(
                    f"L={int(r.depth)},K={int(r.width)}: bound {b:.3g}, largest batch {x:g}"
                    for r, b, x in zip(nets.itertuples(), bound, lb)
                )
                + " (nan: no batch within the budget, ranked lowest); the bound is "
                "proven for linear nets, these are ReLU nets",
            )
        )
    return frame(rows)
