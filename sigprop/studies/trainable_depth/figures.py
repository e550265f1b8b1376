"""Huang et al. 2019 (arXiv:1912.09132) Fig. 7: accuracy over (σ_w², depth) with the
depth-scale curves drawn over it."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import trainability

# (quantity, label, colour, linestyle) as in the caption of 000 Fig. 7
OVERLAYS = [
    ("12xi1", r"$12\xi_1$", "white", "-"),
    ("6xi2", r"$6\xi_2$", "tab:green", "--"),
    ("12xi2", r"$12\xi_2$", "white", "--"),
]


def _edges(v: np.ndarray) -> np.ndarray:
    v = np.asarray(sorted(v), float)
    if len(v) == 1:
        return np.array([v[0] - 0.5, v[0] + 0.5])
    mid = (v[1:] + v[:-1]) / 2
    return np.concatenate([[v[0] - (mid[0] - v[0])], mid, [v[-1] + (v[-1] - mid[-1])]])


def heatmap(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """One heatmap per panel (000 Fig. 7 (a)-(h): the runs' blocks), up to four per row,
    theory curves of the panel's keep rate drawn over it."""
    metric = p.analysis.metric
    runs = trainability.add_panels(runs)
    acc = trainability.final_accuracy(runs, metric)
    panels = sorted(acc.panel.unique())
    ncol = min(4, len(panels))
    nrow = -(-len(panels) // ncol)
    fig, axes = plt.subplots(
        nrow,
        ncol,
        figsize=(3.9 * ncol, 3.6 * nrow),
        squeeze=False,
        sharey=True,
        constrained_layout=True,
    )
    mesh = None
    for ax, panel in zip(axes.flat, panels):
        sub = acc[acc.panel == panel]
        rho = float(sub.keep_rate.iloc[0])
        a = sub.pivot(index="depth", columns="sigma_w2", values="acc")
        xs, ys = a.columns.to_numpy(float), a.index.to_numpy(float)
        mesh = ax.pcolormesh(
            _edges(xs), _edges(ys), a.to_numpy(), cmap="inferno", vmin=0.0, vmax=1.0, shading="flat"
        )
        t = theory[np.isclose(theory.keep_rate, rho)]
        for q, label, colour, ls in OVERLAYS:
            c = t[t.quantity == q].sort_values("sigma_w2")
            ax.plot(c.sigma_w2, c.value, color=colour, ls=ls, lw=1.6, label=label)
        ax.set_xlim(_edges(xs)[[0, -1]])
        ax.set_ylim(_edges(ys)[[0, -1]])
        pr = runs[runs.panel == panel]
        steps = "/".join(str(int(t)) for t in sorted(pr.steps.unique()))
        ax.set_title(f"{panel}\n{steps} steps, {'/'.join(sorted(pr.dataset.unique()))}", fontsize=9)
        ax.set_xlabel(r"$\sigma_w^2$")
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel("depth L")
    axes[0][0].legend(
        loc="upper right", fontsize=8, facecolor="0.3", labelcolor="white", framealpha=0.7
    )
    fig.colorbar(mesh, ax=axes.ravel().tolist(), label=metric.replace("_", " "), shrink=0.8)
    sb2 = runs.sigma_b2.iloc[0]
    fig.suptitle(
        f"Trainable depth: {runs.activation.iloc[0]}, $\\sigma_b^2$ = {sb2:g}, "
        f"width {int(runs.width.iloc[0])}"
    )
    return fig
