"""The first hour on a GPU (``sigprop gpu-check``): one command that checks a CUDA device before a
paper-scale run is trusted to it, and writes one JSON for docs/performance.md.

It runs, on the device:

1. ``sigprop bench shard`` (:func:`sigprop.tools.bench.run`: the default fully connected cases,
   2 repeats);
2. :func:`compare_family` for every family of :data:`sigprop.nets.families.FAMILIES`: one tiny
   shard (2 models, :data:`FAMILY_CASES`) initialized once on the CPU, trained for a few steps
   on the CPU and on the device from those same weights, with the run table's losses and
   accuracies (evaluated at every step) and the final parameters and buffers compared against
   stated tolerances (:data:`TOLERANCES`);
3. :func:`timed_shard`: a short shard of a paper-scale shape (the first shard of
   ``trainable_depth`` at ``scale=paper``: 62 fc tanh nets, width 300, depth 10, MNIST-shaped
   inputs, batch 128) timed for a few training steps, against the projection
   :mod:`sigprop.tools.plan` makes for that GPU (FLOPs / (dense peak x efficiency)).

Precision: every comparison trains in float32 with TF32 off (``set_precision_policy
("float32")`` clears ``torch.backends.cuda.matmul.allow_tf32`` and
``torch.backends.cudnn.allow_tf32``; the flags are recorded in the JSON), except ``vgg16x3``,
which is compared in float64 (below).

Tolerances (:data:`TOLERANCES`; each comparison's tolerance is part of its output).  Two
devices that both compute IEEE float32 differ only in the order of their sums (blocked
matmuls, cuDNN's convolution algorithms, reductions): a few units of float32's 6e-8 per
operation.  How much a few SGD steps amplify such a difference was measured here on the CPU by
perturbing the initial weights of each tiny shard by one unit in the last place (relative
noise of float32's eps) and taking the largest change over 3 draws:

* ``shallow`` (fc, fc_loop, resnet_fc, stable_resnet_fc, densenet_fc, vcnn, lenet: at most ~6
  layers): 3 steps at lr 0.01 moved losses by at most 3e-6 (relative) and parameters by 4e-7
  of their scale; tolerance ``rtol 1e-4`` (+ ``atol 1e-6``) on losses and ``1e-4`` on
  parameters: 30x and 250x those, and 10x below a TF32 product's error (1e-3);
* ``deep`` (ResNet-18 to -104, Stable ResNets, VGG16: 16-104 BatchNorm layers on 8 examples
  per batch): the amplification is chaotic after 2 steps (resnet50 and resnet104 moved by
  1e-2 at lr 0.005), so 1 step at lr 0.005 (the run table still has the evaluation at
  initialization, a pure forward-pass check, and the one after the step): at most 5e-5 on
  losses and 6e-4 on parameters; tolerance ``rtol 2e-3`` (+ ``atol 1e-5``) on losses and
  ``1e-2`` on parameters (40x and 16x);
* ``float64`` (``vgg16x3``, 39 plain conv + BN layers: one perturbed ulp moves float32
  parameters by 1e-1 after one step, as tests/test_families.py found between float32
  implementations): trained in float64 on both sides, 2 steps at lr 0.005: 5e-10 measured,
  tolerance ``rtol 1e-7`` (200x);
* accuracies (argmax over 3 classes on 32 training / 16 test examples): at most one example
  per evaluation may change its prediction (``acc_flips``), since a logit tie broken
  differently in the last bit flips it;
* parameters and buffers are compared per tensor against its scale (its largest entry before
  or after training, at least :data:`PARAM_FLOOR`).

These are a first estimate: no GPU was available to this project, so no comparison has run on
CUDA yet.  The JSON gives each family's observed differences beside its tolerance, so a first
run shows how much margin there is.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from pathlib import Path

import torch

from sigprop.tools.json_out import jsonable

CPU = torch.device("cpu")
N_OUT = 3  # classes of the tiny comparison data
N_TRAIN, N_TEST = 32, 16  # examples of the tiny comparison data
REPO = Path(__file__).resolve().parents[2]
NO_CUDA = (
    "sigprop gpu-check: no CUDA device (torch.cuda.is_available() is False; torch {torch}, "
    "{build}); it needs one: run it on a GPU node, e.g. srun --gpus=1 sigprop gpu-check"
)


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """How close two devices' runs of one shard must be (see the module docstring)."""

    steps: int  # SGD steps trained on both sides
    lr: float
    loss_rtol: float  # losses: |a - b| <= loss_atol + loss_rtol |b|
    loss_atol: float
    param_rtol: float  # parameters and buffers: max |a - b| <= param_rtol max |b|, per tensor
    acc_flips: int = 1  # examples per evaluation whose prediction may differ
    precision: str = "float32"


TOLERANCES = {
    "shallow": Tolerance(steps=3, lr=0.01, loss_rtol=1e-4, loss_atol=1e-6, param_rtol=1e-4),
    "deep": Tolerance(steps=1, lr=0.005, loss_rtol=2e-3, loss_atol=1e-5, param_rtol=1e-2),
    "float64": Tolerance(
        steps=2, lr=0.005, loss_rtol=1e-7, loss_atol=1e-10, param_rtol=1e-7, precision="float64"
    ),
}

