"""Claims of 004 Sec. 5 (findings 1-3) and Secs. 3-4 (Chen, Wang, Zhao, Papailiopoulos & Koutris
2018, arXiv:1806.03791), per panel (block): their statistics (texts: ``CLAIMS``, ``__init__.py``).

All four are ``claim`` rows (measured on trained nets, they could come out either way).  The
three ordering claims use :func:`sigprop.claims.rank_claim`: Kendall's tau over the nets (one
item per net, epochs averaged over seeds) passes at the smallest attainable tau >=
``claims.min_tau`` that a random order reaches at most 5 % of the time (its chance is
``false_pass``), fails at the mirrored threshold, and is inconclusive otherwise, with fewer than
4 ordered items, or when every net ties in y (no order to test: tau is undefined, never read as
0); the test string states the attainable tau-b levels, both thresholds and their chances
under a random order, from the null law with the ties kept.  ``threshold_exists`` is a
count over nets; its resolution (``detectable``) is one net, 1 / (nets with a B*)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...claims import rank_claim
from ...claims.declared import build, result
from . import CLAIMS, SOURCE
from .analysis import curves, diversity_bound, net_table


def _rank(claim: str, panel, x, y, need: float, **fields) -> dict:
    """An ordering claim through :func:`~sigprop.claims.rank_claim` (one item per net)."""
    r = rank_claim(x, y, need)
    stats = dict(measured=r["measured"], verdict=r["verdict"], detectable=r["detectable"])
    stats |= dict(false_pass=r["false_pass"], values={"n_items": r["n"]}, tolerance=need)
    return result(claim, panel, **stats, rank=r["test"], need=need, **fields)


def claims_table(runs: pd.DataFrame, theory: pd.DataFrame, p) -> pd.DataFrame:
    a = p.analysis
    need, frac = float(p.claims.min_tau), float(p.claims.min_fraction)
    mid = float(a.budgets[len(a.budgets) // 2])
    results = []
    for panel, cp in curves(runs, a).groupby("panel", sort=False):
        nets = net_table(cp, a)
        wide = nets.head_width if (nets.get("head_depth", pd.Series([0])) > 0).any() else nets.width
        wide = wide.astype(float)
        reached = nets[nets.threshold.notna()]
        f = float((reached.threshold < reached.max_batch).mean()) if len(reached) else np.nan
        desc = "; ".join(
            f"L={int(r.depth)},K={int(r.width)}: B*={r.threshold:g}" for r in nets.itertuples()
        )
        results.append(
            result(
                "threshold_exists",
                panel,
                measured=f,
                tolerance=frac,
                verdict="inconclusive" if not np.isfinite(f) else ("pass" if f >= frac else "fail"),
                values={"n_nets": len(reached)},
                detectable=1.0 / len(reached) if len(reached) else np.nan,
                **dict(frac=frac, n=len(reached), factor=float(a.threshold_factor), nets=desc),
            )
        )
        y = reached.threshold.reindex(nets.index)
        results.append(_rank("threshold_grows_with_width", panel, wide, y, need, nets=desc))
        slow = -nets.epochs_at_max_batch.fillna(np.inf).replace(np.inf, 1e300)  # nan: slowest
        results.append(
            _rank(
                "wide_fewer_epochs_at_large_batch",
                panel,
                wide,
                slow,
                need,
                batch=nets.max_batch.max(),
                nets="; ".join(
                    f"K={int(k)}: {e:.3g}" for k, e in zip(wide, nets.epochs_at_max_batch)
                ),
            )
        )
        arch, ds = nets.arch.iloc[0], nets.dataset.iloc[0]  # a panel is one arch on one data set
        if arch != "fc":  # Thm. 3 is for fully connected nets: no bound for LeNet / ResNet panels
            continue
        bound = [diversity_bound(arch, ds, int(r.width), int(r.depth)) for r in nets.itertuples()]
        lb = nets[f"largest_within_{mid:g}"]
        results.append(
            _rank(
                "largest_batch_follows_diversity_bound",
                panel,
                bound,
                lb.fillna(0.0),
                need,
                budget=mid,
                nets="; ".join(
                    f"L={int(r.depth)},K={int(r.width)}: bound {b:.3g}, largest batch {x:g}"
                    for r, b, x in zip(nets.itertuples(), bound, lb)
                ),
            )
        )
    return build(p.study, CLAIMS, results, SOURCE)
