"""How many models fit in one shard (torch-free: used while Snakemake builds the DAG).

``shard_size: 0`` in the config means "choose from memory": each shape group of
runs gets the most models whose training state fits in half of
``memory_budget_mb`` (the rest is headroom for the framework and evaluation).
"""

from __future__ import annotations

import math


def fc_model_bytes(d_in: int, width: int, depth: int, d_out: int, batch: int,
                   optimizer_slots: int = 1, bytes_per: int = 4) -> int:
    """Training memory of one fully connected model: parameters, gradients, optimizer
    state and the initial copy, plus per-layer activations kept for the backward pass
    (pre-activation, activation, dropout mask)."""
    params = d_in * width + (depth - 1) * width * width + width * d_out + depth * width + d_out
    acts = batch * (d_in + 3 * width * depth + d_out)
    return bytes_per * ((3 + optimizer_slots) * params + acts)


def run_bytes(run, in_shape: tuple[int, ...], n_out: int) -> int:
    """Memory estimate of one run; fully connected exactly, other families by their
    parameter-free proxy (width x depth activations) until they declare their own."""
    d_in = math.prod(in_shape)
    slots = 1 if run.optimizer == "rmsprop" or run.momentum > 0 else 0
    bytes_per = 8 if run.precision == "float64" else 4
    if run.arch == "fc":
        return fc_model_bytes(d_in, run.width, run.depth, n_out, run.batch_size, slots, bytes_per)
    # conservative proxy for convolutional/residual families: activations dominate
    return bytes_per * 16 * run.batch_size * max(d_in, run.width * 64) * max(run.depth, 1)


def auto_shard_size(model_bytes: int, budget_bytes: int, cap: int = 1024) -> int:
    """Most models whose training state fits in half the budget."""
    return max(1, min(cap, int(0.5 * budget_bytes // max(1, model_bytes))))
