"""The smoke run: every block of a scale, end to end, at its real shapes and a tiny cost.

``snakemake --config scale=paper smoke=true`` builds each study as usual, then keeps, of every
block (one ``label`` of the study file's ``blocks:``), the first :data:`MODELS` runs of its
grid, and caps every run's training at :data:`STEPS` optimizer steps (``eval_every`` follows).
Architectures, widths, depths, batch sizes, data sets and precisions stay those of the scale, so
the jobs go through the code paths a cluster run takes (init on the device, the prune stage,
micro-batching, the data loaders on their raw formats, memory per shard) in minutes on a CPU.
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

MODELS = 2   # runs kept per block (the first of its grid)
# optimizer steps per run, at most.  Not 1: jacobian_moments reads steps == 1 as "measured at
# initialization" and steps > 1 as a kernel-regime run, so a cap of 1 would turn its kernel runs
# into initialization runs and leave its kernel figure without data
STEPS = 2
PRUNE_BATCH = 1   # scoring examples per class of a pruned run, at most (see capped)


def smoke_pairs(pairs: list[tuple[RunSpec, str]]) -> list[tuple[RunSpec, str]]:
    """``(run, block label)`` pairs of a study reduced for the smoke run: per label, the first
    :data:`MODELS` runs, each with at most :data:`STEPS` optimizer steps (a micro-batched run,
    ``batch_size / micro_batch`` micro-steps per optimizer step, keeps that many per step) and
    ``eval_every`` at most its steps."""
    seen: dict[str, int] = {}
    out = []
    for run, label in pairs:
        if seen.get(label, 0) >= MODELS:
            continue
        seen[label] = seen.get(label, 0) + 1
        out.append((capped(run), label))
    return out


def capped(run: RunSpec) -> RunSpec:
    """``run`` with at most :data:`STEPS` optimizer steps, and a pruned run's scoring batch at
    :data:`PRUNE_BATCH` example per class.

    The scoring batch is cut because at paper scale it does not fit this machine, nor a GPU:
    SNIP / SBP-SR / GraSP score one class-balanced batch with BatchNorm in training mode
    (003's code: 10 per class), 2000 Tiny ImageNet images through ResNet32 at once, about
    75 GB of activations per model by the plan's count (CIFAR-100: 15 GB); the first smoke run
    was killed for memory there.  :func:`sigprop.tools.plan.shard_costs` counts that batch in a
    pruned shard's peak, so the plan shows it; fitting it needs activation checkpointing in
    the scorer (not done)."""
    per_step = run.batch_size // run.micro_batch if run.micro_batch else 1
    steps = min(run.steps, STEPS * per_step)
    prune_batch = min(run.prune_batch, PRUNE_BATCH) if run.pruner else run.prune_batch
    if steps == run.steps and prune_batch == run.prune_batch:
        return run
    return dataclasses.replace(run, steps=steps, eval_every=min(run.eval_every, steps),
                               prune_batch=prune_batch)


def smoke_verdicts(df: pd.DataFrame) -> pd.DataFrame:
    """A smoke run's claims table: every row's verdict ``smoke`` (its statistics kept, to show
    the claims code ran), never pass, fail or inconclusive."""
    out = df.copy()
    out["verdict"] = "smoke"
    return out
