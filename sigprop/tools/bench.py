"""Benchmark: one shard of M models against the same M models trained one after another.

The baseline is what sweep tools do inside one process: an ordinary
``nn.Module`` per trial (:mod:`sigprop.nets.reference`, holding the same
initial weights) with its own ``torch.optim`` optimizer, trained in a loop.
Both sides train the same architecture for the same steps and batch size; the
JSON gives the wall time of each, their ratio, FLOP/s (FLOPs of one step
counted from operator shapes by ``torch.utils.flop_counter``), and on a GPU the
fraction of the device's float32 peak.  It is a benchmark, not a test:
run it with ``sigprop bench shard`` and record the output (docs/performance.md).

:func:`dag_bench` (``sigprop bench dag``) times the other kind of scale: a grid
of 10,000 runs expanded into shards and its Snakemake DAG built (``-n``), with
the job count per rule (one training job per shard, not per run).

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132; 004 = Chen,
Wang, Zhao, Papailiopoulos, Koutris (2018), arXiv:1806.03791.
"""

from __future__ import annotations

import copy
import platform
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from sigprop.nets import families, reference
from sigprop.runs import RunSpec, Shard
from sigprop.train import devices, host_memory
from sigprop.train.engine import Data, ShardTrainer, initial_state, set_precision_policy


