"""Where a shard step's time goes on the GPU: wall per step, GPU kernel time per step,
kernels per step, host syncs per step, top kernels.  Two cases: trainable_depth's costliest
paper shard (deep, narrow) and bench's width-1024 case."""
import dataclasses, json, sys, time, warnings
import torch
from torch.profiler import profile, ProfilerActivity
from sigprop import gpu_check as G, plan as P, bench
from sigprop.runs import RunSpec, Shard
from sigprop.train.shard import ShardTrainer, initial_state, set_precision_policy

dev = torch.device(sys.argv[1] if len(sys.argv) > 1 else "cuda")
out = {}

def case_paper(study, shard, models=None):
    sh, st, options = G.paper_shard(study=study, shard=shard)
    r0 = sh.runs[0]
    in_shape, n_out, _, _ = P.dataset_dims(r0.dataset, options)
    runs = tuple(dataclasses.replace(r, steps=10**6, eval_every=10**6) for r in sh.runs[:models])
    cut = Shard(sh.study, runs)
    dtype = set_precision_policy(r0.precision)
    data = bench._data(max(4 * P._shard_batch(cut), 256), in_shape, max(n_out, 2), dev)
    params, buffers = initial_state(cut, in_shape, n_out, dev, dtype)
    return ShardTrainer(cut, data, params, dev, buffers=buffers)

def case_bench(width):
    set_precision_policy("float32")
    runs = tuple(RunSpec(arch="fc", width=width, depth=20, batch_size=128, steps=10**6, eval_every=10**6,
                         lr=1e-3, sigma_w2=1.0 + 0.01 * i, activation="tanh", dataset="bench") for i in range(64))
    sh = Shard("bench", runs)
    data = bench._data(512, (64,), 10, dev)
    params, buffers = initial_state(sh, (64,), 10, dev, torch.float32)
    return ShardTrainer(sh, data, params, dev, buffers=buffers)

def measure(name, tr, steps=10):
    for _ in range(3):
        tr.train_step()
    bench._sync(dev)
    t0 = time.perf_counter()
    for _ in range(steps):
        tr.train_step()
    bench._sync(dev)
    wall = (time.perf_counter() - t0) / steps
    # host syncs per step
    syncs = 0
    if dev.type == "cuda":
        torch.cuda.set_sync_debug_mode("warn")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            tr.train_step()
            bench._sync(dev)
        torch.cuda.set_sync_debug_mode(0)
        syncs = sum("synchroniz" in str(x.message) for x in w)
        where = sorted({str(x.filename) + ":" + str(x.lineno) for x in w})
    else:
        where = []
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    with profile(activities=acts) as prof:
        for _ in range(3):
            tr.train_step()
        bench._sync(dev)
    ev = prof.key_averages()
    if dev.type == "cuda":
        kern = [e for e in ev if e.device_type == torch.autograd.DeviceType.CUDA]
        gpu_us = sum(e.self_device_time_total for e in kern) / 3
        nk = sum(e.count for e in kern) / 3
        top = sorted(kern, key=lambda e: -e.self_device_time_total)[:12]
        top = [(e.key[:90], round(e.self_device_time_total / 3 / 1e3, 3), e.count // 3) for e in top]
    else:
        gpu_us, nk, top = 0, 0, []
    cpu_top = sorted(ev, key=lambda e: -e.self_cpu_time_total)[:10]
    r = {"wall_ms_per_step": wall * 1e3, "gpu_kernel_ms_per_step": gpu_us / 1e3,
         "gpu_busy_fraction": gpu_us / 1e6 / wall if wall else None, "kernels_per_step": nk,
         "host_syncs_per_step": syncs, "sync_sites": where[:8], "top_kernels_ms_per_step": top,
         "top_cpu_ops": [(e.key[:60], round(e.self_cpu_time_total / 3 / 1e3, 3), e.count // 3) for e in cpu_top]}
    out[name] = r
    print(name, json.dumps(r, indent=1), flush=True)

measure("trainable_depth_paper", case_paper("trainable_depth", "s11c2564206fa"))
torch.cuda.empty_cache() if dev.type == "cuda" else None
measure("pruning_eoc_paper", case_paper("pruning_eoc", "s65f5f189a64b"))
measure("bench_w1024", case_bench(1024))
measure("bench_w256", case_bench(256))
json.dump(out, open(sys.argv[2] if len(sys.argv) > 2 else "/tmp/probe.json", "w"), indent=1)
