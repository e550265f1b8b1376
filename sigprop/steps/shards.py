"""The heavy workflow steps as plain functions (scripts/ only parse arguments).

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from pathlib import Path

import torch

from sigprop import tables
from sigprop.data.prepare import DataFileError
from sigprop.data.prepare import check as check_dataset
from sigprop.data.prepare import load as load_dataset
from sigprop.prune.stage import mask_report, shard_masks, start_params
from sigprop.runs import Shard
from sigprop.train import devices, engine, host_memory

log = logging.getLogger("sigprop.steps")


def _gated(fn):
    """Run ``fn`` (a step taking ``shard_json``) inside the process's precision gate for the
    shard's precision (:func:`sigprop.steps.jobs.precision_gate`): jobs in threads of one process
    share the TF32 flags, so a TF32 job never overlaps one that needs IEEE float32."""
    import functools
    import inspect

    from sigprop.steps.jobs import precision_gate

    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        shard_json = sig.bind(*args, **kwargs).arguments["shard_json"]
        precision = Shard.from_json(shard_json).runs[0].precision
        with precision_gate(engine.PRECISIONS[precision][1]):
            return fn(*args, **kwargs)

    return wrapper


def _setup(device: str, threads: int | None, gpu_locks: str | None = None) -> torch.device:
    """Threads, the job's device (``device: auto`` on a machine of several GPUs claims a free
    one through lock files in ``gpu_locks``, the folder the rules name), kept freed memory."""
    if threads and torch.get_num_threads() != int(threads):
        torch.set_num_threads(int(threads))  # process-wide: set only when it changes
    dev = devices.acquire(device, lock_dir=gpu_locks)
    host_memory.keep_freed_memory()  # no page faults on memory freed by the last step
    log.info("device %s, torch %s, %d threads", dev, torch.__version__, torch.get_num_threads())
    return dev


def expected_data(shard: Shard, expect_json: str | None) -> dict:
    """What a shard's prepared data set must be (:data:`sigprop.data.prepare.IDENTITY`):
    ``expect_json`` as the rules pass it (``data_expect`` in rules/common.smk: the data set's
    name, the config's options and sizes for it and the prepare step's code digest), and at
    least the name of the shard's data set."""
    expect = json.loads(expect_json) if expect_json else {}
    expect.setdefault("name", shard.runs[0].dataset)
    return expect


@contextlib.contextmanager
def rebuild_hint():
    """A prepared data set refused inside the block (:class:`DataFileError`, from
    :func:`sigprop.data.prepare.load` or ``check``) says how to rebuild it."""
    try:
        yield
    except DataFileError as e:
        raise DataFileError(e.path, f"{e.reason}: {tables.rebuild_hint(e.path)}") from None


def read_dataset(shard: Shard, data_path: str, expect_json: str | None):
    """The shard's prepared data set, its contents and identity checked (:func:`expected_data`)."""
    with rebuild_hint():
        return load_dataset(data_path, expected_data(shard, expect_json))


@_gated
def init_shard(
    shard_json: str,
    data_path: str,
    out: str,
    device: str = "auto",
    threads: int | None = None,
    gpu_locks: str | None = None,
    data_expect: str | None = None,
) -> None:
    """Draw every model's initial parameters (on the GPU when there is one) and save them.
    ``data_expect``: what the data set must be, as JSON (:func:`expected_data`)."""
    dev = _setup(device, threads, gpu_locks)
    shard = Shard.from_json(shard_json)
    ds = read_dataset(shard, data_path, data_expect)
    in_shape, n_out = engine.data_dims(ds)
    dtype = engine.set_precision_policy(shard.runs[0].precision)
    t0 = time.time()
    params, buffers = engine.initial_state(shard, in_shape, n_out, dev, dtype)
    engine.save_state(params, buffers, shard, Path(out))
    log.info(
        "shard %s: %d models, %d parameters each, initialized in %.2fs",
        shard.shard_id,
        len(shard.runs),
        sum(p[0].numel() for p in params),
        time.time() - t0,
    )


# -- the prune stage (Hayou et al. 2021, arXiv:2002.08797) ----------------------------


