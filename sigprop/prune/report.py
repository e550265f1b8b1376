"""Per-model, per-layer mask statistics (the "percentage of weights kept" of 003 Fig. 2 / Fig. 4).

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import pandas as pd


def layer_report(masks, prunable_flags) -> pd.DataFrame:
    """One row per model and prunable layer.

    Columns: ``model`` (index in the shard), ``layer`` (0-based among the
    prunable layers), ``param`` (index in the parameter list), ``weight_shape`` (one
    model's weight shape), ``n_weights``, ``n_kept``, ``kept_fraction``,
    ``collapsed`` (no weight kept: the layer collapse behind ``s_cr``).
    """
    rows = []
    layer = 0
    for i, (mk, f) in enumerate(zip(masks, prunable_flags)):
        if not f or mk is None:
            continue
        n = mk[0].numel()
        kept = (mk.reshape(mk.shape[0], -1) != 0).sum(1).tolist()
        for m, k in enumerate(kept):
            rows.append(
                {
                    "model": m,
                    "layer": layer,
                    "param": i,
                    "weight_shape": "x".join(map(str, mk.shape[1:])),
                    "n_weights": n,
                    "n_kept": int(k),
                    "kept_fraction": k / n,
                    "collapsed": k == 0,
                }
            )
        layer += 1
    cols = [
        "model",
        "layer",
        "param",
        "weight_shape",
        "n_weights",
        "n_kept",
        "kept_fraction",
        "collapsed",
    ]
    return pd.DataFrame(rows, columns=cols).sort_values(["model", "layer"], ignore_index=True)
