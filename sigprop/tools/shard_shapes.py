"""What sets a shard's cost, known without building it: its data set's sizes, its step shape and
its batch (shared by the cost plan, :mod:`sigprop.tools.plan`, and the timing of step classes,
:mod:`sigprop.tools.step_times`)."""

from __future__ import annotations

EVAL_TRAIN_MAX = 2048  # as sigprop.train.engine.EVAL_TRAIN_MAX (checked in tests)


def dataset_dims(name: str, options: dict) -> tuple[tuple[int, ...], int, int, int]:
    """``(input shape, outputs, n_train, n_test)`` of a data set, known without building it."""
    from sigprop.data import catalog
    from sigprop.data.sizes import test_size, train_size

    spec = catalog.get(name)
    opts = (options or {}).get(name, {})
    shape = tuple(spec.input_shape)
    if "d" in opts and len(shape) == 1:
        shape = (int(opts["d"]),)
    n_out = int(spec.n_classes or opts.get("d_out", 1))
    n_train = train_size(name, opts) or 0
    n_test = test_size(name, opts) or 0
    return shape, n_out, int(n_train), n_test


STEP_FIELDS = (
    "arch",
    "width",
    "depth",
    "branch_depth",
    "head_depth",
    "head_width",
    "activation",
    "precision",
    "alpha",
)
"""The run fields one training step's FLOPs and saved bytes depend on, besides the data's shape
and the batch (:func:`shape_cost`): shards that differ only in steps, evaluation or optimizer
share one count."""


def step_shape(run) -> tuple:
    """The key of a run's step cost (:data:`STEP_FIELDS`)."""
    return tuple(getattr(run, f) for f in STEP_FIELDS)


def shard_batch(shard) -> int:
    return max(r.micro_batch or r.batch_size for r in shard.runs)
