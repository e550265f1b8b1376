"""The cost plan of a configured run (``sigprop plan``): per study and block, how many runs and
shards, the FLOPs and peak memory of a shard, its projected wall time on this CPU and on named
GPUs, and the study's GPU-hours.  No Snakemake: the config is read and the studies built by the
same functions the Snakefile calls (:func:`sigprop.config.build_study`).

How each number is obtained:

* **FLOPs** are counted from operator shapes (``torch.utils.flop_counter``, as ``sigprop
  bench shard`` does) by running one training step of one model of the shard's shape on the ``meta``
  device (no memory, no arithmetic): forward + backward at the shard's (padded) batch, times the
  steps, plus the evaluations (a forward pass over ``min(2048, n_train)`` training and all test
  examples every ``eval_every`` steps), times the models.  A measurement study (task
  ``measure``) is costed as one forward + backward pass of its batch per model and step (its
  ``steps``: 1 at initialization, more where it trains, as 002's): a proxy, flagged as such,
  because each measurement has its own passes.
* **Peak memory** of a shard: per model, the parameters with their gradients, initial copy and
  optimizer slots (4 + slots copies; 8-byte floats under ``float64``), plus every tensor
  autograd saves for the backward pass at the batch size (measured with saved-tensor hooks in
  the same ``meta`` step); plus the data set on the device.  A shard with data-dependent
  pruners (SNIP, SBP-SR, GraSP) peaks, if higher, in its prune stage: its largest group of
  models scored together times the activations of the class-balanced scoring batch
  (Hayou et al. 2021, arXiv:2002.08797, Sec. 2.1: ``prune_batch`` examples per class, in one
  batch because BatchNorm runs in training mode).
* **CPU time** is timed once per machine, torch version and thread count (the config's
  ``threads_per_job``, as each job runs), and stored in :data:`CPU_RATES_FILE` (with the
  machine's description and the date) for later plans of the same shapes (``--recalibrate``
  measures again).  Each training shard's *step class* (its family and step shape, data sizes,
  batch, models, dropout, optimizer and evaluation sizes) is timed directly: a few real
  training steps and one evaluation of the shard's own runs (:mod:`sigprop.tools.step_times`),
  so a small net bound by per-step overhead is projected at its own pace, not at the FLOP rate
  of a large one; a measurement study that trains (002's) is timed by running its own
  measurement at two step counts.  A shard's time is then its steps and evaluations at those
  rates; other shards (measurements at initialization) take their FLOPs at the family's rate,
  from a few training steps of the family's costliest shard (its models and batch cut until a
  step is at most :data:`CALIBRATION_FLOPS`).  Every shard adds its init stage: drawing its
  parameters (the counter-based generator of :mod:`sigprop.nets.rng`, about 55 ns a parameter
  on one core of this CPU) and writing and reading the init file, each timed per parameter and
  per byte on the calibration shard.  The init term dominates measurement studies of very wide
  and deep nets (000 at width 1000, depth 200: 2e8 float64 parameters a model), whose FLOPs
  are one pass.  GPU projections leave it out.  ``tests/test_ladder_plan.py`` keeps every
  committed ladder rung's job time within 2x of this projection.
* **GPU time** is FLOPs over a named GPU's dense peak (vendor figures in :data:`GPUS`, float32
  or TF32 by the run's precision) times an efficiency: the one ``sigprop gpu-check`` measured on
  that GPU for the shard's study or family (:data:`EFFICIENCY_FILE`), else
  :data:`DEFAULT_EFFICIENCY`, or ``--efficiency`` for every shard.  A projection, never a
  measurement of the shard itself.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import yaml

from sigprop.sizing import GPUS, HOST_BASE_MB, dense_peak, gpu_of  # noqa: F401 (re-exported)
from sigprop.tools.shard_shapes import (  # noqa: F401 (re-exported)
    EVAL_TRAIN_MAX,
    STEP_FIELDS,
    dataset_dims,
    eval_sizes,
    shard_batch,
    step_shape,
)

COMMANDS = ("plan",)

DEFAULT_EFFICIENCY = 0.3
"""Fraction of a GPU's dense peak a shard is assumed to reach where none was measured: stacked
small matmuls and grouped convolutions rarely reach more (``sigprop gpu-check`` measures it)."""
EFFICIENCY_FILE = Path(__file__).resolve().parents[2] / "config" / "gpu_efficiency.yaml"
"""Efficiencies measured by ``sigprop gpu-check`` (per GPU of :data:`GPUS`: per study and per
family, with the device, date and commit), written by ``sigprop gpu-check --record``."""


def measured_efficiencies(path: str | Path = EFFICIENCY_FILE) -> dict:
    """``{gpu: entry}`` of ``path`` (:data:`EFFICIENCY_FILE`), ``{}`` when it does not exist;
    every efficiency must be a number in (0, 1] and every GPU one of :data:`GPUS` (else a
    ValueError naming the file and key)."""
    path = Path(path)
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of GPUs, got {type(data).__name__}")
    for gpu, entry in data.items():
        if gpu not in GPUS:
            raise ValueError(
                f"{path}: {gpu!r} is no GPU of sigprop.tools.plan.GPUS ({sorted(GPUS)})"
            )
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: {gpu}: expected a mapping, got {type(entry).__name__}")
        for part in ("by_study", "by_family"):
            for key, value in (entry.get(part) or {}).items():
                if (
                    isinstance(value, bool)
                    or not isinstance(value, (int, float))
                    or not 0 < value <= 1
                ):
                    raise ValueError(
                        f"{path}: {gpu}.{part}.{key}: {value!r} is not a fraction in (0, 1]"
                    )
    return data


def efficiency_for(
    measured: dict, gpu: str, study: str, arch: str, default: float = DEFAULT_EFFICIENCY
) -> tuple[float, str]:
    """The efficiency a projection on ``gpu`` uses for a shard of ``study`` and family ``arch``,
    and where it comes from: the study's measured value, else the family's, else ``default``
    (``"study"``, ``"family"`` or ``"assumed"``)."""
    entry = measured.get(gpu) or {}
    if study in (entry.get("by_study") or {}):
        return float(entry["by_study"][study]), "study"
    if arch in (entry.get("by_family") or {}):
        return float(entry["by_family"][arch]), "family"
    return default, "assumed"


@dataclasses.dataclass
class ShapeCost:
    """One model of one shape: FLOPs of a training step and of a forward pass per example,
    parameter count and saved-activation bytes at the batch size."""

    step_flops: float
    fwd_flops_per_example: float
    params: int
    act_bytes: int


def load(
    config_path: str | Path = "config/config.yaml",
    overrides: list[str] | None = None,
    results: str | Path | None = "results",
):
    """The config with ``key=value`` overrides (YAML values, as ``snakemake --config``) and its
    studies, checked and built as the Snakefile builds them (size bound, schema, finite numbers,
    data options, scale overrides, each study file's schema, the shards already computed under
    ``results``): ``(config, {name: Study})``; errors name ``--config`` or the file the key came
    from."""
    import jsonschema

    from sigprop.config import ConfigError, ConfigSources, explain, load_run, load_yaml

    config = load_yaml(config_path)
    cli = {}
    for item in overrides or []:
        if "=" not in item:
            raise ConfigError(f"--config {item!r}: expected key=value")
        key, value = item.split("=", 1)
        config[key] = cli[key] = yaml.safe_load(value)
    schemas = Path(__file__).resolve().parents[2] / "workflow/schemas"

    def validate(obj, schema_file, where):
        schema = load_yaml(schemas / schema_file)
        try:
            jsonschema.validate(obj, schema)
        except jsonschema.ValidationError as e:
            raise ConfigError(explain(e, where)) from None
        _defaults(obj, schema)

    studies = load_run(config, ConfigSources([config_path], cli), validate, results)
    return config, studies


def _defaults(obj: dict, schema: dict) -> None:
    """Fill the schema's defaults in place, nested objects too (as Snakemake's validate does)."""
    for key, spec in (schema.get("properties") or {}).items():
        if not isinstance(spec, dict):
            continue
        if key not in obj and "default" in spec:
            obj[key] = copy.deepcopy(spec["default"])
        if isinstance(obj.get(key), dict) and spec.get("properties"):
            _defaults(obj[key], spec)


def shape_cost(run, in_shape: tuple[int, ...], n_out: int, batch: int) -> ShapeCost:
    """FLOPs and saved bytes of one model's training step, counted on the ``meta`` device."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from sigprop.nets import families

    # dropout adds no FLOPs the counter sees; the init's distribution no shapes (and QR is slow)
    run = dataclasses.replace(run, keep_rate=1.0, init="gaussian")
    fam = families.get(run.arch)
    cpu, meta = torch.device("cpu"), torch.device("meta")
    dtype = torch.float64 if run.precision == "float64" else torch.float32
    keys = torch.zeros(1, dtype=torch.int64, device=meta)
    try:  # shapes only: a one-model init on the meta device (no values, no time) ...
        params, buffers = fam.init((run,), keys, tuple(in_shape), n_out, meta, dtype)
    except (NotImplementedError, RuntimeError):  # ... or on the CPU where a family needs values
        params, buffers = fam.init((run,), keys.to(cpu), tuple(in_shape), n_out, cpu, dtype)
    params = [torch.empty_like(p, device=meta).requires_grad_(True) for p in params]
    buffers = [torch.empty_like(b, device=meta) for b in buffers]
    saved = [0]

    def pack(t):
        saved[0] += t.numel() * t.element_size()
        return t

    x = torch.empty((1, batch) + tuple(in_shape), device=meta, dtype=dtype)
    with (
        FlopCounterMode(display=False) as step,
        torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t),
    ):
        out, _ = fam.apply((run,), params, buffers, x, True, keys, 0)
        torch.autograd.grad(out.float().sum(), [p for p in params], allow_unused=True)
    xe = torch.empty((1, 1) + tuple(in_shape), device=meta, dtype=dtype)
    with torch.no_grad(), FlopCounterMode(display=False) as fwd:
        fam.apply((run,), params, buffers, xe, False, keys, 0)
    return ShapeCost(
        float(step.get_total_flops()),
        float(fwd.get_total_flops()),
        sum(p.numel() for p in params),
        saved[0],
    )


