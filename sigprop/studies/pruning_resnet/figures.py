"""Figures of the pruning_resnet study: per-layer kept fraction after pruning (Hayou et al. 2021,
arXiv:2002.08797, Figs. 2, 4).

003 Fig. 2: "Percentage of non-pruned weights per layer in a ResNet32 for our Stable ResNet32 and
standard Resnet32 with Kaiming initialization on CIFAR10"; Fig. 4 (App. G) the same for more
settings (we plot tanh).  Ours: SNIP on ResNet32 vs SBP-SR (SNIP on Stable ResNet32), one panel
per sparsity, from the prune stage's layer reports (``results/{study}/masks/{shard}_layers.parquet``).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .analysis import layer_profiles

COLOURS = {"ResNet32 (SNIP)": "tab:red", "Stable ResNet32 (SBP-SR)": "tab:blue"}


def kept_figure(
    layers: pd.DataFrame,
    activation: str,
    sparsities,
    runs: pd.DataFrame | None = None,
    net: str = "resnet32",
):
    """One panel per sparsity: percentage of weights kept against the layer index."""
    prof = layer_profiles(layers, net, runs)
    prof = prof[prof.activation == activation]
    have = sorted(prof.sparsity.unique())
    want = [s for s in have if any(np.isclose(s, x) for x in sparsities)] or have
    n = max(len(want), 1)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.4), squeeze=False)
    for ax, s in zip(axes[0], want):
        p = prof[np.isclose(prof.sparsity, s)]
        for var, q in p.groupby("variant"):
            q = q.sort_values("layer")
            c = COLOURS.get(var, None)
            ax.plot(q.layer, 100 * q.kept, "o-", ms=3, color=c, label=f"{var}, n={q.n.min()}")
            ax.fill_between(q.layer, 100 * q.kept_min, 100 * q.kept_max, color=c, alpha=0.2)
            sec = q.section.to_numpy()
            for i in range(1, len(sec)):
                if sec[i] >= 0 and sec[i] != max(sec[:i].max(), 0) and sec[i] > sec[:i].max():
                    ax.axvline(q.layer.iloc[i] - 0.5, color="grey", ls=":", lw=0.8)
        ax.set_title(f"{activation}, sparsity {100 * s:g}%")
        ax.set_xlabel("prunable layer")
        ax.set_ylabel("weights kept (%)")
        ax.legend(fontsize=7)
    if prof.empty:
        axes[0, 0].text(
            0.5, 0.5, f"no {activation} layer reports", ha="center", transform=axes[0, 0].transAxes
        )
    fig.tight_layout()
    return fig


def _figure(runs, p, activation, layers):
    if layers is None:
        raise ValueError("pruning_resnet figures need the prune stage's layer reports (layers=)")
    return kept_figure(layers, activation, list(p.analysis.fig_sparsities), runs)


def fig2(runs: pd.DataFrame, theory: pd.DataFrame, p, layers: pd.DataFrame | None = None):
    """003 Fig. 2 (ReLU).  ``layers``: the prune stage's layer reports (the workflow passes the
    study's ``results/{study}/masks/*_layers.parquet``)."""
    return _figure(runs, p, "relu", layers)


def fig4(runs: pd.DataFrame, theory: pd.DataFrame, p, layers: pd.DataFrame | None = None):
    """003 Fig. 4 (App. G), the tanh panels."""
    return _figure(runs, p, "tanh", layers)
