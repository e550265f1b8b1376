"""Benchmark: one shard of M models against the same M models trained one after another.

The baseline is what sweep tools do inside one process: an ordinary
``nn.Module`` per trial (:mod:`sigprop.nets.reference`, holding the same
initial weights) with its own ``torch.optim`` optimizer, trained in a loop.
Both sides train the same architecture for the same steps and batch size; the
JSON gives the wall time of each, their ratio, FLOP/s (FLOPs of one step
counted from operator shapes by ``torch.utils.flop_counter``), and on a GPU the
fraction of the device's float32 peak.  It is a benchmark, not a test:
run it with ``sigprop bench`` and record the output (docs/performance.md).

:func:`dag_bench` (``sigprop bench-dag``) times the other kind of scale: a grid
of 10,000 runs expanded into shards and its Snakemake DAG built (``-n``), with
the job count per rule (one training job per shard, not per run).

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132; 004 = Chen,
Wang, Zhao, Papailiopoulos, Koutris (2018), arXiv:1806.03791.
"""

from __future__ import annotations

import platform
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from .nets import families, reference
from .runs import RunSpec, Shard
from .train import devices
from .train.shard import Data, ShardTrainer, initial_state, set_precision_policy

# dense float32 peaks (TFLOP/s, no TF32) of GPUs we may meet; None when unknown
FP32_PEAK_TFLOPS = {"H100": 66.9, "H200": 66.9, "A100": 19.5, "V100": 15.7}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    for k, v in FP32_PEAK_TFLOPS.items():
        if k in name:
            return v * 1e12
    return None


def _data(n: int, in_shape: tuple[int, ...], classes: int, device: torch.device) -> Data:
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


def _loop_baseline(arch, runs, in_shape, n_out, params, buffers, data: Data, steps: int,
                   batch: int, device) -> tuple[float, float]:
    """Train each model as a plain nn.Module with torch.optim.SGD, one after another.

    Returns (seconds, FLOPs of one model's step)."""
    t_total, flops = 0.0, 0.0
    x, y = data.x_train[:batch], data.y_train[:batch]
    for m, run in enumerate(runs):
        model = reference.from_stacked(arch, run, in_shape, n_out, params, buffers, m).to(device)
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=run.lr)
        if m == 0:
            flops = _step_flops(model, x, y)
        for _ in range(2):  # warm-up, untimed
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(steps):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        _sync(device)
        t_total += time.perf_counter() - t0
    return t_total, flops


def bench_case(arch: str = "fc", width: int = 32, models: int = 64, depth: int = 20,
               batch: int = 128, steps: int = 20, in_shape: tuple[int, ...] = (64,),
               classes: int = 10, activation: str = "tanh", device: str = "auto") -> dict:
    """Shard vs loop for M models of one architecture (float32, TF32 off)."""
    dev = devices.acquire(device)
    set_precision_policy("float32")
    runs = tuple(RunSpec(arch=arch, width=width, depth=depth, batch_size=batch, steps=steps,
                         eval_every=steps, lr=1e-3, sigma_w2=1.0 + 0.01 * i, activation=activation,
                         dataset="bench") for i in range(models))
    shard = Shard("bench", runs)
    data = _data(max(batch * 4, 256), in_shape, classes, dev)
    params, buffers = initial_state(shard, in_shape, classes, dev, torch.float32)

    trainer = ShardTrainer(shard, data, params, dev, buffers=buffers)
    for _ in range(2):  # warm-up, untimed
        trainer.train_step()
    _sync(dev)
    t0 = time.perf_counter()
    for _ in range(steps):
        trainer.train_step()
    _sync(dev)
    t_shard = time.perf_counter() - t0
    t_loop, step_flops = _loop_baseline(arch, runs, in_shape, classes, params, buffers, data,
                                        steps, batch, dev)
    flops = step_flops * models * steps
    peak = _peak(dev)
    out = {"arch": arch, "width": width, "depth": depth, "models": models, "batch": batch,
           "steps": steps, "in_shape": list(in_shape), "device": str(dev), "shard_s": t_shard,
           "loop_s": t_loop, "speedup": t_loop / t_shard, "flops_per_model_step": step_flops,
           "shard_tflops": flops / t_shard / 1e12, "loop_tflops": flops / t_loop / 1e12}
    if peak:
        out["shard_peak_fraction"] = flops / t_shard / peak
    return out