class StepCosts:
    """:func:`shape_cost` of each step shape and batch, counted once.  Counts are affine in the
    batch (every tensor is per example or independent of the batch), so a shape met at three or
    more batches (``batches``: the batches of each ``(step_shape, in_shape, n_out)`` in the run)
    is traced at batches 2 and 3 and extrapolated exactly; ``tests/test_plan.py`` checks the
    extrapolation against direct traces."""

    def __init__(self, batches: dict | None = None):
        self.batches = batches or {}
        self.cache: dict = {}

    def _trace(self, run, in_shape, n_out, batch) -> ShapeCost:
        key = (step_shape(run), in_shape, n_out, batch)
        if key not in self.cache:
            self.cache[key] = shape_cost(run, in_shape, n_out, batch)
        return self.cache[key]

    def get(self, run, in_shape: tuple, n_out: int, batch: int) -> ShapeCost:
        shape = (step_shape(run), in_shape, n_out)
        key = shape + (batch,)
        if key in self.cache:
            return self.cache[key]
        if len(self.batches.get(shape, ())) < 3 or batch in (2, 3):
            return self._trace(run, in_shape, n_out, batch)
        c2, c3 = self._trace(run, in_shape, n_out, 2), self._trace(run, in_shape, n_out, 3)
        self.cache[key] = affine_in_batch(c2, c3, batch)
        return self.cache[key]