# arch -> (run fields, input shape, tolerance class): a tiny net of each family
_CONV = dict(width=2, activation="relu")
FAMILY_CASES = {
    "fc": (dict(width=16, depth=4, activation="tanh", keep_rate=0.9), (10,), "shallow"),
    "fc_loop": (dict(width=16, depth=3, activation="tanh"), (10,), "shallow"),
    "resnet_fc": (
        dict(width=16, depth=3, activation="relu", branch_depth=2, alpha=0.5),
        (10,),
        "shallow",
    ),
    "stable_resnet_fc": (
        dict(width=16, depth=3, activation="tanh", branch_depth=2),
        (2, 5),
        "shallow",
    ),
    "densenet_fc": (dict(width=8, depth=3, activation="relu"), (10,), "shallow"),
    "vcnn": (dict(width=4, depth=3, activation="tanh"), (1, 8, 8), "shallow"),
    "lenet": (dict(width=4, depth=2, activation="relu"), (1, 16, 16), "shallow"),
    "resnet18": (dict(_CONV, head_depth=1, head_width=5), (3, 8, 8), "deep"),
    "resnet32": (dict(_CONV), (3, 8, 8), "deep"),
    "stable_resnet32": (dict(_CONV), (3, 8, 8), "deep"),
    "resnet34": (dict(_CONV), (3, 8, 8), "deep"),
    "resnet50": (dict(_CONV), (3, 8, 8), "deep"),
    "stable_resnet50": (dict(_CONV), (3, 8, 8), "deep"),
    "resnet104": (dict(_CONV), (3, 8, 8), "deep"),
    "stable_resnet104": (dict(_CONV), (3, 8, 8), "deep"),
    "vgg16": (dict(_CONV), (3, 32, 32), "deep"),
    "vgg16x3": (dict(_CONV), (3, 32, 32), "float64"),
}
LOSSES = ("train_loss", "test_loss", "batch_loss")
ACCURACIES = {"train_acc": N_TRAIN, "test_acc": N_TEST}  # metric -> examples scored


# -- the comparison ----------------------------------------------------------------------------


def family_shard(arch: str, tol: Tolerance | None = None, models: int = 2):
    """The tiny shard of ``arch`` (:data:`FAMILY_CASES`): ``(shard, in_shape, tolerance)``;
    ``models`` runs with their own sigma_w2 and seed, evaluated at every step."""
    from sigprop.runs import RunSpec, Shard

    kw, in_shape, cls = FAMILY_CASES[arch]
    tol = tol or TOLERANCES[cls]
    runs = tuple(
        RunSpec(
            arch=arch,
            dataset="gpu_check",
            batch_size=8,
            steps=tol.steps,
            eval_every=1,
            lr=tol.lr,
            sigma_b2=0.05,
            sigma_w2=2.0 - 0.25 * i,
            seed=i,
            precision=tol.precision,
            **kw,
        )
        for i in range(models)
    )
    return Shard("gpu_check", runs), in_shape, tol


def tiny_data(in_shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0):
    """:data:`N_TRAIN` + :data:`N_TEST` Gaussian inputs on the CPU, labels cycling over
    :data:`N_OUT` classes (every class in every batch's reach)."""
    from sigprop.train.engine import Data

    g = torch.Generator(device=CPU).manual_seed(seed)
    n = N_TRAIN + N_TEST
    x = torch.randn((n,) + tuple(in_shape), generator=g, dtype=torch.float64, device=CPU)
    y = torch.arange(n, device=CPU) % N_OUT
    return Data(x[:N_TRAIN].to(dtype), y[:N_TRAIN], x[N_TRAIN:].to(dtype), y[N_TRAIN:], N_OUT)


def _train(shard, data, params, buffers, device: torch.device):
    """Train copies of ``params`` / ``buffers`` on ``device``: ``(run table, final parameters
    and buffers on the CPU in float64, seconds)``."""
    from sigprop.train.engine import ShardTrainer

    t0 = time.perf_counter()
    tr = ShardTrainer(
        shard, data, [p.clone() for p in params], device, buffers=[b.clone() for b in buffers]
    )
    df = tr.run(progress_every=math.inf)
    state = [t.detach().to(CPU, torch.float64) for t in list(tr.params) + list(tr.buffers)]
    return df, state, time.perf_counter() - t0


def close(a, b, rtol: float, atol: float) -> dict:
    """How far ``a`` is from the reference ``b`` (sequences of floats): ``max_abs``, ``max_rel``
    (``|a - b| / |b|``, ``|b|`` at least ``atol``) and ``worst`` = max of ``|a - b| / (atol +
    rtol |b|)``: within tolerance iff ``worst <= 1``.  Two NaNs are equal (a model diverged on
    both sides); a NaN on one side only is infinitely far."""
    a = torch.as_tensor(list(a), dtype=torch.float64)
    b = torch.as_tensor(list(b), dtype=torch.float64)
    if a.shape != b.shape:
        raise ValueError(f"close: {tuple(a.shape)} values against {tuple(b.shape)}")
    if a.numel() == 0:
        return {"n": 0, "max_abs": 0.0, "max_rel": 0.0, "worst": 0.0, "rtol": rtol, "atol": atol}
    both_nan = torch.isnan(a) & torch.isnan(b)
    d = torch.where(both_nan, torch.zeros_like(a), (a - b).abs())
    d = torch.where(torch.isnan(d), torch.full_like(d, math.inf), d)
    mag = torch.where(both_nan, torch.zeros_like(b), b.abs())
    tiny = torch.finfo(torch.float64).tiny
    zero = torch.zeros_like(d)
    rel = torch.where(d == 0, zero, d / mag.clamp_min(max(atol, tiny)))
    worst = torch.where(d == 0, zero, d / (atol + rtol * mag).clamp_min(tiny))
    return {
        "n": int(a.numel()),
        "max_abs": float(d.max()),
        "max_rel": float(rel.max()),
        "worst": float(worst.max()),
        "rtol": rtol,
        "atol": atol,
    }


