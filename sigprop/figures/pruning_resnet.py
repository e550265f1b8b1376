"""Figures of the pruning_resnet study: per-layer kept fraction after pruning (003 Figs. 2, 4).

003 Fig. 2: "Percentage of non-pruned weights per layer in a ResNet32 for our Stable ResNet32 and
standard Resnet32 with Kaiming initialization on CIFAR10"; Fig. 4 (App. G) the same for more
settings (we plot tanh).  Ours: SNIP on ResNet32 vs SBP-SR (SNIP on Stable ResNet32), one panel
per sparsity, from the prune stage's layer reports (``results/{study}/masks/{shard}_layers.parquet``).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

VARIANTS = {("resnet", "snip"): "ResNet32 (SNIP)", ("stable_resnet", "sbp_sr"): "Stable ResNet32 (SBP-SR)"}
COLOURS = {"ResNet32 (SNIP)": "tab:red", "Stable ResNet32 (SBP-SR)": "tab:blue"}


def sections(shapes: pd.Series) -> np.ndarray:
    """Section index (0, 1, 2: stage of the CIFAR ResNet) of each prunable layer from its weight
    shape ``c_out x c_in x k x k``, by its output channels; -1 for the stem (first layer), the
    1x1 shortcut convs and the linear readout, which are plotted but left out of the
    within-section statistics."""
    parts = [s.split("x") for s in shapes]
    is3 = np.array([len(p) == 4 and p[2] == "3" for p in parts])
    c_out = np.array([int(p[0]) for p in parts])
    widths = sorted(set(c_out[is3]))
    sec = np.array([widths.index(c) if ok else -1 for c, ok in zip(c_out, is3)])
    if len(sec):
        sec[0] = -1
    return sec


def layer_profiles(layers: pd.DataFrame, net: str = "resnet32", runs: pd.DataFrame | None = None
                   ) -> pd.DataFrame:
    """Per (activation, sparsity, variant, layer): mean / min / max over seeds of the kept
    fraction, the section, and ``n`` seeds.  ``layers``: the prune stage's layer reports; its
    ``activation`` column is taken from ``runs`` (by ``run_id``) when missing."""
    d = layers
    if "activation" not in d.columns:
        if runs is None:
            d = d.assign(activation="relu")
        else:
            act = runs.drop_duplicates("run_id").set_index("run_id").activation
            d = d.assign(activation=d.run_id.map(act))
    keep = np.zeros(len(d), bool)
    label = np.full(len(d), "", object)
    for (prefix, pruner), name in VARIANTS.items():
        m = (d.arch == prefix + net[len("resnet"):] if prefix == "stable_resnet"
             else d.arch == net).to_numpy() & (d.pruner == pruner).to_numpy()
        keep |= m
        label[m] = name
    d = d[keep].assign(variant=label[keep])
    if d.empty:
        return pd.DataFrame(columns=["activation", "sparsity", "variant", "layer", "kept",
                                     "kept_min", "kept_max", "n", "section"])
    g = d.groupby(["activation", "sparsity", "variant", "layer"])
    prof = g.agg(kept=("kept_fraction", "mean"), kept_min=("kept_fraction", "min"),
                 kept_max=("kept_fraction", "max"), n=("run_id", "nunique"),
                 weight_shape=("weight_shape", "first")).reset_index()
    prof["section"] = prof.groupby(["activation", "sparsity", "variant"]).weight_shape.transform(
        lambda s: sections(s))
    return prof


def kept_figure(layers: pd.DataFrame, activation: str, sparsities, runs: pd.DataFrame | None = None,
                net: str = "resnet32"):
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
        axes[0, 0].text(0.5, 0.5, f"no {activation} layer reports", ha="center",
                        transform=axes[0, 0].transAxes)
    fig.tight_layout()
    return fig


def _figure(runs, cfg, activation, layers):
    if layers is None:
        raise ValueError("pruning_resnet figures need the prune stage's layer reports (layers=)")
    return kept_figure(layers, activation, cfg.get("analysis", {}).get("fig_sparsities", [0.9, 0.98, 0.995]), runs)


def fig2(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict, layers: pd.DataFrame | None = None):
    """003 Fig. 2 (ReLU).  ``layers``: the prune stage's layer reports (the workflow passes the
    study's ``results/{study}/masks/*_layers.parquet``)."""
    return _figure(runs, cfg, "relu", layers)


def fig4(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict, layers: pd.DataFrame | None = None):
    """003 Fig. 4 (App. G), the tanh panels."""
    return _figure(runs, cfg, "tanh", layers)
