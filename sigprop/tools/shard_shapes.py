"""What sets a shard's cost, known without building it: its data set's sizes, its step shape and
its batch (shared by the cost plan, :mod:`sigprop.tools.plan`, and the timing of step classes,
:mod:`sigprop.tools.step_times`)."""

from __future__ import annotations

EVAL_TRAIN_MAX = 2048  # as sigprop.train.engine.EVAL_TRAIN_MAX (checked in tests)


def dataset_dims(name: str, options: dict) -> tuple[tuple[int, ...], int, int, int]:
    """``(input shape, outputs, n_train, n_test)`` of a data set, known without building it."""
    from sigprop.data import catalog
    from sigprop.data.sizes import split_sizes

    spec = catalog.get(name)
    opts = (options or {}).get(name, {})
    shape = tuple(spec.input_shape)
    if "d" in opts and len(shape) == 1:
        shape = (int(opts["d"]),)
    n_out = int(spec.n_classes or opts.get("d_out", 1))
    n_train, n_test = split_sizes(name, opts)
    return shape, n_out, int(n_train or 0), int(n_test or 0)


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


def eval_sizes(run, n_train: int, n_test: int, splits) -> tuple[int, int]:
    """Examples one evaluation of a shard whose first run is ``run`` scores on the training and
    test splits (``splits``: the study's ``eval_splits``), as
    :meth:`sigprop.train.engine.ShardTrainer.evaluate` does: at most :data:`EVAL_TRAIN_MAX`
    training examples, and at most the run's ``eval_max`` of each split."""
    cap = run.eval_max or None
    n_tr = min(EVAL_TRAIN_MAX, n_train, cap or EVAL_TRAIN_MAX)
    n_te = min(n_test, cap) if cap else n_test
    return (n_tr if "train" in splits else 0), (n_te if "test" in splits else 0)
