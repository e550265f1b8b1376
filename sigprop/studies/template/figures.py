"""The length of the signal by layer, theory over measurement."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from .analysis import summary


def length_by_layer(runs: pd.DataFrame, theory: pd.DataFrame, p):
    s = summary(runs, theory)
    fig, ax = plt.subplots(figsize=(5, 3.8), constrained_layout=True)
    for i, (sw, g) in enumerate(s.groupby("sigma_w2")):
        t = theory[(theory.quantity == "q") & (theory.sigma_w2 == sw)].sort_values("layer")
        t = t[t.layer <= g.layer.max()]
        ax.plot(t.layer, t.value, color=f"C{i}", lw=1.5, label=f"$\\sigma_w^2$ = {sw:g}")
        ax.errorbar(g.layer, g["mean"], yerr=g.se, fmt="o", ms=3.5, color=f"C{i}", capsize=2)
    ax.set_xlabel("layer $l$")
    ax.set_ylabel("$q^l$")
    ax.legend(fontsize=8)
    ax.set_title(f"Length by layer ({s.activation.iloc[0]})")
    return fig
