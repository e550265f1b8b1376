"""000 Fig. 7: accuracy over (σ_w², depth) with the depth-scale curves drawn over it."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..measure import trainability

# (quantity, label, colour, linestyle) as in the caption of 000 Fig. 7
OVERLAYS = [("12xi1", r"$12\xi_1$", "white", "-"),
            ("6xi2", r"$6\xi_2$", "tab:green", "--"),
            ("12xi2", r"$12\xi_2$", "white", "--")]


def _edges(v: np.ndarray) -> np.ndarray:
    v = np.asarray(sorted(v), float)
    if len(v) == 1:
        return np.array([v[0] - 0.5, v[0] + 0.5])
    mid = (v[1:] + v[:-1]) / 2
    return np.concatenate([[v[0] - (mid[0] - v[0])], mid, [v[-1] + (v[-1] - mid[-1])]])


def heatmap(runs: pd.DataFrame, theory: pd.DataFrame, cfg: dict):
    metric = cfg.get("analysis", {}).get("metric", "train_acc")
    acc = trainability.final_accuracy(runs, metric)
    panels = sorted(acc.keep_rate.unique(), reverse=True)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8),
                             squeeze=False, sharey=True, constrained_layout=True)
    mesh = None
    for ax, rho in zip(axes[0], panels):
        a = acc[acc.keep_rate == rho].pivot(index="depth", columns="sigma_w2", values="acc")
        xs, ys = a.columns.to_numpy(float), a.index.to_numpy(float)
        mesh = ax.pcolormesh(_edges(xs), _edges(ys), a.to_numpy(), cmap="inferno",
                             vmin=0.0, vmax=1.0, shading="flat")
        t = theory[np.isclose(theory.keep_rate, rho)]
        for q, label, colour, ls in OVERLAYS:
            c = t[t.quantity == q].sort_values("sigma_w2")
            ax.plot(c.sigma_w2, c.value, color=colour, ls=ls, lw=1.6, label=label)
        ax.set_xlim(_edges(xs)[[0, -1]])
        ax.set_ylim(_edges(ys)[[0, -1]])
        steps = sorted(runs.loc[runs.keep_rate == rho, "steps"].unique())
        ax.set_title(rf"$\rho = {rho:g}$, " + "/".join(str(int(t)) for t in steps) + " steps")
        ax.set_xlabel(r"$\sigma_w^2$")
    axes[0][0].set_ylabel("depth L")
    axes[0][0].legend(loc="upper right", fontsize=8, facecolor="0.3", labelcolor="white", framealpha=0.7)
    fig.colorbar(mesh, ax=axes[0].tolist(), label=metric.replace("_", " "))
    sb2 = runs.sigma_b2.iloc[0]
    fig.suptitle(f"Trainable depth: {runs.activation.iloc[0]}, $\\sigma_b^2$ = {sb2:g}, "
                 f"width {int(runs.width.iloc[0])}, {runs.dataset.iloc[0]}")
    return fig
