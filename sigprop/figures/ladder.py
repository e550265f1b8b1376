"""The budget-ladder figure of a study: each claim's statistic against the rung's budget, with
its SE, the trend's reference value (the paper's value, or else the claim's pass threshold) and
the paper's budget drawn, and the claim's trend verdict (:mod:`sigprop.claims.trend`) in the
panel's title."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

REFERENCE_LABELS = {
    "paper value": "paper's value",
    "pass threshold": "pass threshold",
    "claim expected": "claim's expected value",
}
"""The legend's words for each kind of trend reference (:data:`sigprop.claims.trend.REFERENCES`)."""

REFERENCE_STYLES = {"paper value": "--", "pass threshold": "-.", "claim expected": "--"}

TREND_COLOURS = {
    "toward": "#1a7f37",
    "away": "#cf222e",
    "flat": "#57606a",
    "inconclusive": "#9a6700",
}


def ladder_figure(trend: pd.DataFrame, study: str):
    """Small multiples, one panel per claim of ``trend`` (a decoded trend table,
    :func:`sigprop.claims.trend.read_trend`): measured ± SE at each rung on a log budget axis,
    the trend's reference (its ``reference`` column: the paper's value dashed, a pass threshold
    dash-dotted), the paper's budget (dotted) and the fitted slope through the rungs' weighted
    mean; one legend for all panels."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    from sigprop.claims.trend import top_reading

    n = max(len(trend), 1)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    for ax, (_, r) in zip(axes.flat, trend.iterrows()):
        b = np.asarray(r.budgets, float)
        m = np.asarray(r.measured, float)
        se = np.asarray(r.se, float)
        colour = TREND_COLOURS.get(r.trend, "k")
        ax.errorbar(
            b, m, yerr=np.where(np.isfinite(se), se, 0.0), fmt="o-", color=colour, ms=4, capsize=2
        )
        if np.isfinite(r.expected) and r.reference in REFERENCE_LABELS:
            ax.axhline(
                r.expected,
                ls=REFERENCE_STYLES[r.reference],
                color="k",
                lw=0.8,
                label=REFERENCE_LABELS[r.reference],
            )
        ax.axvline(r.paper_budget, ls=":", color="k", lw=0.8, label="paper's budget")
        ok = np.isfinite(m)
        if np.isfinite(r.slope) and ok.sum() >= 2:
            x = np.log(b[ok])
            xx = np.linspace(x.min(), math.log(r.paper_budget), 20)
            ax.plot(
                np.exp(xx),
                m[ok].mean() + r.slope * (xx - x.mean()),
                color=colour,
                lw=0.6,
                alpha=0.6,
            )
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())  # labels of minor ticks overlap
        ax.set_title(f"{r.claim_id}\n{r.trend} ({top_reading(r)})", fontsize=7, color=colour)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(trend) :]:
        ax.axis("off")
    if len(trend):
        seen = {}
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(lab, h)
        axes.flat[0].legend(list(seen.values()), list(seen), fontsize=6)
    fig.suptitle(f"{study}: claim statistics along the budget ladder", fontsize=9)
    fig.tight_layout()
    return fig
