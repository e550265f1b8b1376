"""CPU time of a training shard from its own step class, timed (the plan's CPU projection).

A small shard's step is bound by per-operation overhead, not arithmetic: a narrow deep net
reaches a small fraction of the FLOP rate of a wide one, so no single rate per family projects
both (docs/performance.md, "Sizing ladder rungs").  Here each *step class* of a plan (the shard's family and step shape, its
input and output sizes, batch, models, dropout, optimizer and evaluation sizes: what sets the
time of one training step and one evaluation) is timed directly: a few real training steps and
one evaluation of the shard's own runs on Gaussian data of the shard's shapes, after a warm-up
step.  A class whose step would exceed :data:`sigprop.tools.plan.CALIBRATION_FLOPS` is timed on
fewer models (and, if one model exceeds it, a smaller batch) and scaled back linearly, which
holds where arithmetic dominates.  The times are stored with the machine beside the family
rates (:data:`sigprop.tools.plan.CPU_RATES_FILE`) and reused.

A shard's projection is then ``steps x step_s + evaluations x eval_s`` plus its init stage
(:func:`sigprop.tools.plan.cpu_seconds`).

A measurement study that trains inside its measurement (002's dropout learning: snapshots of
every unit every ``eval_every`` steps, Monte Carlo dropout before and after) spends most of its
time outside the training step, so its class is timed by running the study's own ``measure``
on one run of the shard for ``eval_every`` and for four times as many steps (after a warm-up
run), on the shard's prepared embedded data set: a fixed part and a part per step
(:func:`time_measure`).  Where the data set
must be downloaded, the plan keeps its FLOP proxy for that shard.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time


def step_class(study, shard, dims: tuple) -> str | None:
    """The key of ``shard``'s step class (the module docstring), as JSON text; ``dims``: its
    data set's ``(in_shape, n_out, n_train, n_test)``
    (:func:`sigprop.tools.shard_shapes.dataset_dims`).  None for a measurement at
    initialization (one step), which the plan keeps at its FLOP proxy."""
    from sigprop.tools.shard_shapes import eval_sizes, shard_batch, step_shape

    r0 = shard.runs[0]
    in_shape, n_out, n_train, n_test = dims
    measure = study.task == "measure"
    if measure and r0.steps <= 1:
        return None
    return json.dumps(
        [
            study.kind if measure else "train",
            r0.steps if measure else 0,
            r0.eval_every if measure else 0,
            list(step_shape(r0)),
            list(in_shape),
            n_out,
            shard_batch(shard),
            r0.batch_size,
            len(shard.runs),
            r0.keep_rate < 1,
            r0.optimizer,
            r0.momentum > 0,
            list(eval_sizes(r0, n_train, n_test, study.eval_splits)),
        ]
    )


def calibration_cut(step_flops: float, batch: int, models: int, max_flops: float):
    """``(batch, models)`` to time a step of ``models`` models of ``step_flops`` each at
    ``batch`` within ``max_flops``: the batch cut only where one model exceeds it, then the
    models."""
    b = batch if step_flops <= max_flops else max(1, int(batch * max_flops / step_flops))
    m = max(1, min(models, int(max_flops // max(step_flops * b / batch, 1.0))))
    return b, m


def time_steps(trainer, seconds: float, most: int) -> tuple[float, int]:
    """Seconds of one training step of ``trainer`` after a warm-up step: at least 2 steps, more
    until about ``seconds`` (at most ``most``); and how many were timed."""
    trainer.train_step()
    n, t0 = 0, time.perf_counter()
    while n < 2 or (time.perf_counter() - t0 < seconds and n < most):
        trainer.train_step()
        n += 1
    return (time.perf_counter() - t0) / n, n


def _data(n_train: int, n_test: int, in_shape, classes: int):
    import torch

    from sigprop.train.engine import Data

    g = torch.Generator().manual_seed(0)
    x = torch.randn((n_train + n_test,) + tuple(in_shape), generator=g)
    y = torch.randint(0, classes, (n_train + n_test,), generator=g)
    return Data(x[:n_train], y[:n_train], x[n_train:], y[n_train:], classes)


def time_class(
    study, shard, options: dict, step_flops: float, max_flops: float, seconds: float = 0.5
) -> dict[str, float]:
    """Seconds of one training step and of one evaluation of ``shard`` on this CPU, timed on
    the shard's first runs (cut until a step is at most ``max_flops``, then
    scaled back), each step after a warm-up one, for about ``seconds``."""
    import torch

    from sigprop.runs import Shard
    from sigprop.tools.shard_shapes import dataset_dims, eval_sizes, shard_batch
    from sigprop.train.engine import ShardTrainer, initial_state

    r0 = shard.runs[0]
    in_shape, n_out, n_train, n_test = dataset_dims(r0.dataset, options)
    batch, m = shard_batch(shard), len(shard.runs)
    b_cal, m_cal = calibration_cut(step_flops, batch, m, max_flops)
    cut = {"batch_size": b_cal, "micro_batch": 0} if b_cal != batch else {}
    runs = tuple(
        dataclasses.replace(
            r, steps=10**6, eval_every=10**6, target_acc=0.0, target_loss=0.0, **cut
        )
        for r in shard.runs[:m_cal]
    )
    cal = Shard(shard.shard_id, runs)
    n_tr, n_te = eval_sizes(r0, n_train, n_test, study.eval_splits)
    data = _data(max(n_tr, 4 * b_cal, 64), max(n_te, 1), in_shape, max(n_out, 2))
    dev = torch.device("cpu")
    params, buffers = initial_state(cal, in_shape, n_out, dev, torch.float32)
    tr = ShardTrainer(cal, data, params, dev, buffers=buffers, eval_splits=study.eval_splits)
    step_s, n = time_steps(tr, seconds, 50)
    t0 = time.perf_counter()
    tr.evaluate()
    eval_s = time.perf_counter() - t0
    scale = m / m_cal
    return {
        "step_s": step_s * scale * batch / b_cal,
        "eval_s": eval_s * scale,
        "models_timed": m_cal,
        "batch_timed": b_cal,
        "steps_timed": n,
    }


def time_measure(study, shard, options: dict) -> dict[str, float] | None:
    """Seconds of the study's ``measure`` on one run of ``shard`` as a fixed part and a part per
    step, from runs of ``eval_every`` and ``4 eval_every`` steps (at most the run's steps), on
    the shard's data set prepared in a temporary folder; scaled to the shard's models.  None
    where the data set is not embedded (it would have to be downloaded)."""
    import tempfile
    from pathlib import Path

    import torch

    from sigprop import registry
    from sigprop.contract import Params
    from sigprop.data import catalog
    from sigprop.data.prepare import prepare
    from sigprop.runs import Shard
    from sigprop.tools.shard_shapes import dataset_dims
    from sigprop.train import engine

    r0 = shard.runs[0]
    if catalog.get(r0.dataset).source != "embedded":
        return None
    in_shape, n_out, _, _ = dataset_dims(r0.dataset, options)
    p = Params.from_json(registry.spec(study.kind), study.job_params("measure", shard.shard_id))
    fn = registry.measure_function(study.kind)
    a = max(1, min(r0.steps, r0.eval_every))
    b = max(a, min(r0.steps, 4 * a))
    times: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = prepare(r0.dataset, Path(tmp) / "data.npz", options=options.get(r0.dataset))
        for n in (a, b, a):  # the first run warms up: the faster of the two at ``a`` counts
            one = Shard(shard.shard_id, (dataclasses.replace(r0, steps=n),))
            dtype = engine.set_precision_policy(r0.precision)
            params, buffers = engine.initial_state(one, in_shape, n_out, torch.device("cpu"), dtype)
            t0 = time.perf_counter()
            fn(one, params, buffers, p, "cpu", str(data), None)
            times[n] = min(times.get(n, math.inf), time.perf_counter() - t0)
    per_step = (times[b] - times[a]) / (b - a) if b > a else times[a] / a
    fixed = max(0.0, times[a] - per_step * a)
    m = len(shard.runs)
    return {
        "step_s": per_step * m,
        "eval_s": 0.0,
        "fixed_s": fixed * m,
        "models_timed": 1,
        "steps_timed": b,
    }


def read_calibration(path, here: dict) -> dict:
    """The calibration file at ``path`` (family rates and step times) when it was measured on
    the machine ``here`` (:func:`sigprop.tools.plan.machine`), else an empty one for ``here``
    (also for a missing or unreadable file)."""
    from pathlib import Path

    data: dict = {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        data = {}
    return data if data.get("machine") == here else {"machine": here}


def write_calibration(path, data: dict) -> None:
    """Write the calibration ``data`` to ``path`` atomically."""
    from pathlib import Path

    from sigprop import atomic

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(Path(path), json.dumps(data, indent=1, sort_keys=True) + "\n")


STEP_SECONDS = 0.5
"""About how long each step class is timed (at least two steps after the warm-up)."""


def stored(
    classes: dict[str, tuple], path, here: dict, max_flops: float, recalibrate: bool = False
) -> tuple[dict[str, dict], list[str]]:
    """The step and evaluation times of ``classes`` (key -> ``(study, shard, options,
    step_flops)``): those stored in ``path`` for this machine (``here``:
    :func:`sigprop.tools.plan.machine`), the rest timed now (:func:`time_class`, with
    progress on stderr) and stored; ``recalibrate`` times every one again.  Returns the times
    and the keys reused from the file."""
    import datetime
    import sys
    from pathlib import Path

    path = Path(path)
    data = read_calibration(path, here)
    times = {} if recalibrate else dict(data.get("steps") or {})
    missing = [k for k in classes if k not in times]
    today = datetime.date.today().isoformat()
    for i, key in enumerate(missing, 1):
        study, shard, options, flops = classes[key]
        print(
            f"sigprop plan: timing step class {i}/{len(missing)} ({study.name}, "
            f"shard {shard.shard_id}, {len(shard.runs)} models)",
            file=sys.stderr,
            flush=True,
        )
        t = (
            time_measure(study, shard, options)
            if study.task == "measure"
            else time_class(study, shard, options, flops, max_flops, STEP_SECONDS)
        )
        if t is not None:
            times[key] = {**t, "measured": today}
    if missing:
        data["steps"] = times
        write_calibration(path, data)
    return {k: times[k] for k in classes if k in times}, sorted(set(classes) - set(missing))