# dense float32 peaks (TFLOP/s, no TF32) of GPUs we may meet; None when unknown
def sync_device(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak(device: torch.device) -> float | None:
    """The vendor's dense float32 peak of a GPU of :data:`sigprop.tools.plan.GPUS`, else None."""
    if device.type != "cuda":
        return None
    from sigprop.sizing import GPUS, dense_peak, gpu_of

    key = gpu_of(torch.cuda.get_device_name(device))
    return None if key is None else dense_peak(GPUS[key], "float32")


def matmul_peak(device: torch.device, n: int = 2048, repeats: int = 5) -> float:
    """FLOP/s of one float32 ``n x n`` matmul on ``device`` with the current threads, best of
    ``repeats``: the machine's attainable dense peak, measured on the spot (TF32 off)."""
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        sync_device(device)
        t0 = time.perf_counter()
        torch.mm(a, b)
        sync_device(device)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n**3 / best


def gaussian_data(n: int, in_shape: tuple[int, ...], classes: int, device: torch.device) -> Data:
    g = torch.Generator().manual_seed(0)
    x = torch.randn((n,) + tuple(in_shape), generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    return Data(x.to(device), y.to(device), x[:64].to(device), y[:64].to(device), classes)


def _step_flops(module: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """FLOPs of one forward + backward pass, counted from the operator shapes."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        F.cross_entropy(module(x), y).backward()
    module.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())


def fc_step_flops(d_in: int, width: int, depth: int, n_out: int, batch: int) -> float:
    """FLOPs of one forward + backward pass of a fully connected net, counted analytically: per
    affine layer ``2 B in out`` forward and twice that backward (input and weight gradients;
    the first layer has no input gradient), as ``torch.utils.flop_counter`` counts them."""
    dims = [d_in] + [width] * depth + [n_out]
    total = 0.0
    for layer, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        total += 2 * batch * a * b * (2 if layer == 0 else 3)
    return total


# -- the four ways to train M fully connected nets, each one step function ---------------


def _shard_step(shard, data, params, buffers, device):
    trainer = ShardTrainer(shard, data, params, device, buffers=buffers)
    return trainer.train_step


def _loop_steps(arch, runs, in_shape, n_out, params, buffers, data, batch, device):
    """What a sweep tool does in one process: an ``nn.Module`` and a ``torch.optim.SGD`` per
    model, trained one after another (the step trains every model once)."""
    x, y = data.x_train[:batch], data.y_train[:batch]
    models, opts = [], []
    for m, run in enumerate(runs):
        model = reference.from_stacked(arch, run, in_shape, n_out, params, buffers, m).to(device)
        model.train()
        models.append(model)
        opts.append(torch.optim.SGD(model.parameters(), lr=run.lr))

    def step():
        for model, opt in zip(models, opts):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

    return step, models[0], x, y


def _func_steps(models, x, y, lr):
    """PyTorch's model-ensembling recipe (``torch.func.stack_module_state`` +
    ``functional_call`` + ``vmap``) over the same modules, in its two usual forms: autograd
    through the vmapped forward with ``torch.optim.SGD`` on the stacked parameters, and
    ``vmap(grad(loss))`` with a foreach update."""
    from torch.func import functional_call, grad, stack_module_state, vmap

    base = copy.deepcopy(models[0]).to("meta")
    m = len(models)

    def loss_one(p, b, x, y):
        return F.cross_entropy(functional_call(base, (p, b), (x,)), y)

    ps, bs = stack_module_state(models)
    p1 = {k: v.detach().clone().requires_grad_(True) for k, v in ps.items()}
    opt = torch.optim.SGD(list(p1.values()), lr=lr)
    fwd = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))

    def vmap_optim():
        opt.zero_grad(set_to_none=True)
        logits = fwd(p1, bs, x)
        # the mean loss of each model, summed: each model's gradient is its own mean loss's
        F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.repeat(m), reduction="sum").div(
            x.shape[0]
        ).backward()
        opt.step()

    p2 = {k: v.detach().clone() for k, v in ps.items()}
    g = vmap(grad(loss_one), in_dims=(0, 0, None, None))
    names = list(p2)

    def vmap_grad():
        gs = g(p2, bs, x, y)
        torch._foreach_add_([p2[k] for k in names], [gs[k] for k in names], alpha=-lr)

    return {"func_vmap_optim": vmap_optim, "func_vmap_grad": vmap_grad}


def _minimal_step(d_in, width, depth, n_out, models, x, y, lr, activation, device):
    """A minimal hand-written stacked MLP: weights ``[M, in, out]``, ``baddbmm`` per layer, one
    foreach SGD update; no per-model rates, no divergence handling, no schedules."""
    from sigprop.nets import activations

    phi = activations.get(activation)
    dims = [d_in] + [width] * depth + [n_out]
    g = torch.Generator().manual_seed(1)
    ws = [
        (torch.randn(models, a, b, generator=g) / a**0.5).to(device).requires_grad_(True)
        for a, b in zip(dims[:-1], dims[1:])
    ]
    bs = [torch.zeros(models, 1, b, device=device, requires_grad=True) for b in dims[1:]]
    params = [t for pair in zip(ws, bs) for t in pair]
    xx = x.reshape(x.shape[0], -1).unsqueeze(0).expand(models, x.shape[0], d_in)
    yy = y.repeat(models)

    def step():
        h = xx
        for i, (w, b) in enumerate(zip(ws, bs)):
            h = torch.baddbmm(b, h, w)
            if i < len(ws) - 1:
                h = phi(h)
        loss = F.cross_entropy(h.reshape(-1, n_out), yy, reduction="sum") / x.shape[0]
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            torch._foreach_add_(params, list(grads), alpha=-lr)

    return step


def _time(steps_fn, steps: int, device) -> float:
    for _ in range(2):  # warm-up, untimed
        steps_fn()
    sync_device(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        steps_fn()
    sync_device(device)
    return time.perf_counter() - t0


def bench_case(
    arch: str = "fc",
    width: int = 32,
    models: int = 64,
    depth: int = 20,
    batch: int = 128,
    steps: int = 20,
    in_shape: tuple[int, ...] = (64,),
    classes: int = 10,
    activation: str = "tanh",
    device: str = "auto",
    repeats: int = 3,
    peak: float | None = None,
    baselines: tuple[str, ...] = ("loop", "func", "minimal"),
) -> dict:
    """One shard of M models against the same models trained one by one (``loop``), by
    PyTorch's ensembling recipe (``func``: the faster of vmap + optim and vmap(grad)), and by a
    minimal stacked step (``minimal``, fully connected nets only); float32, TF32 off.

    Each way is timed ``repeats`` times, interleaved (shard, loop, func, minimal, shard, ...),
    and the fastest is kept; ``*_spread`` is (slowest - fastest) / fastest.  FLOPs of a step
    are counted from operator shapes; ``*_gflops`` and ``*_peak_fraction`` relate the fastest
    time to the float32 matmul peak measured on the spot (:func:`matmul_peak`).
    ``*_page_faults_per_step``: the host's minor page faults per step of the way's quietest
    repeat (warm-up included); ``keep_freed_memory``: whether glibc kept freed memory
    (:mod:`sigprop.train.host_memory`), as it does for every way here and in the workflow's
    jobs."""
    dev = devices.acquire(device)
    set_precision_policy("float32")
    # glibc keeps freed memory for every way alike, as in the workflow's jobs
    # (sigprop.train.host_memory): the page faults it avoids were ~15 % of a wide step
    kept = host_memory.keep_freed_memory()
    runs = tuple(
        RunSpec(
            arch=arch,
            width=width,
            depth=depth,
            batch_size=batch,
            steps=steps,
            eval_every=steps,
            lr=1e-3,
            sigma_w2=1.0 + 0.01 * i,
            activation=activation,
            dataset="bench",
        )
        for i in range(models)
    )
    shard = Shard("bench", runs)
    data = gaussian_data(max(batch * 4, 256), in_shape, classes, dev)
    params, buffers = initial_state(shard, in_shape, classes, dev, torch.float32)
    ways = {"shard": _shard_step(shard, data, params, buffers, dev)}
    loop, model0, x, y = _loop_steps(
        arch, runs, in_shape, classes, params, buffers, data, batch, dev
    )
    step_flops = _step_flops(model0, x, y)
    if "loop" in baselines:
        ways["loop"] = loop
    if "func" in baselines:
        mods = [
            reference.from_stacked(arch, r, in_shape, classes, params, buffers, m).to(dev)
            for m, r in enumerate(runs)
        ]
        ways.update(_func_steps(mods, x, y, runs[0].lr))
    if "minimal" in baselines and arch == "fc":
        d_in = 1
        for s_ in in_shape:
            d_in *= int(s_)
        ways["minimal"] = _minimal_step(
            d_in, width, depth, classes, models, x, y, runs[0].lr, activation, dev
        )
    times: dict[str, list[float]] = {k: [] for k in ways}
    faults: dict[str, list[float]] = {k: [] for k in ways}  # host minor page faults a step
    for _ in range(repeats):
        for name, fn in ways.items():
            f0 = host_memory.minor_faults()
            times[name].append(_time(fn, steps, dev))
            faults[name].append((host_memory.minor_faults() - f0) / (steps + 2))
    flops = step_flops * models * steps
    peak = peak or _peak(dev) or matmul_peak(dev)
    out = {
        "arch": arch,
        "activation": activation,
        "width": width,
        "depth": depth,
        "models": models,
        "batch": batch,
        "steps": steps,
        "in_shape": list(in_shape),
        "device": str(dev),
        "repeats": repeats,
        "flops_per_model_step": step_flops,
        "matmul_peak_gflops": peak / 1e9,
        "keep_freed_memory": kept,
        # THP_MEM_ALLOC_ENABLE=1 in the environment (PyTorch's huge pages, off by default)
        "huge_pages": host_memory.huge_pages_requested(),
        "thp_mode": host_memory.thp_mode(),
    }
    for name, ts in times.items():
        out[f"{name}_s"] = min(ts)
        out[f"{name}_spread"] = (max(ts) - min(ts)) / min(ts)
        out[f"{name}_gflops"] = flops / min(ts) / 1e9
        out[f"{name}_peak_fraction"] = flops / min(ts) / peak
        out[f"{name}_page_faults_per_step"] = min(faults[name])
    if "func_vmap_optim_s" in out:
        best = min(("func_vmap_optim", "func_vmap_grad"), key=lambda k: out[f"{k}_s"])
        out["func_best"] = best
        out["func_s"] = out[f"{best}_s"]
    out["speedup"] = out.get("loop_s", float("nan")) / out["shard_s"]  # vs the loop
    if "func_s" in out:
        out["speedup_vs_func"] = out["func_s"] / out["shard_s"]
    if "minimal_s" in out:
        out["fraction_of_minimal"] = out["minimal_s"] / out["shard_s"]
    return out


def machine() -> dict:
    info = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "threads": torch.get_num_threads(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu_model"] = next(
                ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")
            )
    except (OSError, StopIteration):
        pass
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


# the cases of the engine's targets (docs/performance.md): fully connected nets, M = 64,
# depth 20, SGD, 20 steps, widths 32 and 256, batches 32 and 128, tanh and relu
ISSUE_CASES = [
    dict(activation=a, width=w, batch=b)
    for w in (32, 256)
    for b in (128, 32)
    for a in ("tanh", "relu")
]


# a convolutional shard (grouped convolutions over the model axis) against the loop and
# torch.func: small enough for a CPU (``sigprop bench shard --arch resnet32``)
CONV_CASE = dict(
    arch="resnet32",
    width=8,
    depth=1,
    models=8,
    batch=32,
    steps=3,
    in_shape=(3, 32, 32),
    activation="relu",
)


# on a GPU: the wider nets a GPU is for (64 models, depth 20, batch 128)
GPU_CASES = [
    dict(activation=a, width=w, batch=128) for w in (256, 512, 1024) for a in ("tanh", "relu")
]


def default_cases(device: str = "auto") -> list[dict]:
    """The eight fully connected cases of :data:`ISSUE_CASES` on the CPU; on a CUDA device the
    six of :data:`GPU_CASES` (widths 256 to 1024)."""
    cases = GPU_CASES if str(device).startswith("cuda") else ISSUE_CASES
    return [dict(c) for c in cases]


def run(cases: list[dict] | None = None, device: str = "auto", repeats: int = 3) -> dict:
    """Every case of ``cases`` (default :func:`default_cases`), with the commit and date."""
    dev = devices.acquire(device)
    peak = matmul_peak(dev)
    results = [
        bench_case(device=device, repeats=repeats, peak=peak, **c)
        for c in (cases or default_cases(device))
    ]
    return {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "commit": git_commit(),
        "matmul_peak_gflops": peak / 1e9,
        "results": results,
        "families": sorted(families.FAMILIES),
    }


def git_commit() -> str:
    """The checkout's commit (``git rev-parse --short HEAD``); where the tree travels without
    its ``.git`` (a copy sent to a GPU node), ``SIGPROP_COMMIT`` names it; else "unknown"."""
    import os
    import subprocess

    if os.environ.get("SIGPROP_COMMIT"):
        return os.environ["SIGPROP_COMMIT"]
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                cwd=Path(__file__).resolve().parent,
                timeout=10,
            ).stdout.strip()
            or "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# -- scale: a big grid's DAG ---------------------------------------------------------------

SNAKEFILE = Path(__file__).resolve().parents[2] / "workflow" / "Snakefile"


def grid_study(n_runs: int, steps: int = 300) -> dict:
    """A trainable-depth study (000 Fig. 7 shape: fc tanh nets on digits) whose quick and paper
    grids both have exactly ``n_runs`` runs, all of one shape: ``k`` values of sigma_w2 (the
    largest divisor of ``n_runs`` up to 100) times ``n_runs / k`` seeds."""
    if n_runs < 1:
        raise ValueError(f"n_runs must be >= 1, got {n_runs}")
    k = max(d for d in range(1, min(n_runs, 100) + 1) if n_runs % d == 0)
    fixed = {
        "arch": "fc",
        "dataset": "digits",
        "width": 64,
        "depth": 8,
        "activation": "tanh",
        "sigma_b2": 0.05,
        "keep_rate": 1.0,
        "init": "gaussian",
        "optimizer": "sgd",
        "lr": 0.01,
        "batch_size": 32,
        "steps": steps,
        "eval_every": steps,
    }
    grid = {
        "sigma_w2": [round(1.0 + 3.0 * i / max(k - 1, 1), 6) for i in range(k)],
        "seed": list(range(n_runs // k)),
    }
    scale = {"blocks": [{"fixed": fixed, "grid": grid}]}
    return {
        "name": "trainable_depth",
        "paper": "000",
        "kind": "trainable_depth",
        "title": f"DAG benchmark: {n_runs} runs",
        "design": {"fixed": "2026-11-21"},
        "theory": {
            "activation": "tanh",
            "sigma_b2": 0.05,
            "sigma_w2_range": [1.0, 4.0],
            "points": 31,
        },
        "analysis": {"metric": "train_acc"},
        "scales": {"quick": scale, "paper": scale},
    }


def write_grid_config(workdir: Path, n_runs: int, shard_size: int = 64) -> Path:
    """Write ``config.yaml`` and ``studies/trainable_depth.yaml`` (:func:`grid_study`) into
    ``workdir``; return the config file."""
    import yaml

    workdir = Path(workdir)
    sdir = workdir / "studies"
    sdir.mkdir(parents=True, exist_ok=True)
    (sdir / "trainable_depth.yaml").write_text(yaml.safe_dump(grid_study(n_runs), sort_keys=False))
    cfg = {
        "studies": ["trainable_depth"],
        "studies_dir": str(sdir),
        "shard_size": shard_size,
        "device": "cpu",
    }
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def job_counts(snakemake_output: str) -> dict[str, int]:
    """``{rule: jobs}`` from the 'Job stats' table Snakemake prints (dry run or run)."""
    import re

    m = re.search(
        r"^Job stats:\s*\n.*?\n-+\s+-+\s*\n(.*?)^total\s+(\d+)",
        snakemake_output,
        re.DOTALL | re.MULTILINE,
    )
    if m is None:
        raise ValueError("no 'Job stats' table in the Snakemake output")
    out = {}
    for line in m.group(1).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    out["total"] = int(m.group(2))
    return out


def dag_bench(
    n_runs: int = 10_000,
    shard_size: int = 64,
    workdir: str | Path | None = None,
    dry_run: bool = True,
    snakefile: str | Path | None = None,
    cores: int = 2,
) -> dict:
    """Time a big grid: the config expansion alone (schema validation, grid expansion, checks,
    sharding: what the Snakefile does before rules exist) and ``snakemake -n`` (DAG built,
    nothing run), and count the DAG's jobs per rule.  The study is :func:`grid_study`."""
    import subprocess
    import sys
    import tempfile

    import yaml
    from snakemake.utils import validate

    from sigprop.config import build_study

    snakefile = Path(snakefile) if snakefile else SNAKEFILE
    with tempfile.TemporaryDirectory(prefix="sigprop_dag_") as tmp:
        work = Path(workdir) if workdir else Path(tmp)
        cfg_path = write_grid_config(work, n_runs, shard_size)
        study_path = work / "studies" / "trainable_depth.yaml"
        t0 = time.perf_counter()
        study_cfg = yaml.safe_load(study_path.read_text())
        validate(study_cfg, str(snakefile.parent / "schemas" / "study.schema.yaml"))
        st = build_study("trainable_depth", study_path, study_cfg, "quick", shard_size)
        expand_s = time.perf_counter() - t0
        out = {
            "runs": len(st.runs),
            "shards": len(st.shards),
            "shard_size": shard_size,
            "expand_s": expand_s,
            "machine": machine(),
        }
        if dry_run:
            if not snakefile.is_file():
                raise FileNotFoundError(f"{snakefile}: no Snakefile; pass snakefile=")
            cmd = [
                sys.executable,
                "-m",
                "snakemake",
                "--snakefile",
                str(snakefile),
                "--directory",
                str(work),
                "--configfile",
                str(cfg_path),
                "--cores",
                str(cores),
                "-n",
            ]
            t0 = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, check=False)
            out["dry_run_s"] = time.perf_counter() - t0
            if p.returncode != 0:
                raise RuntimeError(f"snakemake -n failed ({p.returncode}):\n{p.stderr[-3000:]}")
            out["jobs"] = job_counts(p.stdout + p.stderr)
    return out


# ---------------------------------------------------------------------------- batch-size sweeps
def sweep_bench(
    batches=(8, 16, 32, 64, 128, 256, 512),
    models_per_batch: int = 10,
    width: int = 36,
    depth: int = 2,
    epochs: float = 2.0,
    n: int = 1344,
    micro: int | None = None,
    device: str = "auto",
    padded: bool = True,
    repeats: int = 3,
) -> dict:
    """A batch-size sweep (004 Sec. 5) trained three ways for the same epochs per model, timed:

    * ``micro``: one shard, every model takes ``micro`` (default: the smallest batch) examples
      per step and steps SGD every b / micro steps (``RunSpec.micro_batch``);
    * ``per_batch``: one shard per batch size, each trained for its own step count (the
      layout without micro-batching: as many jobs as batch sizes);
    * ``padded``: one shard of all batch sizes padded to the largest, for the step count of
      the smallest batch (what the engine does without ``micro_batch``; its larger batches then
      run more epochs than asked, so it is the cost of that layout, not an equal-work one).

    ``models_per_batch`` models (learning rates / seeds) per batch size; fc ReLU nets on
    Gaussian data with 10 classes.  Job start-up (a few seconds per job) is not included, so the
    per-batch layout's real cost in a workflow is higher by that much per extra job.  Each
    layout is timed ``repeats`` times and the fastest is reported (CPU timings on a shared
    machine vary by 2x from run to run).
    """
    dev = devices.acquire(device)
    set_precision_policy("float32")
    c = int(micro or min(batches))
    data = gaussian_data(n, (64,), 10, dev)

    def runs(mb: int, steps_of) -> list[RunSpec]:
        return [
            RunSpec(
                arch="fc",
                dataset="bench",
                width=width,
                depth=depth,
                activation="relu",
                sigma_w2=2.0,
                sigma_b2=0.0,
                lr=0.01 * (1 + i),
                batch_size=b,
                micro_batch=mb,
                steps=steps_of(b),
                eval_every=steps_of(b),
                seed=i,
            )
            for b in batches
            for i in range(models_per_batch)
        ]

    def timed(shard_runs: list[RunSpec]) -> list[float]:
        shard = Shard("bench_sweep", tuple(shard_runs))
        params, buffers = initial_state(shard, (64,), 10, dev, torch.float32)
        times = []
        for _ in range(max(1, repeats)):
            tr = ShardTrainer(
                shard, data, [p.clone() for p in params], dev, buffers=[b.clone() for b in buffers]
            )
            sync_device(dev)
            t0 = time.perf_counter()
            tr.run(progress_every=1e9)
            sync_device(dev)
            times.append(time.perf_counter() - t0)
        return times

    def record(name: str, times: list[float]) -> None:
        out[f"{name}_s"] = min(times)
        out[f"{name}_spread"] = (max(times) - min(times)) / min(times)

    micro_steps = int(round(epochs * (n // c)))
    out = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "commit": git_commit(),
        "batches": list(batches),
        "models": len(batches) * models_per_batch,
        "repeats": repeats,
        "width": width,
        "depth": depth,
        "epochs": epochs,
        "n_train": n,
        "micro_batch": c,
    }
    record("micro", timed(runs(c, lambda b: micro_steps)))
    per = [
        timed(
            [
                r
                for r in runs(0, lambda b: max(1, int(round(epochs * (n // b)))))
                if r.batch_size == b
            ]
        )
        for b in batches
    ]
    # each batch size's fastest, summed; the spread of the sums over repeats
    record("per_batch", [sum(t[i] for t in per) for i in range(len(per[0]))])
    out["per_batch_s"] = sum(min(t) for t in per)
    out["per_batch_jobs"] = len(batches)
    if padded:
        record("padded", timed(runs(0, lambda b: int(round(epochs * (n // min(batches)))))))
    out["speedup_vs_per_batch"] = out["per_batch_s"] / out["micro_s"]
    if padded:
        out["speedup_vs_padded"] = out["padded_s"] / out["micro_s"]
    return out