def _rows(df) -> dict:
    return {
        (r, int(s), str(m)): float(v) for r, s, m, v in zip(df.run_id, df.step, df.metric, df.value)
    }


def compare_tables(df_a, df_b, tol: Tolerance) -> dict:
    """Losses and accuracies of two run tables of the same shard, row by row (run, step,
    metric): ``{"losses": close(...), "accuracies": {metric: close(...)}, "rows_match": bool,
    "others_equal": bool}`` (``others_equal``: the diverged / target steps agree exactly)."""
    ra, rb = _rows(df_a), _rows(df_b)
    keys = sorted(set(ra) & set(rb))
    out = {"rows_match": set(ra) == set(rb), "rows": len(keys)}
    lk = [k for k in keys if k[2] in LOSSES]
    out["losses"] = close([ra[k] for k in lk], [rb[k] for k in lk], tol.loss_rtol, tol.loss_atol)
    out["accuracies"] = {}
    for metric, n in ACCURACIES.items():
        ak = [k for k in keys if k[2] == metric]
        # one flipped prediction moves the accuracy by 1/n: allow acc_flips of them (+ rounding)
        c = close([ra[k] for k in ak], [rb[k] for k in ak], 0.0, tol.acc_flips / n + 1e-9)
        out["accuracies"][metric] = c
    # the rest (diverged_step, target_step): equal on both sides
    ok = [k for k in keys if k[2] not in LOSSES and k[2] not in ACCURACIES]
    out["others_equal"] = all(
        ra[k] == rb[k] or (math.isnan(ra[k]) and math.isnan(rb[k])) for k in ok
    )
    return out


PARAM_FLOOR = 1e-2
"""Smallest scale a parameter tensor is measured against: a zero-initialized bias or BatchNorm
shift is a few updates big after a few steps, and its relative error is the gradient's, which
cancellation makes large; measured against 1e-2 it is an error of the trained model."""


def compare_states(state_a, state_b, rtol: float, initial=None, floor: float = PARAM_FLOOR) -> dict:
    """Final parameters and buffers, tensor by tensor: ``max |a - b|`` over the tensor's scale,
    the largest entry of the reference ``b`` or of ``initial`` (the tensors before training, if
    given), at least ``floor``; ``worst`` is the largest of those over ``rtol`` (within
    tolerance iff ``worst <= 1``).  Two NaNs are equal, a NaN on one side is infinitely far."""
    if len(state_a) != len(state_b):
        raise ValueError(f"compare_states: {len(state_a)} tensors against {len(state_b)}")
    initial = list(initial) if initial is not None else [None] * len(state_b)
    rel, absd = [], []
    for a, b, b0 in zip(state_a, state_b, initial):
        if a.shape != b.shape:
            raise ValueError(f"compare_states: shapes {tuple(a.shape)} and {tuple(b.shape)}")
        d = (a - b).abs()
        d = torch.where(torch.isnan(a) & torch.isnan(b), torch.zeros_like(d), d)
        d = torch.where(torch.isnan(d), torch.full_like(d, math.inf), d)
        scale = floor
        for t in (b, b0):
            if t is not None and t.numel():
                scale = max(scale, float(torch.nan_to_num(t.abs().double(), nan=0.0).max()))
        m = float(d.max()) if d.numel() else 0.0
        absd.append(m)
        rel.append(m / scale)
    worst = max(rel, default=0.0)
    return {
        "tensors": len(rel),
        "max_abs": max(absd, default=0.0),
        "max_rel": worst,
        "worst": worst / rtol,
        "rtol": rtol,
        "floor": floor,
    }


