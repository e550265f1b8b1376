"""The smoke run: every block of a scale, end to end, at its real shapes and a tiny cost.

``snakemake --config scale=paper smoke=true`` builds each study as usual, then keeps, of every
block (one ``label`` of the study file's ``blocks:``), the first :data:`MODELS` distinct runs of
its grid, caps every run's training at :data:`STEPS` optimizer steps (``eval_every`` follows),
its batch at :data:`BATCH` examples and each evaluation at :data:`EVAL` examples per split.
Architectures, widths, depths, data sets and precisions stay those of the scale, so the jobs go
through the code paths a cluster run takes (init on the device, the prune stage, micro-batching,
the data loaders on their raw formats) in minutes on a CPU.  What a shard of the real scale
needs in memory is the plan's computation (``sigprop plan``, tested on its own), not the smoke
run's.
The claims jobs still compute every statistic, but a smoke run's verdicts are all ``smoke``:
a run this small decides nothing (:func:`smoke_verdicts`).

Run it in a separate clone or copy: its run ids differ from the real scale's (the steps
differ), and it writes the same ``results/`` paths.  Downloaded data sets can be replaced by
stand-in raw files (``sigprop stand-ins DIR`` and ``--configfile DIR/stand-ins.yaml``).
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from sigprop.runs import RunSpec

MODELS = 2  # runs kept per block (the first of its grid)
WIDE_MODEL_BYTES = 2**30
"""A block whose model's parameters take more than this keeps one run: its shard is the same
batched code with one model, and the smoke run's memory stays below 8 GB (000's width-1000,
depth-200 float64 nets are 1.6 GB a model, which their init copies and writes)."""
# optimizer steps per run, at most.  Not 1: jacobian_moments reads steps == 1 as "measured at
# initialization" and steps > 1 as a kernel-regime run, so a cap of 1 would turn its kernel runs
# into initialization runs and leave its kernel figure without data
STEPS = 2
PRUNE_BATCH = 1  # scoring examples per class of a pruned run, at most (see capped)
PRUNE_MAX = 8  # examples of a pruned run's scoring batch, at most (see capped)
BATCH = 8  # examples per optimizer step, at most (a micro-batched run keeps micro-steps)
EVAL = 8  # examples of each split an evaluation scores, at most


def smoke_pairs(pairs: list[tuple[RunSpec, str]]) -> list[tuple[RunSpec, str]]:
    """``(run, block label)`` pairs of a study reduced for the smoke run: per label, the first
    :data:`MODELS` distinct runs once :func:`capped` (two runs of a batch-size sweep may become
    one), or one for a block of very wide models (:func:`models_for`)."""
    seen: dict[str, set] = {}
    out = []
    for run, label in pairs:
        run = capped(run)
        ids = seen.setdefault(label, set())
        if len(ids) >= models_for(run) or run.run_id in ids:
            continue
        ids.add(run.run_id)
        out.append((run, label))
    return out


def models_for(run: RunSpec) -> int:
    """Runs kept of a block whose first kept run is ``run``: :data:`MODELS`, or one where a
    model's parameters exceed :data:`WIDE_MODEL_BYTES` (counted exactly where the family's
    shapes are known without building it, :func:`sigprop.sizing.param_count`)."""
    from sigprop.data import catalog
    from sigprop.sizing import param_count

    spec = catalog.get(run.dataset)
    n = param_count(run, spec.input_shape, spec.n_classes or 1)
    bytes_per = 8 if run.precision == "float64" else 4
    return 1 if n is not None and n * bytes_per > WIDE_MODEL_BYTES else MODELS


def capped(run: RunSpec) -> RunSpec:
    """``run`` with at most :data:`BATCH` examples per optimizer step (a micro-batched run keeps
    two or more micro-steps per step: its micro-batch becomes the largest divisor of the new
    batch up to half of it), at most :data:`STEPS` optimizer steps,
    each evaluation at most :data:`EVAL` examples per split, and a pruned run's scoring batch at
    :data:`PRUNE_BATCH` example per class and :data:`PRUNE_MAX` examples in all.

    The scoring batch is cut because at paper scale it does not fit this machine, nor a GPU:
    SNIP / SBP-SR / GraSP score one class-balanced batch with BatchNorm in training mode
    (003's code: 10 per class), 2000 Tiny ImageNet images through ResNet32 at once, about
    75 GB of activations per model by the plan's count (CIFAR-100: 15 GB); the first smoke run
    was killed for memory there.  :func:`sigprop.tools.plan.shard_costs` counts that batch in a
    pruned shard's peak, so the plan shows it; fitting it needs activation checkpointing in
    the scorer (not done).  Even one example per class of Tiny ImageNet (200 images through
    ResNet104, two models) took 12 GB in the smoke run, hence the cap in all."""
    batch = min(run.batch_size, BATCH)
    micro = run.micro_batch
    if micro:  # at least two micro-steps per step when the batch allows, as at full size
        limit = min(micro, max(1, batch // 2)) if run.batch_size > micro else batch
        micro = max(d for d in range(1, limit + 1) if batch % d == 0)
    per_step = batch // micro if micro else 1
    steps = min(run.steps, STEPS * per_step)
    prune_batch = min(run.prune_batch, PRUNE_BATCH) if run.pruner else run.prune_batch
    prune_max = min(run.prune_max or PRUNE_MAX, PRUNE_MAX) if run.pruner else run.prune_max
    eval_max = min(run.eval_max or EVAL, EVAL)
    return dataclasses.replace(
        run,
        batch_size=batch,
        micro_batch=micro,
        steps=steps,
        eval_every=min(run.eval_every, steps),
        prune_batch=prune_batch,
        prune_max=prune_max,
        eval_max=eval_max,
    )


def smoke_verdicts(df: pd.DataFrame) -> pd.DataFrame:
    """A smoke run's claims table: every row's verdict ``smoke`` (its statistics kept, to show
    the claims code ran), never pass, fail or inconclusive."""
    out = df.copy()
    out["verdict"] = "smoke"
    return out