@_gated
def prune_shard(
    shard_json: str,
    init_path: str,
    data_path: str,
    out_masks: str,
    out_report: str,
    device: str = "auto",
    threads: int | None = None,
    gpu_locks: str | None = None,
    data_expect: str | None = None,
) -> None:
    """The prune stage: masks of a shard's pruned models from their initial weights (003 Sec. 2),
    saved with :func:`sigprop.train.engine.save_masks`, and the per-layer report as Parquet.

    The weights are in the runs' parameter dtype, never under autocast; the pruners score one
    model at a time in that dtype (:data:`sigprop.prune.SCORE_DTYPE`), so a model's mask does not
    depend on its shard (SynFlow scores in float64).  The masks are stored, so
    training uses exactly these masks whatever device it runs on.  When a run asks for the
    rescaling trick it is computed here once, so an architecture the trick does not cover
    fails in this stage rather than in training.  ``data_expect``: what the data set must be,
    as JSON (:func:`expected_data`)."""
    dev = _setup(device, threads, gpu_locks)
    shard = Shard.from_json(shard_json)
    if not shard.pruned:
        raise ValueError(f"shard {shard.shard_id} has no pruned run; it needs no prune job")
    dtype = engine.set_precision_policy(shard.runs[0].precision)
    data = engine.to_data(read_dataset(shard, data_path, data_expect), dev, dtype)
    params, buffers = engine.load_state(Path(init_path), shard)
    params = [p.to(dev, dtype) for p in params]
    buffers = [b.to(dev) for b in buffers]
    t0 = time.time()
    from sigprop import prune

    masks = shard_masks(shard, params, buffers, data.x_train, data.y_train)
    start_params(shard, params, masks)  # fails here if the rescaling trick does not apply
    report = mask_report(
        shard,
        [None if m is None else m.cpu() for m in masks],
        prune.prunable(shard.runs[0].arch, params),
    )
    engine.save_masks(masks, shard, Path(out_masks))
    tables.write_atomic(
        report, out_report, {"kind": "layers", "study": shard.study, "shard": shard.shard_id}
    )
    log.info(
        "shard %s: masks of %d/%d models in %.2fs",
        shard.shard_id,
        sum(bool(r.pruner) for r in shard.runs),
        len(shard.runs),
        time.time() - t0,
    )


def _check_masks(shard, masks_path) -> None:
    """A shard with pruned runs needs the prune stage's masks file, one without must get none."""
    if shard.pruned and not masks_path:
        raise ValueError(
            f"shard {shard.shard_id} has pruned runs but no masks file was given "
            "(the prune stage's output, results/<study>/masks/<shard>.pt)"
        )
    if masks_path and not shard.pruned:
        raise ValueError(f"shard {shard.shard_id} has no pruned run but got masks {masks_path}")


