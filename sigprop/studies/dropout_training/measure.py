"""The measurement: each run of a shard is trained with dropout and with dropin and its dropout
sub-networks sampled by Monte Carlo (Baldi & Sadowski 2014, §§9.5-9.6, 11.6-11.7;
:func:`sigprop.studies.dropout_training.learning.measure_run`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ... import tables

# the Monte Carlo parameters measure_run reads (the rest of the measure section: input_keep)
MC_KEYS = (
    "n_inputs",
    "mc_samples",
    "mc_samples_trajectory",
    "mc_chunk",
    "pairs_per_layer",
    "sparsity_inputs",
    "mc_eval_samples",
    "active_threshold",
    "sparse_threshold",
    "hist_bins",
)


def mc_params(m) -> dict:
    """The Monte Carlo sizes and thresholds of the ``measure`` section as the mapping
    :func:`~sigprop.studies.dropout_training.learning.measure_run` reads."""
    return {k: getattr(m, k) for k in MC_KEYS}


def load_data(path: str | Path, device, dtype) -> dict:
    """A prepared data set as flattened tensors with inputs in [0, 1] (undoing the standardisation:
    per feature for sets standardised per feature, globally for sets standardised per channel)."""
    import torch

    from ...data.prepare import load
    from .learning import unit_interval

    ds = load(path)
    per_feature = ds.meta.get("normalization", {}).get("kind", "per_feature") == "per_feature"
    a, b = unit_interval(ds.x_train, ds.x_test, per_feature)

    def t(v):
        return torch.as_tensor(v, dtype=dtype, device=device)

    return {
        "x_train": t(a),
        "y_train": torch.as_tensor(ds.y_train, device=device).long(),
        "x_test": t(b),
        "y_test": torch.as_tensor(ds.y_test, device=device).long(),
    }


def measure(
    shard, params, buffers, p, device: str = "cpu", data_path=None, masks_path=None
) -> pd.DataFrame:
    """Train and measure every run of the shard (:func:`sigprop.studies.dropout_training.learning.measure_run`).

    Reads the shard's prepared data set from ``data_path`` (the measure rule's ``data``
    input, passed by :func:`sigprop.steps.shards.measure_shard`)."""
    import torch

    from .learning import measure_run
    from .monte_carlo import split_params

    m = p.measure
    dev = torch.device(device)
    dtype = params[0].dtype
    if data_path is None:
        raise ValueError(
            "dropout_training.measure needs data_path (the shard's prepared "
            "data set, results/data/<dataset>.npz)"
        )
    cache, frames = {}, []
    for i, run in enumerate(shard.runs):
        if run.activation != "sigmoid" or run.arch != "fc":
            raise ValueError(f"run {run.run_id}: dropout_training needs arch fc with sigmoid units")
        if run.dataset not in cache:
            cache[run.dataset] = load_data(data_path, dev, dtype)
        ws, bs = split_params([w.to(dev) for w in params], i)
        long = measure_run(ws, bs, cache[run.dataset], run, mc_params(m), float(m.input_keep), dev)
        frames.append(long.assign(model=i))
    return tables.run_rows(
        shard, pd.concat(frames, ignore_index=True), device, order=("layer", "probe")
    )