def machine() -> dict:
    info = {"torch": torch.__version__, "python": platform.python_version(),
            "cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def default_cases(device: str = "auto") -> list[dict]:
    """The issue's cases; on a CPU the width-1024 case uses fewer models and steps."""
    gpu = torch.cuda.is_available() and device != "cpu"
    cases = [dict(width=32, models=64), dict(width=256, models=64)]
    cases.append(dict(width=1024, models=64) if gpu else dict(width=1024, models=4, steps=3))
    resnet = dict(arch="resnet32", width=16, depth=1, activation="relu", in_shape=(3, 32, 32))
    cases.append(dict(resnet, models=16, batch=128, steps=5) if gpu else
                 dict(resnet, width=8, models=8, batch=32, steps=3))
    return cases


def run(cases: list[dict] | None = None, device: str = "auto") -> dict:
    results = [bench_case(device=device, **c) for c in (cases or default_cases(device))]
    return {"machine": machine(), "results": results, "families": sorted(families.FAMILIES)}


# -- scale: a big grid's DAG ---------------------------------------------------------------

SNAKEFILE = Path(__file__).resolve().parents[1] / "workflow" / "Snakefile"


def grid_study(n_runs: int, steps: int = 300) -> dict:
    """A trainable-depth study (000 Fig. 7 shape: fc tanh nets on digits) whose quick and paper
    grids both have exactly ``n_runs`` runs, all of one shape: ``k`` values of sigma_w2 (the
    largest divisor of ``n_runs`` up to 100) times ``n_runs / k`` seeds."""
    if n_runs < 1:
        raise ValueError(f"n_runs must be >= 1, got {n_runs}")
    k = max(d for d in range(1, min(n_runs, 100) + 1) if n_runs % d == 0)
    fixed = {"arch": "fc", "dataset": "digits", "width": 64, "depth": 8, "activation": "tanh",
             "sigma_b2": 0.05, "keep_rate": 1.0, "init": "gaussian", "optimizer": "sgd",
             "lr": 0.01, "batch_size": 32, "steps": steps, "eval_every": steps}
    grid = {"sigma_w2": [round(1.0 + 3.0 * i / max(k - 1, 1), 6) for i in range(k)],
            "seed": list(range(n_runs // k))}
    scale = {"blocks": [{"fixed": fixed, "grid": grid}]}
    return {"name": "trainable_depth", "paper": "000", "kind": "trainable_depth",
            "title": f"DAG benchmark: {n_runs} runs",
            "theory": {"activation": "tanh", "sigma_b2": 0.05, "sigma_w2_range": [1.0, 4.0],
                       "points": 31},
            "analysis": {"metric": "train_acc"}, "scales": {"quick": scale, "paper": scale}}


def write_grid_config(workdir: Path, n_runs: int, shard_size: int = 64) -> Path:
    """Write ``config.yaml`` and ``studies/trainable_depth.yaml`` (:func:`grid_study`) into
    ``workdir``; return the config file."""
    import yaml
    workdir = Path(workdir)
    sdir = workdir / "studies"
    sdir.mkdir(parents=True, exist_ok=True)
    (sdir / "trainable_depth.yaml").write_text(yaml.safe_dump(grid_study(n_runs), sort_keys=False))
    cfg = {"studies": ["trainable_depth"], "studies_dir": str(sdir), "shard_size": shard_size,
           "device": "cpu"}
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def job_counts(snakemake_output: str) -> dict[str, int]:
    """``{rule: jobs}`` from the 'Job stats' table Snakemake prints (dry run or run)."""
    import re
    m = re.search(r"^Job stats:\s*\n.*?\n-+\s+-+\s*\n(.*?)^total\s+(\d+)", snakemake_output,
                  re.DOTALL | re.MULTILINE)
    if m is None:
        raise ValueError("no 'Job stats' table in the Snakemake output")
    out = {}
    for line in m.group(1).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    out["total"] = int(m.group(2))
    return out


def dag_bench(n_runs: int = 10_000, shard_size: int = 64, workdir: str | Path | None = None,
              dry_run: bool = True, snakefile: str | Path | None = None,
              cores: int = 2) -> dict:
    """Time a big grid: the config expansion alone (schema validation, grid expansion, checks,
    sharding: what the Snakefile does before rules exist) and ``snakemake -n`` (DAG built,
    nothing run), and count the DAG's jobs per rule.  The study is :func:`grid_study`."""
    import subprocess
    import sys
    import tempfile

    import yaml
    from snakemake.utils import validate

    from .config import build_study

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
        out = {"runs": len(st.runs), "shards": len(st.shards), "shard_size": shard_size,
               "expand_s": expand_s, "machine": machine()}
        if dry_run:
            if not snakefile.is_file():
                raise FileNotFoundError(f"{snakefile}: no Snakefile; pass snakefile=")
            cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile),
                   "--directory", str(work), "--configfile", str(cfg_path), "--cores", str(cores),
                   "-n"]
            t0 = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, check=False)
            out["dry_run_s"] = time.perf_counter() - t0
            if p.returncode != 0:
                raise RuntimeError(f"snakemake -n failed ({p.returncode}):\n{p.stderr[-3000:]}")
            out["jobs"] = job_counts(p.stdout + p.stderr)
    return out


# ---------------------------------------------------------------------------- batch-size sweeps
def sweep_bench(batches=(8, 16, 32, 64, 128, 256, 512), models_per_batch: int = 10,
                width: int = 36, depth: int = 2, epochs: float = 2.0, n: int = 1344,
                micro: int | None = None, device: str = "auto", padded: bool = True,
                repeats: int = 3) -> dict:
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
    data = _data(n, (64,), 10, dev)

    def runs(mb: int, steps_of) -> list[RunSpec]:
        return [RunSpec(arch="fc", dataset="bench", width=width, depth=depth, activation="relu",
                        sigma_w2=2.0, sigma_b2=0.0, lr=0.01 * (1 + i), batch_size=b, micro_batch=mb,
                        steps=steps_of(b), eval_every=steps_of(b), seed=i)
                for b in batches for i in range(models_per_batch)]

    def timed(shard_runs: list[RunSpec]) -> float:
        shard = Shard("bench_sweep", tuple(shard_runs))
        params, buffers = initial_state(shard, (64,), 10, dev, torch.float32)
        best = float("inf")
        for _ in range(max(1, repeats)):
            tr = ShardTrainer(shard, data, [p.clone() for p in params], dev,
                              buffers=[b.clone() for b in buffers])
            _sync(dev)
            t0 = time.perf_counter()
            tr.run(progress_every=1e9)
            _sync(dev)
            best = min(best, time.perf_counter() - t0)
        return best

    micro_steps = int(round(epochs * (n // c)))
    out = {"machine": machine(), "batches": list(batches), "models": len(batches) * models_per_batch,
           "repeats": repeats,
           "width": width, "depth": depth, "epochs": epochs, "n_train": n, "micro_batch": c}
    out["micro_s"] = timed(runs(c, lambda b: micro_steps))
    per = [timed([r for r in runs(0, lambda b: max(1, int(round(epochs * (n // b)))))
                  if r.batch_size == b]) for b in batches]
    out["per_batch_s"] = sum(per)
    out["per_batch_jobs"] = len(batches)
    if padded:
        out["padded_s"] = timed(runs(0, lambda b: int(round(epochs * (n // min(batches))))))
    out["speedup_vs_per_batch"] = out["per_batch_s"] / out["micro_s"]
    if padded:
        out["speedup_vs_padded"] = out["padded_s"] / out["micro_s"]
    return out