@_gated
def train_shard(
    shard_json: str,
    init_path: str,
    data_path: str,
    out: str,
    checkpoint: str | None = None,
    checkpoint_every: int = 0,
    device: str = "auto",
    threads: int | None = None,
    masks_path: str | None = None,
    eval_splits: tuple[str, ...] = ("train", "test"),
    gpu_locks: str | None = None,
    code: str | None = None,
    data_expect: str | None = None,
) -> None:
    """Train a shard and write its long-format run table; remove the checkpoint after.

    ``eval_splits``: what each evaluation scores (the study's
    :attr:`~sigprop.contract.StudySpec.eval_splits`).  ``code``: the train step's code digest
    (:func:`sigprop.registry.step_code`; the rule passes its ``code`` param, the digest that
    makes Snakemake rerun the job, and a direct call gets the current one): a checkpoint is
    resumed only when it was made under the same digest.  ``data_expect``: what the data set
    must be, as JSON (:func:`expected_data`).

    A shard with pruned runs reads the prune stage's masks (``masks_path``, the file the rule
    declares as an input, so the prune job runs first): its models start from
    :func:`start_params` and keep their masked weights at zero."""
    if code is None:
        from sigprop import registry

        code = registry.step_code("train")
    dev = _setup(device, threads, gpu_locks)
    shard = Shard.from_json(shard_json)
    dtype = engine.set_precision_policy(shard.runs[0].precision)
    ds = read_dataset(shard, data_path, data_expect)
    if ds.meta.get("task") == "regression":
        raise ValueError(
            f"{data_path}: '{ds.meta.get('name')}' is a regression data set; the "
            "shard trainer trains classifiers (cross-entropy): use a study with "
            "task 'measure' for regression (e.g. diversity_linear)"
        )
    data = engine.to_data(ds, dev, dtype)
    params, buffers = engine.load_state(Path(init_path), shard)
    _check_masks(shard, masks_path)
    masks = None
    if shard.pruned:
        masks = engine.load_masks(Path(masks_path), shard)
        params = start_params(shard, params, masks)
    t0 = time.time()
    trainer = engine.ShardTrainer(
        shard,
        data,
        params,
        dev,
        buffers=buffers,
        checkpoint=Path(checkpoint) if checkpoint else None,
        checkpoint_every=checkpoint_every,
        masks=masks,
        eval_splits=tuple(eval_splits),
        code=code,
    )
    df = trainer.run()
    tables.write_atomic(df, out, tables.shard_stamp(shard))
    log.info(
        "shard %s: %d models x %d steps in %.1fs; %d diverged; %d rows",
        shard.shard_id,
        len(shard.runs),
        shard.runs[0].steps,
        time.time() - t0,
        sum(s >= 0 for s in trainer.diverged_step),
        len(df),
    )
    if checkpoint and Path(checkpoint).exists():
        Path(checkpoint).unlink()


@_gated
def measure_shard(
    kind: str,
    shard_json: str,
    init_path: str,
    out: str,
    params_json: str,
    device: str = "auto",
    threads: int | None = None,
    data_path: str | None = None,
    masks_path: str | None = None,
    gpu_locks: str | None = None,
    execution_json: str = "{}",
    data_expect: str | None = None,
) -> None:
    """Run a measurement study's ``measure`` (``sigprop/studies/<kind>/measure.py``) on a
    shard's initialized models.  ``execution_json``: the execution-only parameters
    (:meth:`sigprop.config.Study.execution_json`), which the rule passes outside its cache key.

    ``params_json`` is the study's ``measure:`` section as the rule passes it
    (:meth:`sigprop.config.Study.job_params`); ``data_path`` the shard's prepared data set
    (``results/data/<name>.npz``) for studies whose measurement reads data (e.g. 002's trained
    networks); it is checked against ``data_expect`` (:func:`expected_data`) before the
    measurement, and the study's ``measure`` reads it with :func:`sigprop.data.prepare.load`,
    which checks its contents.  A shard with pruned runs also gets the prune stage's masks
    (``masks_path``, an input of the rule)."""
    from sigprop import registry

    p = registry.job_params(kind, params_json)
    p = dataclasses.replace(
        p,
        **{
            section: dataclasses.replace(getattr(p, section), **values)
            for section, values in json.loads(execution_json).items()
        },
    )
    dev = _setup(device, threads, gpu_locks)
    shard = Shard.from_json(shard_json)
    _check_masks(shard, masks_path)
    if data_path is not None:
        with rebuild_hint():
            check_dataset(data_path, expected_data(shard, data_expect))
    engine.set_precision_policy(shard.runs[0].precision)
    params, buffers = engine.load_state(Path(init_path), shard)
    params = [p_.to(dev) for p_ in params]
    buffers = [b.to(dev) for b in buffers]
    t0 = time.time()
    with rebuild_hint():
        df = registry.measure_function(kind)(
            shard,
            params,
            buffers,
            p,
            device=dev.type,
            data_path=None if data_path is None else str(data_path),
            masks_path=None if masks_path is None else str(masks_path),
        )
    tables.write_atomic(df, out, tables.shard_stamp(shard))
    log.info(
        "shard %s: %d models measured in %.1fs; %d rows",
        shard.shard_id,
        len(shard.runs),
        time.time() - t0,
        len(df),
    )