def affine_in_batch(c2: ShapeCost, c3: ShapeCost, batch: int) -> ShapeCost:
    """The cost at ``batch`` from the costs at batches 2 and 3 (:class:`StepCosts`)."""
    return ShapeCost(
        c2.step_flops + (batch - 2) * (c3.step_flops - c2.step_flops),
        c2.fwd_flops_per_example,
        c2.params,
        c2.act_bytes + (batch - 2) * (c3.act_bytes - c2.act_bytes),
    )


def step_batches(studies: dict, options: dict) -> dict:
    """The shard batches of each ``(step_shape, in_shape, n_out)`` of the run (:class:`StepCosts`)."""
    out: dict = {}
    for study in studies.values():
        for shard in study.shards:
            r0 = shard.runs[0]
            in_shape, n_out, _, _ = dataset_dims(r0.dataset, options)
            out.setdefault((step_shape(r0), in_shape, n_out), set()).add(shard_batch(shard))
    return out


def _slots(run) -> int:
    return 1 if run.optimizer == "rmsprop" or run.momentum > 0 else 0


def _prune_bytes(shard, c: ShapeCost, batch: int, n_classes: int, bytes_per: int) -> int:
    """Peak bytes of a shard's prune stage: its largest group of data-dependent pruned models
    (:func:`sigprop.prune.stage.prune_groups`, scored together) times their parameters and
    the forward activations of the class-balanced scoring batch, ``prune_batch`` examples per
    class, all at once (BatchNorm in training mode needs the whole batch)."""
    from sigprop.prune import DATA_PRUNERS
    from sigprop.prune.stage import prune_groups

    best = 0
    for idx in prune_groups(shard).values():
        run = shard.runs[idx[0]]
        if run.pruner not in DATA_PRUNERS:
            continue
        examples = run.prune_batch * max(1, n_classes)
        examples = min(examples, run.prune_max or examples)
        best = max(
            best, len(idx) * (2 * bytes_per * c.params + c.act_bytes * examples // max(1, batch))
        )
    return best


def shard_costs(study, options: dict, cache: StepCosts | None = None) -> list[dict]:
    """One dict per shard: block, models, FLOPs, peak bytes, and whether FLOPs are a proxy
    (``cache``: the step costs shared across studies)."""
    from sigprop.tools import step_times

    cache = StepCosts() if cache is None else cache
    rows = []
    for shard in study.shards:
        r0 = shard.runs[0]
        in_shape, n_out, n_train, n_test = dataset_dims(r0.dataset, options)
        batch = shard_batch(shard)
        c = cache.get(r0, in_shape, n_out, batch)
        m = len(shard.runs)
        measure = study.task == "measure"
        steps = max(r.steps for r in shard.runs)  # a measure study may train (002)
        evals = 0 if measure else steps // max(1, min(r.eval_every for r in shard.runs)) + 1
        splits = study.eval_splits
        n_eval = sum(eval_sizes(r0, n_train, n_test, splits))
        flops = m * (c.step_flops * steps + c.fwd_flops_per_example * n_eval * evals)
        bytes_per = 8 if r0.precision == "float64" else 4
        mem = m * (bytes_per * c.params * (4 + _slots(r0)) + c.act_bytes)
        mem = max(mem, _prune_bytes(shard, c, batch, n_out, bytes_per))
        mem += bytes_per * (n_train + n_test) * math.prod(in_shape)
        rows.append(
            {
                "shard": shard.shard_id,
                "block": study.labels[r0.run_id],
                "models": m,
                "arch": r0.arch,
                "precision": r0.precision,
                "flops": flops,
                "params": m * c.params,
                "param_bytes": m * c.params * bytes_per,
                "peak_bytes": mem,
                "proxy": measure,
                "steps": steps,
                "evals": evals,
                "step_flops": c.step_flops,
                "step_class": step_times.step_class(
                    study, shard, (in_shape, n_out, n_train, n_test)
                ),
            }
        )
    return rows


def shard_floor_mb(study, shard, options: dict) -> float | None:
    """The least memory, in MB, of the heaviest job of ``shard`` (a :class:`sigprop.config.Shard`
    of ``study``): its models' parameters and gradients and the examples of its data set known
    without building it (:func:`dataset_dims`; :func:`sigprop.sizing.shard_floor_bytes`); None
    for families whose shapes are not known
    without building them. Torch-free: the workflow asks it of every shard job."""
    from sigprop.sizing import shard_floor_bytes

    r0 = shard.runs[0]
    in_shape, n_out, n_train, n_test = dataset_dims(r0.dataset, options)
    floor = shard_floor_bytes(shard.runs, in_shape, n_out, n_train + n_test)
    return None if floor is None else floor / 2**20


CALIBRATION_FLOPS = 2e10
"""Most FLOPs one timed calibration step may take (models and batch are cut to fit)."""


CPU_RATES_FILE = Path("results/plan/cpu_rates.json")
"""Where the CPU calibration is stored, relative to the run's directory: rates per family and
calibration shape, with the machine they were measured on (:func:`stored_rates`)."""


def machine() -> dict:
    """What a CPU calibration depends on: the processor (:func:`sigprop.tools.bench.machine`),
    its cores, torch's version and threads."""
    import os

    from sigprop.tools.bench import machine as described

    m = described()
    return {
        "cpu": m.get("cpu_model") or m["cpu"],
        "cores": os.cpu_count(),
        "torch": m["torch"],
        "threads": m["threads"],
    }


def calibration_key(family: str, shape: tuple) -> str:
    """The stored rate's key: the family and what sets its calibration step (run shape, input
    shape, outputs, batch, models)."""
    run, in_shape, n_out, batch, _flops, models = shape
    return json.dumps([family, list(run.shape_key()), list(in_shape), n_out, batch, models])


def stored_rates(
    families_shapes: dict, path: str | Path = CPU_RATES_FILE, recalibrate: bool = False
) -> tuple[dict, dict]:
    """The CPU rates of ``families_shapes`` (:func:`calibrate`'s argument): those stored in
    ``path`` for this machine (:func:`machine`) and these shapes, the rest calibrated now and
    stored; ``recalibrate`` measures every one again.  Returns ``(rates, source)``, the source
    saying when each rate was measured and whether it came from the file."""
    import datetime

    from sigprop.tools.step_times import read_calibration, write_calibration

    path = Path(path)
    here = machine()
    data = read_calibration(path, here)
    stored = {} if recalibrate else dict(data.get("rates") or {})
    keys = {fam: calibration_key(fam, shape) for fam, shape in families_shapes.items()}
    missing = {fam: shape for fam, shape in families_shapes.items() if keys[fam] not in stored}
    fresh = calibrate(missing) if missing else {}
    today = datetime.date.today().isoformat()
    for fam, rate in fresh.items():
        stored[keys[fam]] = {**rate, "measured": today}
    if fresh:
        data["rates"] = stored
        write_calibration(path, data)
    rates = {fam: stored[keys[fam]] for fam in families_shapes}
    source = {
        "file": str(path),
        "machine": here,
        "measured": {fam: r["measured"] for fam, r in rates.items()},
        "reused": sorted(set(families_shapes) - set(fresh)),
    }
    return rates, source


def calibrate(families_shapes: dict, seconds: float = 2.0) -> dict:
    """Achieved CPU GFLOP/s per family: real training steps of the family's costliest shard
    shape ``(run, in_shape, n_out, batch, step_flops, models)``, with its models and batch cut
    until one step is at most :data:`CALIBRATION_FLOPS`, timed after a warm-up step."""
    import torch

    from sigprop.runs import Shard
    from sigprop.tools.bench import gaussian_data
    from sigprop.tools.step_times import calibration_cut, time_steps
    from sigprop.train.engine import ShardTrainer, initial_state, load_state, save_state

    rates = {}
    dev = torch.device("cpu")
    for fam, (run, in_shape, n_out, batch, step_flops, models) in families_shapes.items():
        cut, m = calibration_cut(step_flops, batch, models, CALIBRATION_FLOPS)
        step_flops *= cut / batch
        batch = cut
        runs = tuple(
            dataclasses.replace(
                run, seed=i, batch_size=batch, micro_batch=0, steps=10**6, eval_every=10**6
            )
            for i in range(m)
        )
        shard = Shard("plan", runs)
        data = gaussian_data(max(4 * batch, 64), in_shape, max(n_out, 2), dev)
        t0 = time.perf_counter()
        params, buffers = initial_state(shard, in_shape, n_out, dev, torch.float32)
        t_init = time.perf_counter() - t0
        n_params = sum(p.numel() for p in params)
        n_bytes = sum(p.numel() * p.element_size() for p in params)
        with tempfile.TemporaryDirectory() as tmp:  # the init file: written, then read
            path = Path(tmp) / "init.pt"
            t0 = time.perf_counter()
            save_state(params, buffers, shard, path)
            load_state(path, shard)
            t_io = time.perf_counter() - t0
        tr = ShardTrainer(shard, data, params, dev, buffers=buffers)
        dt, n = time_steps(tr, seconds, 20)
        rates[fam] = {
            "gflops": m * step_flops / dt / 1e9,
            "step_s": dt,
            "models": m,
            "batch": batch,
            "in_shape": list(in_shape),
            "steps_timed": n,
            "init_s_per_param": t_init / n_params,
            "io_s_per_byte": t_io / n_bytes,
        }
    return rates


def cpu_seconds(shard_row: dict, rates: dict, steps: dict | None = None) -> float:
    """A shard's projected CPU time: a training shard whose step class was timed
    (``steps``: :func:`sigprop.tools.step_times.stored`) takes its steps and evaluations at
    the timed rates, any other shard its FLOPs at the family's rate (:func:`calibrate`); plus
    drawing its parameters and writing and reading its init file.  NaN when its family was not
    calibrated."""
    r = rates.get(shard_row["arch"])
    if r is None:
        return math.nan
    t = (steps or {}).get(shard_row.get("step_class"))
    if t is not None:
        work = (
            t.get("fixed_s", 0.0)
            + shard_row["steps"] * t["step_s"]
            + shard_row["evals"] * t["eval_s"]
        )
    else:
        work = shard_row["flops"] / (r["gflops"] * 1e9)
    return (
        work
        + shard_row["params"] * r.get("init_s_per_param", 0.0)
        + shard_row["param_bytes"] * r.get("io_s_per_byte", 0.0)
    )


def plan(
    config_path: str | Path = "config/config.yaml",
    overrides: list[str] | None = None,
    efficiency: float | None = None,
    calibrate_cpu: bool = True,
    gpus: dict | None = None,
    measured: dict | None = None,
    recalibrate: bool = False,
    rates_file: str | Path = CPU_RATES_FILE,
) -> dict:
    """The plan as a dict: ``blocks`` (one row per study and block), ``studies`` (totals),
    ``cpu_rates`` (the calibration, stored in ``rates_file`` and reused: :func:`stored_rates`;
    ``recalibrate`` measures again) and the assumptions.  GPU projections use ``efficiency``
    for every shard when given, else the efficiency measured on that GPU for the shard's study
    or family (``measured``, default :func:`measured_efficiencies`; :func:`efficiency_for`),
    else :data:`DEFAULT_EFFICIENCY`."""
    import torch

    gpus = gpus or GPUS
    if measured is None:
        measured = {} if efficiency is not None else measured_efficiencies()
    used: dict = {}

    def eff(g: str, study: str, arch: str) -> float:
        if efficiency is not None:
            return efficiency
        value, source = efficiency_for(measured, g, study, arch)
        used.setdefault(g, {})[f"{study}/{arch}"] = (value, source)
        return value

    config, studies = load(config_path, overrides)
    options = config["data"]["options"]
    cache, per_study = StepCosts(step_batches(studies, options)), {}
    fam_shapes = {}
    for name, study in studies.items():
        rows = shard_costs(study, options, cache)
        per_study[name] = (study, rows)
        for shard, r in zip(study.shards, rows):
            r0 = shard.runs[0]
            in_shape, n_out, _, _ = dataset_dims(r0.dataset, options)
            cur = fam_shapes.get(r0.arch)
            if cur is None or r["flops"] > cur[0]:  # the family's costliest shard
                fam_shapes[r0.arch] = (
                    r["flops"],
                    (r0, in_shape, n_out, shard_batch(shard), r["step_flops"], len(shard.runs)),
                )
    # timed with the threads each job gets (threads_per_job), as the jobs run
    before, threads = torch.get_num_threads(), int(config.get("threads_per_job") or 1)
    rates, rates_source, steps, steps_reused = {}, {}, {}, []
    if calibrate_cpu:
        from sigprop.tools import step_times

        classes = {
            r["step_class"]: (study, shard, options, r["step_flops"])
            for study, rows in per_study.values()
            for shard, r in zip(study.shards, rows)
            if r["step_class"] is not None
        }
        torch.set_num_threads(threads)
        try:
            rates, rates_source = stored_rates(
                {k: v[1] for k, v in fam_shapes.items()}, rates_file, recalibrate
            )
            steps, steps_reused = step_times.stored(
                classes, rates_file, machine(), CALIBRATION_FLOPS, recalibrate
            )
        finally:
            torch.set_num_threads(before)
    blocks, totals, shards = [], {}, []
    for name, (study, rows) in per_study.items():
        for r in rows:
            cpu = cpu_seconds(r, rates, steps)
            shards.append(
                {
                    "study": name,
                    **{
                        k: r[k]
                        for k in (
                            "shard",
                            "block",
                            "models",
                            "arch",
                            "precision",
                            "flops",
                            "peak_bytes",
                            "proxy",
                        )
                    },
                    "cpu_s": cpu,
                    **{
                        f"{g}_s": r["flops"]
                        / (dense_peak(spec, r["precision"]) * eff(g, name, r["arch"]))
                        for g, spec in gpus.items()
                    },
                }
            )
        by_block: dict = {}
        for r in rows:
            by_block.setdefault(r["block"], []).append(r)
        for label, rs in by_block.items():
            cpu_s = [cpu_seconds(r, rates, steps) for r in rs]
            row = {
                "study": name,
                "scale": study.scale,
                "task": study.task,
                "block": label,
                "runs": sum(r["models"] for r in rs),
                "shards": len(rs),
                "flops_per_shard_max": max(r["flops"] for r in rs),
                "flops_total": sum(r["flops"] for r in rs),
                "peak_mb_per_shard_max": max(r["peak_bytes"] for r in rs) / 2**20,
                "cpu_s_per_shard_max": max(cpu_s),
                "cpu_h_total": sum(cpu_s) / 3600,
                "flops_proxy": any(r["proxy"] for r in rs),
            }
            for g, spec in gpus.items():
                peak = [dense_peak(spec, r["precision"]) for r in rs]
                secs = [r["flops"] / (p * eff(g, name, r["arch"])) for r, p in zip(rs, peak)]
                row[f"{g}_s_per_shard_max"] = max(secs)
                row[f"{g}_h_total"] = sum(secs) / 3600
                row[f"{g}_fits"] = row["peak_mb_per_shard_max"] <= spec["mem_gb"] * 1024
            blocks.append(row)
        b = [x for x in blocks if x["study"] == name]
        totals[name] = {
            "scale": study.scale,
            "runs": sum(x["runs"] for x in b),
            "shards": sum(x["shards"] for x in b),
            "flops_total": sum(x["flops_total"] for x in b),
            "cpu_h_total": sum(x["cpu_h_total"] for x in b),
            "peak_mb_per_shard_max": max(x["peak_mb_per_shard_max"] for x in b),
            **{f"{g}_h_total": sum(x[f"{g}_h_total"] for x in b) for g in gpus},
        }
    return {
        "config": str(config_path),
        "overrides": list(overrides or []),
        "efficiency": efficiency if efficiency is not None else DEFAULT_EFFICIENCY,
        "efficiency_given": efficiency is not None,
        "efficiency_used": {
            g: {k: {"value": v, "source": src} for k, (v, src) in u.items()}
            for g, u in used.items()
        },
        "efficiency_measured": {
            g: {k: e.get(k) for k in ("device", "date", "commit", "torch", "source")}
            for g, e in measured.items()
            if g in gpus
        },
        "gpus": gpus,
        "cpu_threads": threads,
        "cpu_rates": rates,
        "cpu_rates_source": rates_source,
        "step_times": steps,
        "step_times_reused": steps_reused,
        "blocks": blocks,
        "studies": totals,
        "shards": shards,
        "notes": [
            "FLOPs of measure studies are a proxy (one forward + backward per model)",
            "CPU times include the init stage (drawing, writing and reading the "
            "parameters); GPU times do not",
            "GPU times are projections: FLOPs / (dense peak x efficiency), the "
            "efficiency measured on that GPU for the study or family where "
            "config/gpu_efficiency.yaml has one",
            "peak memory excludes the framework's own workspace",
        ],
    }


SAFETY_TIME = 3.0
"""Wall time asked of the scheduler: the projection times this (projections are rough, and a
job killed at its limit loses its work since the last checkpoint)."""
SAFETY_MEM = 1.5
"""Memory asked of the scheduler: the planned peak times this, plus :data:`HOST_BASE_MB`."""
MIN_RUNTIME_MIN = 5


def resources(
    p: dict,
    target: str = "A100-80GB",
    safety_time: float = SAFETY_TIME,
    safety_mem: float = SAFETY_MEM,
) -> dict:
    """Per shard, what to ask a scheduler for on ``target`` (a GPU of :data:`GPUS`, or
    ``cpu``): ``runtime`` in minutes (projected time x ``safety_time``, at least
    :data:`MIN_RUNTIME_MIN`), ``mem_mb`` (host memory: planned peak x ``safety_mem`` +
    :data:`HOST_BASE_MB`) and, on a GPU, ``gpu_mem_mb`` (planned peak x ``safety_mem``).
    The rules read it through the config's ``resources_plan``; retries multiply it by the
    attempt."""
    if target != "cpu" and target not in p["gpus"]:
        raise ValueError(
            f"resources: unknown target {target!r} (cpu or one of {sorted(p['gpus'])})"
        )
    out = {}
    for r in p["shards"]:
        secs = r["cpu_s"] if target == "cpu" else r[f"{target}_s"]
        if secs != secs:
            raise ValueError(
                f"resources: shard {r['shard']} of {r['study']} has no {target} "
                "projection (calibrate the CPU, or pick a GPU)"
            )
        peak_mb = r["peak_bytes"] / 2**20
        row = {
            "runtime": max(MIN_RUNTIME_MIN, math.ceil(safety_time * secs / 60)),
            "mem_mb": math.ceil(safety_mem * peak_mb + HOST_BASE_MB),
        }
        if target != "cpu":
            row["gpu_mem_mb"] = math.ceil(safety_mem * peak_mb)
        out.setdefault(r["study"], {})[r["shard"]] = row
    return {
        "target": target,
        "safety_time": safety_time,
        "safety_mem": safety_mem,
        "host_base_mb": HOST_BASE_MB,
        "efficiency": p["efficiency"],
        "efficiency_measured": (p.get("efficiency_measured") or {}).get(target),
        "config": p["config"],
        "overrides": p["overrides"],
        "shards": out,
    }


def _fmt_s(s: float) -> str:
    if s != s:
        return "–"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def efficiency_line(p: dict, gpu: str) -> str:
    """Which efficiencies the projections on ``gpu`` used, and where they were measured."""
    if p.get("efficiency_given") or not p.get("efficiency_used", {}).get(gpu):
        return (
            f"Efficiency on {gpu}: {p['efficiency']:g} of its dense peak "
            f"({'--efficiency' if p.get('efficiency_given') else 'assumed'})."
        )
    used = p["efficiency_used"][gpu]
    measured = sorted(
        {f"{k.split('/')[0]} {v['value']:.3f}" for k, v in used.items() if v["source"] != "assumed"}
    )
    assumed = sorted({k.split("/")[0] for k, v in used.items() if v["source"] == "assumed"})
    if not measured:
        return f"Efficiency on {gpu}: {p['efficiency']:g} of its dense peak (assumed)."
    m = p["efficiency_measured"].get(gpu, {})
    text = (
        f"Efficiency on {gpu} measured by sigprop gpu-check ({m.get('device')}, "
        f"{m.get('date')}, commit {m.get('commit')}): " + ", ".join(measured)
    )
    if assumed:
        text += f"; assumed {p['efficiency']:g} for " + ", ".join(assumed)
    return text + "."


def table(p: dict, gpu: str = "A100-80GB") -> str:
    """The plan as Markdown: one row per study and block, then the studies' totals."""
    head = [
        "study",
        "scale",
        "block",
        "runs",
        "shards",
        "TFLOP/shard (max)",
        "peak MB/shard",
        "CPU/shard (max)",
        "CPU total",
        f"{gpu}/shard (max)",
        f"{gpu} h",
    ]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for b in p["blocks"]:
        proxy = " (proxy)" if b["flops_proxy"] else ""
        out.append(
            f"| {b['study']} | {b['scale']} | {b['block']} | {b['runs']} | {b['shards']} | "
            f"{b['flops_per_shard_max'] / 1e12:.3g}{proxy} | "
            f"{b['peak_mb_per_shard_max']:.0f} | {_fmt_s(b['cpu_s_per_shard_max'])} | "
            f"{_fmt_s(b['cpu_h_total'] * 3600)} | {_fmt_s(b[f'{gpu}_s_per_shard_max'])} | "
            f"{b[f'{gpu}_h_total']:.3g} |"
        )
    out += [
        "",
        "| study | scale | runs | shards | PFLOP | CPU total | "
        + " | ".join(f"{g} h" for g in p["gpus"])
        + " |",
        "|" + "---|" * (6 + len(p["gpus"])),
    ]
    for name, t in p["studies"].items():
        out.append(
            f"| {name} | {t['scale']} | {t['runs']} | {t['shards']} | "
            f"{t['flops_total'] / 1e15:.3g} | {_fmt_s(t['cpu_h_total'] * 3600)} | "
            + " | ".join(f"{t[f'{g}_h_total']:.3g}" for g in p["gpus"])
            + " |"
        )
    src = p.get("cpu_rates_source") or {}
    when = ", ".join(sorted({f"{d}" for d in (src.get("measured") or {}).values()}))
    how = (
        f"stored in {src.get('file')}, measured {when} on {src.get('machine', {}).get('cpu')}, "
        f"torch {src.get('machine', {}).get('torch')}; reused for "
        f"{', '.join(src.get('reused')) or 'none'} (--recalibrate measures again)"
        if src
        else ""
    )
    cpu = (
        f" CPU rates measured on {p['cpu_threads']} threads: "
        + ", ".join(f"{k} {v['gflops']:.1f} GFLOP/s" for k, v in p["cpu_rates"].items())
        + (f" ({how})" if how else "")
        + (
            f"; {len(p.get('step_times') or {})} training step classes timed directly "
            f"({len(p.get('step_times_reused') or [])} reused)"
            if p.get("step_times")
            else ""
        )
        + "."
        if p["cpu_rates"]
        else " CPU not calibrated (--no-calibrate): no CPU times."
    )
    out += ["", efficiency_line(p, gpu) + cpu]
    out += [f"Note: {n}." for n in p["notes"]]
    return "\n".join(out) + "\n"


def register(subparsers) -> None:
    """``sigprop plan``: :func:`plan` as :func:`table` prints it, optionally as JSON and as
    scheduler requests (:func:`resources`)."""
    pl = subparsers.add_parser(
        "plan",
        help="cost plan: runs, shards, FLOPs, memory, CPU and GPU time per study and block",
        description="Per study and block of the configured run: runs, shards, FLOPs per shard "
        "(counted from operator shapes on the meta device), peak memory per shard, the "
        "projected time of a shard on this CPU (calibrated by timing real steps) and "
        "on named GPUs (dense peak x efficiency), and the study's GPU-hours.",
    )
    pl.add_argument(
        "--config",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="overrides as for snakemake --config, e.g. scale=paper",
    )
    pl.add_argument("--configfile", default="config/config.yaml")
    pl.add_argument(
        "--efficiency",
        type=float,
        default=None,
        help="fraction of a GPU's dense peak assumed [default: sigprop.tools.plan."
        "DEFAULT_EFFICIENCY]",
    )
    pl.add_argument(
        "--gpu",
        default="A100-80GB",
        help="the GPU shown in the table's per-block columns [default: A100-80GB]",
    )
    pl.add_argument("--no-calibrate", action="store_true", help="skip the CPU timing")
    pl.add_argument(
        "--recalibrate",
        action="store_true",
        help="time the CPU again instead of reusing the rates stored in "
        "results/plan/cpu_rates.json for this machine and torch version",
    )
    pl.add_argument("--json", metavar="FILE", help="also write the whole plan as JSON")
    pl.add_argument(
        "--resources",
        metavar="FILE",
        help="write per-shard scheduler requests (runtime, mem_mb, gpu_mem_mb) for "
        "the config's resources_plan",
    )
    pl.add_argument(
        "--target",
        default="A100-80GB",
        help="what --resources plans for: a GPU of sigprop.tools.plan.GPUS or cpu "
        "[default: A100-80GB]",
    )
    pl.set_defaults(func=main)


def main(args: dict) -> int:
    """Print the plan's table (and write ``--json``, ``--resources``); 2 for a bad
    ``--efficiency``, ``--gpu`` or ``--target``."""
    from sigprop import atomic
    from sigprop.tools.json_out import jsonable

    eff = args["efficiency"]
    if eff is not None and not 0 < eff <= 1:
        print(f"sigprop plan: --efficiency {eff}: expected a fraction in (0, 1]", file=sys.stderr)
        return 2
    if args["gpu"] not in GPUS:
        print(f"sigprop plan: --gpu {args['gpu']}: known GPUs {sorted(GPUS)}", file=sys.stderr)
        return 2
    if args["target"] != "cpu" and args["target"] not in GPUS:
        print(
            f"sigprop plan: --target {args['target']}: cpu or one of {sorted(GPUS)}",
            file=sys.stderr,
        )
        return 2
    if args["resources"] and args["target"] == "cpu" and args["no_calibrate"]:
        print(
            "sigprop plan: --target cpu needs the CPU calibration (drop --no-calibrate)",
            file=sys.stderr,
        )
        return 2
    try:
        measured = {} if eff is not None else measured_efficiencies()
    except ValueError as e:
        print(f"sigprop plan: {e}", file=sys.stderr)
        return 2
    result = plan(
        args["configfile"],
        args["config"],
        eff,
        not args["no_calibrate"],
        measured=measured,
        recalibrate=args["recalibrate"],
    )
    if args["json"]:
        atomic.write_text(args["json"], json.dumps(jsonable(result), indent=2) + "\n")
    if args["resources"]:
        try:
            res = resources(result, args["target"])
        except ValueError as e:
            print(f"sigprop plan: {e}", file=sys.stderr)
            return 2
        atomic.write_text(args["resources"], json.dumps(res, indent=2) + "\n")
        print(
            f"wrote {args['resources']}: requests of "
            f"{sum(len(v) for v in res['shards'].values())} shards on {args['target']}",
            file=sys.stderr,
        )
    sys.stdout.write(table(result, args["gpu"]))
    return 0
