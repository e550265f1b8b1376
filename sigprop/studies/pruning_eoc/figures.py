"""Hayou et al. 2021 (arXiv:2002.08797) Figs. 3 and 5: test accuracy of pruned FFNNs over
depth x sparsity per init scheme."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .analysis import SCHEMES, cell_table


def accuracy_grid(runs: pd.DataFrame, theory: pd.DataFrame, p):
    """Rows: activations; columns: EOC + rescaling, EOC, ordered (003 Fig. 3 (a)-(c), Fig. 5).
    Each panel is an image of the mean final test accuracy over (sparsity, depth) cells, the
    value written in the cell, 'x' below the trainability threshold, and the ordered-phase
    region of the claims outlined."""
    an = p.analysis
    metric = an.metric
    thr = float(an.trainable_acc)
    region = an.ordered_region
    cells = cell_table(runs, theory, metric)
    acts = sorted(cells.activation.unique())
    fig, axes = plt.subplots(
        len(acts),
        len(SCHEMES),
        figsize=(3.6 * len(SCHEMES), 3.0 * len(acts)),
        squeeze=False,
        constrained_layout=True,
    )
    im = None
    for i, act in enumerate(acts):
        for j, scheme in enumerate(SCHEMES):
            ax = axes[i][j]
            c = cells[(cells.activation == act) & (cells.scheme == scheme)]
            if c.empty:
                ax.set_visible(False)
                continue
            a = c.pivot(index="depth", columns="sparsity", values="acc").sort_index()
            im = ax.imshow(
                a.to_numpy(), origin="lower", cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto"
            )
            for (y, x), v in np.ndenumerate(a.to_numpy()):
                ax.text(
                    x,
                    y,
                    f"{v:.2f}" + ("\nx" if v < thr else ""),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if v < 0.6 else "black",
                )
            ax.set_xticks(range(a.shape[1]), [f"{s:g}" for s in a.columns])
            ax.set_yticks(range(a.shape[0]), [str(int(d)) for d in a.index])
            if region and scheme == "ordered":
                cs = np.flatnonzero(a.columns.to_numpy() >= float(region.min_sparsity) - 1e-12)
                ds = np.flatnonzero(a.index.to_numpy() >= int(region.min_depth))
                if len(cs) and len(ds):
                    ax.add_patch(
                        plt.Rectangle(
                            (cs[0] - 0.5, ds[0] - 0.5),
                            len(cs),
                            len(ds),
                            fill=False,
                            ec="red",
                            ls="--",
                            lw=1.5,
                        )
                    )
            ax.set_title(f"{act}: {scheme} (chi1 = {c.chi1.iloc[0]:.2f})", fontsize=9)
            ax.set_xlabel("sparsity s")
            if j == 0:
                ax.set_ylabel("depth L")
    if im is not None:
        fig.colorbar(im, ax=axes.ravel().tolist(), label=metric.replace("_", " "), shrink=0.8)
    return fig