def compare_family(
    arch: str,
    device_a: str | torch.device = "cpu",
    device_b: str | torch.device = "cuda",
    models: int = 2,
    tolerance: Tolerance | None = None,
    seed: int = 0,
) -> dict:
    """Train the tiny shard of ``arch`` (:func:`family_shard`) on ``device_a`` (the reference)
    and on ``device_b`` from the same initial weights (made once, on the CPU) and data, and
    compare the run tables' losses and accuracies and the final parameters and buffers with
    the family's tolerance (:data:`TOLERANCES`, or ``tolerance``).  ``passed`` is true when
    every comparison is within tolerance; ``failures`` names the others."""
    from sigprop.train.engine import initial_state, set_precision_policy

    shard, in_shape, tol = family_shard(arch, tolerance, models)
    dtype = set_precision_policy(tol.precision)
    params, buffers = initial_state(shard, in_shape, N_OUT, CPU, dtype)
    data = tiny_data(in_shape, dtype, seed)
    dev_a, dev_b = torch.device(device_a), torch.device(device_b)
    df_a, st_a, sec_a = _train(shard, data, params, buffers, dev_a)
    df_b, st_b, sec_b = _train(shard, data, params, buffers, dev_b)
    tables = compare_tables(df_b, df_a, tol)
    initial = [t.detach().to(CPU, torch.float64) for t in list(params) + list(buffers)]
    state = compare_states(st_b, st_a, tol.param_rtol, initial)
    failures = []
    if not tables["rows_match"]:
        failures.append("rows")
    if not tables["others_equal"]:
        failures.append("steps")
    if not tables["losses"]["worst"] <= 1:
        failures.append("losses")
    failures += [m for m, c in tables["accuracies"].items() if not c["worst"] <= 1]
    if not state["worst"] <= 1:
        failures.append("parameters")
    return {
        "arch": arch,
        "device_a": str(dev_a),
        "device_b": str(dev_b),
        "models": models,
        "in_shape": list(in_shape),
        "tolerance_class": FAMILY_CASES[arch][2],
        "tolerance": dataclasses.asdict(tol),
        "rows": tables["rows"],
        "losses": tables["losses"],
        "accuracies": tables["accuracies"],
        "parameters": state,
        "passed": not failures,
        "failures": failures,
        "seconds": {"a": sec_a, "b": sec_b},
    }


# -- a paper-scale shard, timed -----------------------------------------------------------------


def gpu_key(name: str | None) -> str | None:
    """The :data:`sigprop.tools.plan.GPUS` key of a CUDA device name (:func:`sigprop.sizing.gpu_of`)."""
    from sigprop.sizing import gpu_of

    return gpu_of(name)


TRAINING_STUDIES = (
    "trainable_depth",
    "training_speed",
    "pruning_eoc",
    "width_batch",
    "dropout_training",
    "pruning_resnet",
)
"""The studies that train: each one's costliest paper-scale shard is timed on the GPU."""


def _paper(config: str | Path | None, study: str):
    from sigprop.tools import plan as plan_module

    if config is None:
        config = REPO / "config" / "config.yaml"
        overrides = [f"studies_dir={REPO / 'config' / 'studies'}"]
    else:
        overrides = []
    if not Path(config).is_file():
        raise FileNotFoundError(f"{config}: no config file (run from a checkout of the workflow)")
    cfg, studies = plan_module.load(config, overrides + ["scale=paper", f"studies=[{study}]"])
    return studies[study], cfg["data"]["options"]


def paper_shard(
    config: str | Path | None = None, study: str = "trainable_depth", shard: str | None = None
):
    """A shard of ``study`` at ``scale=paper``, built as ``sigprop plan`` builds it: the one
    whose id is ``shard``, by default the first (for ``trainable_depth``: block (a), depth 10).
    Returns ``(shard, study, data options)``."""
    st, options = _paper(config, study)
    if shard is None:
        return st.shards[0], st, options
    for sh in st.shards:
        if sh.shard_id == shard:
            return sh, st, options
    raise KeyError(
        f"{study} at scale=paper has no shard {shard!r} "
        f"({len(st.shards)} shards: {st.shards[0].shard_id}, ...)"
    )


def costliest_shard(study: str, config: str | Path | None = None, candidates: int = 3) -> dict:
    """The shard of ``study`` at ``scale=paper`` with the most FLOPs in the plan
    (:func:`sigprop.tools.plan.shard_costs`).  Counting every shard's FLOPs on the meta device takes
    minutes for a grid of many shapes, so shards are first ranked by a count of their work
    that needs no tracing (models x steps x batch x parameters, :func:`sigprop.sizing.param_count`,
    for the families whose parameters are known without building them), and only the
    ``candidates`` highest of each block, plus every shard of the other families, are costed.
    Returns ``{"shard", "block", "flops", "costed"}``."""
    import types

    from sigprop.sizing import param_count
    from sigprop.tools import plan as plan_module

    st, options = _paper(config, study)
    best_in_block: dict = {}
    others = []
    for i, sh in enumerate(st.shards):
        r0 = sh.runs[0]
        in_shape, n_out, _, _ = plan_module.dataset_dims(r0.dataset, options)
        n = param_count(r0, in_shape, n_out)
        if n is None:
            others.append(i)
            continue
        work = len(sh.runs) * max(r.steps for r in sh.runs) * plan_module.shard_batch(sh) * n
        best_in_block.setdefault(st.labels[r0.run_id], []).append((work, i))
    pick = set(others)
    for rows in best_in_block.values():
        pick.update(i for _, i in sorted(rows, reverse=True)[:candidates])
    pick = sorted(pick)
    sub = types.SimpleNamespace(
        shards=[st.shards[i] for i in pick],
        labels=st.labels,
        task=st.task,
        eval_splits=st.eval_splits,
        kind=st.kind,
    )
    rows = plan_module.shard_costs(sub, options)
    k = max(range(len(rows)), key=lambda j: rows[j]["flops"])
    return {
        "shard": rows[k]["shard"],
        "block": rows[k]["block"],
        "flops": rows[k]["flops"],
        "costed": len(rows),
        "shards": len(st.shards),
    }


