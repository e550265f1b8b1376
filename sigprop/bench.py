"""Benchmark: one shard of M models against the same M models trained one after another.

The baseline is what sweep tools do inside one process: an ordinary
``nn.Module`` per trial with its own ``torch.optim`` optimizer, trained in a
loop.  Both sides train the same architecture on the same data for the same
steps; the JSON gives the wall time of each, their ratio, FLOP/s counted
analytically (forward + backward = 3 x the forward multiply-adds x 2), and on a
GPU the fraction of the device's float32 peak.  It is a benchmark, not a test:
run it with ``sigprop bench`` and record the output (docs/performance.md).
"""

from __future__ import annotations

import platform
import time

import torch
import torch.nn.functional as F

from .nets import families
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


def _fc_flops(d_in: int, width: int, depth: int, d_out: int, batch: int) -> float:
    macs = d_in * width + (depth - 1) * width * width + width * d_out
    return 6.0 * batch * macs  # forward 2*MACs, backward 4*MACs


def _data(n: int, d_in: int, classes: int, device: torch.device) -> Data:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, d_in, generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    return Data(x.to(device), y.to(device), x[:256].to(device), y[:256].to(device), classes)


def _loop_baseline(runs, params, data: Data, steps: int, batch: int, device) -> float:
    """Train each model as an nn.Sequential with torch.optim.SGD, one after another."""
    t_total = 0.0
    for m, run in enumerate(runs):
        layers = []
        n_lin = len(params) // 2
        for i in range(n_lin):
            w, b = params[2 * i][m], params[2 * i + 1][m]
            lin = torch.nn.Linear(w.shape[1], w.shape[0], device=device)
            with torch.no_grad():
                lin.weight.copy_(w)
                lin.bias.copy_(b.reshape(-1))
            layers.append(lin)
            if i < n_lin - 1:
                layers.append(torch.nn.Tanh())
        model = torch.nn.Sequential(*layers)
        opt = torch.optim.SGD(model.parameters(), lr=run.lr)
        x, y = data.x_train[:batch], data.y_train[:batch]
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
    return t_total


def bench_fc(width: int, models: int, depth: int = 20, batch: int = 128, steps: int = 20,
             d_in: int = 64, classes: int = 10, device: str = "auto") -> dict:
    """Shard vs loop for M fully connected tanh nets (float32, TF32 off)."""
    dev = devices.acquire(device)
    set_precision_policy("float32")
    runs = tuple(RunSpec(width=width, depth=depth, batch_size=batch, steps=steps, eval_every=steps,
                         lr=1e-3, sigma_w2=1.0 + 0.01 * i, dataset="bench") for i in range(models))
    shard = Shard("bench", runs)
    data = _data(max(batch * 4, 512), d_in, classes, dev)
    params, buffers = initial_state(shard, (d_in,), classes, dev, torch.float32)

    trainer = ShardTrainer(shard, data, params, dev, buffers=buffers)
    for _ in range(2):  # warm-up, untimed
        trainer.train_step()
    _sync(dev)
    t0 = time.perf_counter()
    for _ in range(steps):
        trainer.train_step()
    _sync(dev)
    t_shard = time.perf_counter() - t0
    t_loop = _loop_baseline(runs, params, data, steps, batch, dev)

    flops = _fc_flops(d_in, width, depth, classes, batch) * models * steps
    peak = _peak(dev)
    out = {"arch": "fc", "width": width, "depth": depth, "models": models, "batch": batch,
           "steps": steps, "device": str(dev), "shard_s": t_shard, "loop_s": t_loop,
           "speedup": t_loop / t_shard, "shard_tflops": flops / t_shard / 1e12,
           "loop_tflops": flops / t_loop / 1e12}
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
    return cases


def run(cases: list[dict] | None = None, device: str = "auto") -> dict:
    results = [bench_fc(device=device, **c) for c in (cases or default_cases(device))]
    return {"machine": machine(), "results": results, "families": sorted(families.FAMILIES)}