def projection(
    flops: float,
    seconds: float,
    gpu: str | None,
    precision: str = "float32",
    efficiency: float | None = None,
    gpus: dict | None = None,
) -> dict:
    """Measured against projected: the GFLOP/s achieved and, for a GPU of
    :data:`sigprop.tools.plan.GPUS`, the plan's projected seconds (FLOPs / (dense peak x
    efficiency)), measured / projected, and the implied efficiency (achieved / dense peak)."""
    from sigprop.tools import plan as plan_module

    gpus = gpus or plan_module.GPUS
    eff = plan_module.DEFAULT_EFFICIENCY if efficiency is None else efficiency
    rate = flops / seconds
    out = {
        "flops": flops,
        "seconds": seconds,
        "gflops": rate / 1e9,
        "gpu_key": gpu,
        "efficiency_assumed": eff,
    }
    if gpu is not None:
        peak = plan_module.dense_peak(gpus[gpu], precision)
        out["peak_tflops"] = peak / 1e12
        out["projected_s"] = flops / (peak * eff)
        out["measured_over_projected"] = seconds / out["projected_s"]
        out["implied_efficiency"] = rate / peak
    return out


def timed_shard(
    device: str | torch.device = "cuda",
    steps: int = 50,
    models: int | None = None,
    batch: int | None = None,
    warmup: int = 3,
    repeats: int = 3,
    efficiency: float | None = None,
    config: str | Path | None = None,
    study: str = "trainable_depth",
    shard: str | None = None,
    matmul_n: int | None = 2048,
    gpu_name: str | None = None,
    memory_fraction: float = 0.5,
) -> dict:
    """Time ``steps`` training steps (best of ``repeats``, after ``warmup``; no evaluation) of
    the paper-scale shard ``shard`` of ``study`` (:func:`paper_shard`; its first by default), its
    first ``models`` runs at batch ``batch`` (the shard's by default), on Gaussian inputs of the
    data set's shape, and compare with the plan's projection (:func:`projection`) for the GPU
    that ``torch.cuda.get_device_name`` (or ``gpu_name``) names, when :func:`gpu_key` finds it.
    ``models`` defaults to all the shard's runs, or on a CUDA device to as many as fit in
    ``memory_fraction`` of its memory by the plan's peak (a paper-scale shard can need more than
    one GPU has: ``fits`` says whether the whole shard does).  The FLOPs are the plan's
    (:func:`sigprop.tools.plan.shape_cost`, one model's step, times models and steps).
    ``full_shard`` gives the plan's FLOPs of the whole shard (all steps and evaluations), its
    projection and the time the measured rate extrapolates to.  ``matmul_n``: also measure a
    float32 ``n x n`` matmul's FLOP/s on the device (:func:`sigprop.tools.bench.matmul_peak`) and the
    shard's fraction of it; None skips it."""
    import types

    from sigprop.runs import Shard
    from sigprop.tools import bench
    from sigprop.tools import plan as plan_module
    from sigprop.train.engine import ShardTrainer, initial_state, set_precision_policy

    dev = torch.device(device)
    shard, st, options = paper_shard(config, study, shard)
    r0 = shard.runs[0]
    in_shape, n_out, _, _ = plan_module.dataset_dims(r0.dataset, options)
    cache = plan_module.StepCosts()
    full = plan_module.shard_costs(
        types.SimpleNamespace(
            shards=[shard], labels=st.labels, task=st.task, eval_splits=st.eval_splits, kind=st.kind
        ),
        options,
        cache,
    )[0]
    per_model = full["peak_bytes"] / len(shard.runs)
    capacity = None
    if dev.type == "cuda":
        capacity = torch.cuda.get_device_properties(dev).total_memory
    if models is None and capacity is not None:
        models = max(1, int(memory_fraction * capacity // per_model))
    m = min(models or len(shard.runs), len(shard.runs))
    b = batch or plan_module.shard_batch(shard)
    runs = tuple(
        dataclasses.replace(
            r,
            batch_size=b if batch else r.batch_size,
            micro_batch=0 if batch else r.micro_batch,
            steps=10**6,
            eval_every=10**6,
        )
        for r in shard.runs[:m]
    )
    cut = Shard(shard.study, runs)
    cost = cache.get(runs[0], in_shape, n_out, plan_module.shard_batch(cut))
    flops = m * cost.step_flops * steps
    dtype = set_precision_policy(r0.precision)
    data = bench.gaussian_data(
        max(4 * plan_module.shard_batch(cut), 256), in_shape, max(n_out, 2), dev
    )
    params, buffers = initial_state(cut, in_shape, n_out, dev, dtype)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    times = []
    for _ in range(max(1, repeats)):
        tr = None  # one trainer's state on the device at a time
        tr = ShardTrainer(cut, data, params, dev, buffers=buffers)
        for _ in range(warmup):
            tr.train_step()
        bench.sync_device(dev)
        t0 = time.perf_counter()
        for _ in range(steps):
            tr.train_step()
        bench.sync_device(dev)
        times.append(time.perf_counter() - t0)
    del tr
    name = gpu_name or (torch.cuda.get_device_name(dev) if dev.type == "cuda" else None)
    key = gpu_key(name)
    out = {
        "study": study,
        "scale": "paper",
        "shard": shard.shard_id,
        "block": st.labels[r0.run_id],
        "arch": r0.arch,
        "width": r0.width,
        "depth": r0.depth,
        "dataset": r0.dataset,
        "in_shape": list(in_shape),
        "precision": r0.precision,
        "models": m,
        "models_in_shard": len(shard.runs),
        "batch": plan_module.shard_batch(cut),
        "steps": steps,
        "warmup": warmup,
        "repeats": len(times),
        "times_s": times,
        "device": str(dev),
        "device_name": name,
        "step_flops_per_model": cost.step_flops,
        **projection(flops, min(times), key, r0.precision, efficiency),
    }
    eff = out["efficiency_assumed"]
    out["full_shard"] = {
        "models": len(shard.runs),
        "steps": full["steps"],
        "flops": full["flops"],
        "peak_gb": full["peak_bytes"] / 2**30,
        "fits": None if capacity is None else full["peak_bytes"] <= capacity,
        "device_memory_gb": None if capacity is None else capacity / 2**30,
        "extrapolated_s": full["flops"] / (flops / min(times)),
        "projected_s": {
            g: full["flops"] / (plan_module.dense_peak(spec, r0.precision) * eff)
            for g, spec in plan_module.GPUS.items()
        },
    }
    if dev.type == "cuda":
        out["max_memory_allocated_gb"] = torch.cuda.max_memory_allocated(dev) / 2**30
        out["planned_peak_gb_of_timed_models"] = per_model * m / 2**30
    if matmul_n:
        peak = bench.matmul_peak(dev, n=matmul_n)
        out["matmul_gflops"] = peak / 1e9
        out["matmul_n"] = matmul_n
        out["fraction_of_matmul"] = flops / min(times) / peak
    return out


# -- everything, one JSON ------------------------------------------------------------------------


def precision_flags() -> dict:
    """TF32 settings in force (after ``set_precision_policy("float32")`` both are off)."""
    flags = {
        "cuda_matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }
    flags["tf32_off"] = not (flags["cuda_matmul_allow_tf32"] or flags["cudnn_allow_tf32"])
    return flags


def write_json(result: dict, path: str | Path) -> Path:
    """``result`` as strict JSON (:func:`jsonable`), written atomically."""
    from sigprop import atomic

    return atomic.write_text(path, json.dumps(jsonable(result), indent=2, allow_nan=False) + "\n")


def run_all(
    device: str | torch.device = "cuda",
    out_json: str | Path | None = None,
    bench_repeats: int = 2,
    bench_cases: list[dict] | None = None,
    archs: list[str] | None = None,
    timed: dict | None = None,
    shards: dict | None = None,
    log=None,
) -> dict:
    """``sigprop bench shard`` (``bench_cases``, default its default cases, ``bench_repeats``
    repeats), :func:`compare_family` of every family (``archs``, default all) with the CPU as
    the reference and ``device`` as the other side, and :func:`timed_shard` (keyword
    arguments ``timed``) on ``device`` for each ``{study: shard id}`` of ``shards`` (default
    the first paper-scale shard of ``trainable_depth``; an id of None means the study's first
    shard); with the date, machine, commit and torch / CUDA / cuDNN versions, and the measured
    efficiencies (:func:`measured_efficiency`).  A part that raises is recorded as its error and
    the others still run.  ``passed``: every family within tolerance and no part failed.
    Written to ``out_json`` (:func:`write_json`) when given, after every part, so that a run
    cut short keeps what it measured.  ``log``: a callable given one line per finished part."""
    from sigprop.nets import families
    from sigprop.tools import bench
    from sigprop.train.engine import set_precision_policy

    log = log or (lambda line: None)
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(no_cuda_message())
    t0 = time.perf_counter()
    set_precision_policy("float32")
    cuda = dev.type == "cuda"
    out = {
        "command": "sigprop gpu-check",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "commit": bench.git_commit(),
        "machine": bench.machine(),
        "device": str(dev),
        "device_name": torch.cuda.get_device_name(dev) if cuda else None,
        "gpu_key": gpu_key(torch.cuda.get_device_name(dev)) if cuda else None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "precision": precision_flags(),
        "tolerances": {k: dataclasses.asdict(v) for k, v in TOLERANCES.items()},
        "errors": {},
        "families": {},
        "timed_shards": {},
    }

    def save():
        out["failed_families"] = sorted(a for a, r in out["families"].items() if not r["passed"])
        out["passed"] = not out["failed_families"] and not out["errors"]
        out["efficiency"] = measured_efficiency(out)
        out["seconds"] = time.perf_counter() - t0
        if out_json is not None:
            write_json(out, out_json)

    try:
        out["bench"] = bench.run(
            bench_cases or bench.default_cases(str(dev)), str(dev), bench_repeats
        )
        log(f"bench: {len(out['bench']['results'])} cases")
    except Exception as e:  # recorded; the comparisons still run
        out["errors"]["bench"] = f"{type(e).__name__}: {e}"
        log(f"bench: ERROR {out['errors']['bench']}")
    save()
    for arch in archs or sorted(families.FAMILIES):
        set_precision_policy("float32")
        try:
            out["families"][arch] = compare_family(arch, CPU, dev)
        except Exception as e:
            out["families"][arch] = {
                "arch": arch,
                "passed": False,
                "failures": ["error"],
                "error": f"{type(e).__name__}: {e}",
            }
        log(f"family {arch}: {'ok' if out['families'][arch]['passed'] else 'FAIL'}")
        save()
    for study, shard in (shards if shards is not None else {"trainable_depth": None}).items():
        set_precision_policy("float32")
        try:
            out["timed_shards"][study] = timed_shard(dev, study=study, shard=shard, **(timed or {}))
            t = out["timed_shards"][study]
            log(f"timed {study} {t['shard']}: {t['seconds']:.3g} s, {t['gflops']:.0f} GFLOP/s")
        except Exception as e:
            out["errors"][f"timed_shard[{study}]"] = f"{type(e).__name__}: {e}"
            log(f"timed {study}: ERROR {type(e).__name__}: {e}")
        if cuda:
            torch.cuda.empty_cache()
        save()
    return out


def measured_efficiency(result: dict) -> dict:
    """The efficiencies :func:`run_all` measured, as :mod:`sigprop.tools.plan` reads them
    (config/gpu_efficiency.yaml): per study, the timed shard's achieved FLOP/s over the GPU's
    dense peak for its precision; per family, that of the family's costliest timed shard (the
    one that dominates its cost).  A shard timed on a GPU that the plan did not know when the
    check ran gets its efficiency from its measured FLOPs and seconds now (:func:`projection`,
    the GPU found from the result's ``device_name``).  Empty when the device is no GPU of the
    plan."""
    key = result.get("gpu_key") or gpu_key(result.get("device_name"))
    by_study, by_family, flops = {}, {}, {}
    for study, t in (result.get("timed_shards") or {}).items():
        eff = t.get("implied_efficiency")
        if eff is None and key is not None and t.get("seconds"):
            eff = projection(t["flops"], t["seconds"], key, t.get("precision", "float32"))[
                "implied_efficiency"
            ]
        if eff is None:
            continue
        by_study[study] = eff
        full = t["full_shard"]["flops"]
        if full > flops.get(t["arch"], -1.0):
            flops[t["arch"]] = full
            by_family[t["arch"]] = eff
    return {"by_study": by_study, "by_family": by_family}


def summary(result: dict) -> str:
    """A few readable lines of :func:`run_all`'s result."""
    lines = [
        (
            f"sigprop gpu-check on {result['device']} "
            f"({result.get('device_name') or 'no GPU'}), torch {result['torch']}, CUDA "
            f"{result['cuda']}, TF32 off: {result['precision']['tf32_off']}"
        )
    ]
    for arch, r in result["families"].items():
        if "error" in r:
            lines.append(f"  {arch:18s} ERROR {r['error']}")
            continue
        lines.append(
            f"  {arch:18s} {'ok  ' if r['passed'] else 'FAIL'} losses rel "
            f"{r['losses']['max_rel']:.1e} (rtol {r['tolerance']['loss_rtol']:g}), "
            f"params rel {r['parameters']['max_rel']:.1e} "
            f"(rtol {r['tolerance']['param_rtol']:g})"
            + (f"  failed: {', '.join(r['failures'])}" if r["failures"] else "")
        )
    for t in (result.get("timed_shards") or {}).values():
        line = (
            f"  {t['study']} {t['block']} ({t['arch']}, {t['models']} models, batch "
            f"{t['batch']}, {t['steps']} steps): {t['seconds']:.3g} s, "
            f"{t['gflops']:.1f} GFLOP/s"
        )
        if "projected_s" in t:
            line += (
                f"; plan projects {t['projected_s']:.3g} s on {t['gpu_key']} (measured / "
                f"projected {t['measured_over_projected']:.2f}, efficiency "
                f"{t['implied_efficiency']:.3f})"
            )
        lines.append(line)
    for part, err in result.get("errors", {}).items():
        lines.append(f"  {part}: ERROR {err}")
    lines.append(
        "passed"
        if result["passed"]
        else f"FAILED: {', '.join(result['failed_families'] + list(result['errors']))}"
    )
    return "\n".join(lines) + "\n"


# -- the command ----------------------------------------------------------------------------------


def no_cuda_message() -> str:
    build = (
        f"built with CUDA {torch.version.cuda}"
        if torch.version.cuda
        else "a CPU-only build; a GPU node needs a CUDA build of torch"
    )
    return NO_CUDA.format(torch=torch.__version__, build=build)


RECORD_HEADER = """\
# GPU efficiencies measured by `sigprop gpu-check`, written by `sigprop gpu-check --record JSON`:
# per GPU of sigprop.tools.plan.GPUS, the fraction of its dense peak that the costliest paper-scale
# shard of each training study reached in timed training steps (by_study), and per family that
# of the family's costliest timed shard (by_family).  `sigprop plan` projects a shard with its
# study's value, else its family's, else the assumed 0.3.
"""


def recorded_entry(result: dict, source: str) -> dict:
    """The entry :func:`record` writes for a gpu-check result: the device, date, commit, torch
    and CUDA versions, ``source`` and the efficiencies (:func:`measured_efficiency`, rounded to
    4 digits)."""
    eff = measured_efficiency(result)
    return {
        "device": result.get("device_name"),
        "date": str(result.get("date", ""))[:10],
        "commit": result.get("commit"),
        "torch": result.get("torch"),
        "cuda": result.get("cuda"),
        "source": source,
        "by_study": {k: round(float(v), 4) for k, v in sorted(eff["by_study"].items())},
        "by_family": {k: round(float(v), 4) for k, v in sorted(eff["by_family"].items())},
    }


def record(
    json_path: str | Path, yaml_path: str | Path | None = None, source: str | None = None
) -> dict:
    """Write the efficiencies of a gpu-check JSON (:func:`measured_efficiency`) into
    ``yaml_path`` (:data:`sigprop.tools.plan.EFFICIENCY_FILE`) under its GPU's key, with the device,
    date, commit, torch and CUDA versions, ``source`` (the JSON's path as given) and the JSON's
    SHA-256 (``source_sha256``, which ``sigprop evidence check`` compares with the committed
    file): the entry written.  A JSON of a device that is no GPU of the plan, or with no timed shard, is a
    ValueError naming the file."""
    import yaml

    from sigprop import atomic
    from sigprop.data.fetch import sha256_file
    from sigprop.tools import plan as plan_module

    yaml_path = Path(yaml_path or plan_module.EFFICIENCY_FILE)
    result = json.loads(Path(json_path).read_text())
    gpu = result.get("gpu_key") or gpu_key(result.get("device_name"))
    if gpu not in plan_module.GPUS:
        raise ValueError(
            f"{json_path}: device {result.get('device_name')!r} is no GPU of "
            f"sigprop.tools.plan.GPUS ({sorted(plan_module.GPUS)}): nothing to record"
        )
    if not measured_efficiency(result)["by_study"]:
        raise ValueError(f"{json_path}: no timed shard with a projection: nothing to record")
    entry = recorded_entry(result, str(source or json_path))
    entry["source_sha256"] = sha256_file(json_path)
    data = plan_module.measured_efficiencies(yaml_path)
    data[gpu] = entry
    atomic.write_text(yaml_path, RECORD_HEADER + yaml.safe_dump(data, sort_keys=True))
    plan_module.measured_efficiencies(yaml_path)  # what was written reads back
    return entry


def main(args: dict) -> int:
    """``sigprop gpu-check [--out FILE] [--device cuda:N] [--shards ...] [--steps N]``: 1 without
    a usable CUDA device (a one-line message on stderr, nothing run), 3 when a comparison fails,
    else 0.  ``--record JSON`` writes a finished check's efficiencies (:func:`record`) and needs
    no GPU."""
    if args.get("record"):
        try:
            entry = record(args["record"])
        except (OSError, ValueError) as e:
            print(f"sigprop gpu-check --record: {e}", file=sys.stderr)
            return 2
        print(
            f"recorded {args['record']} ({entry['device']}, {entry['date']}) in "
            "config/gpu_efficiency.yaml",
            file=sys.stderr,
        )
        return 0
    try:
        parse_shards(args.get("shards"))
    except ValueError as e:
        print(f"sigprop gpu-check: {e}", file=sys.stderr)
        return 2
    device = args.get("device") or "cuda"
    if not torch.cuda.is_available():
        print(no_cuda_message(), file=sys.stderr)
        return 1
    dev = torch.device(device)
    if dev.type != "cuda":
        print(
            f"sigprop gpu-check: --device {device}: expected cuda or cuda:N (the CPU is the "
            "reference side of every comparison)",
            file=sys.stderr,
        )
        return 1
    n = torch.cuda.device_count()
    if dev.index is not None and dev.index >= n:
        print(
            f"sigprop gpu-check: --device {device}: only {n} CUDA device(s) visible",
            file=sys.stderr,
        )
        return 1
    out = args.get("out") or "gpu_check.json"
    shards = parse_shards(args.get("shards"))
    for study in TRAINING_STUDIES:
        if shards.get(study, "") == "":
            print(
                f"sigprop gpu-check: finding the costliest paper-scale shard of {study} ...",
                file=sys.stderr,
                flush=True,
            )
            shards[study] = costliest_shard(study)["shard"]
    result = run_all(
        dev,
        out,
        shards=shards,
        timed={"steps": int(args.get("steps") or 10)},
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    sys.stdout.write(summary(result))
    print(
        f"wrote {out}; its efficiencies go into config/gpu_efficiency.yaml with "
        f"sigprop gpu-check --record {out}",
        file=sys.stderr,
    )
    return 0 if result["passed"] else 3


def parse_shards(text: str | None) -> dict:
    """``--shards trainable_depth=s1234,pruning_eoc=s5678``: ``{study: shard id}``; a study
    named without an id (``pruning_eoc=``) gets its costliest shard."""
    out = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        study, _, shard = item.partition("=")
        if study not in TRAINING_STUDIES:
            raise ValueError(
                f"--shards {item!r}: {study!r} is not a training study "
                f"({', '.join(TRAINING_STUDIES)})"
            )
        out[study] = shard.strip()
    return out
