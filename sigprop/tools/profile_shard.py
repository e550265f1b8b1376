"""Where a training shard's step goes: ``sigprop bench profile STUDY [--shard ID]``.

Builds the study as the workflow does (:func:`sigprop.tools.plan.load`, so ``--config scale=paper``
works), draws the shard's initial weights, trains ``--warmup`` untimed steps and then
``--steps`` steps under ``torch.profiler``, and prints the step time, the host page faults per
step (the profiler's own allocations included: the trainable_depth shard s6bc70e1f5326 showed
5,000 to 11,000 a step profiled with freed memory kept; ``sigprop bench shard``, unprofiled,
counts 0 in every case) and the operators that took most of the self time, as
JSON.  Without ``--shard`` it takes the shard with the most FLOPs by :func:`sigprop.tools.plan.shard_costs` (the count ``sigprop plan``
prints: training steps and evaluations, from the operators' shapes).  The data set is
the prepared file the workflow writes (``results/data/<name>.npz``, ``snakemake
results/data/<name>.npz`` makes it).  It is a measuring tool, not a test: numbers in
docs/performance.md that come from it name the command.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from sigprop.data.prepare import load as load_dataset
from sigprop.train import devices, engine, host_memory


def _costliest(config: dict, study) -> str:
    """The id of ``study``'s shard with the most FLOPs (:func:`sigprop.tools.plan.shard_costs`)."""
    from sigprop.tools.plan import shard_costs

    rows = shard_costs(study, config["data"]["options"])
    return max(rows, key=lambda r: r["flops"])["shard"]


def shard_trainer(
    study: str,
    shard_id: str | None = None,
    config: list[str] | None = None,
    configfile: str = "config/config.yaml",
    device: str = "cpu",
    results: str | Path = "results",
    tool: str = "sigprop bench profile",
):
    """A :class:`ShardTrainer` of one dense shard of ``study`` (default: its costliest), built
    as the workflow builds it, with the study and the shard; ``tool`` names the command in
    errors."""
    from sigprop.tools.plan import load

    cfg, studies = load(configfile, config)
    if study not in studies:
        raise SystemExit(
            f"{tool}: no study '{study}' in {configfile} (studies: {', '.join(studies)})"
        )
    st = studies[study]
    if st.task != "train":
        raise SystemExit(f"{tool}: study '{study}' does not train (task '{st.task}')")
    shard = st.shard(shard_id or _costliest(cfg, st))
    r0 = shard.runs[0]
    data_path = Path(results) / "data" / f"{r0.dataset}.npz"
    if not data_path.exists():
        raise SystemExit(f"{tool}: {data_path} is missing; make it with `snakemake {data_path}`")
    if shard.pruned:
        raise SystemExit(
            f"{tool}: shard {shard.shard_id} has pruned runs; use a "
            "dense shard (the prune stage's masks are not drawn here)"
        )
    dev = devices.acquire(device)
    dtype = engine.set_precision_policy(r0.precision)
    ds = load_dataset(str(data_path))
    data = engine.to_data(ds, dev, dtype)
    in_shape, n_out = engine.data_dims(ds)
    params, buffers = engine.initial_state(shard, in_shape, n_out, dev, dtype)
    tr = engine.ShardTrainer(shard, data, params, dev, buffers=buffers, eval_splits=st.eval_splits)
    return tr, st, shard


def profile(
    study: str,
    shard_id: str | None = None,
    config: list[str] | None = None,
    configfile: str = "config/config.yaml",
    steps: int = 10,
    warmup: int = 3,
    threads: int = 1,
    device: str = "cpu",
    top: int = 12,
    results: str | Path = "results",
) -> dict:
    """Profile ``steps`` training steps of one shard of ``study``; see the module docstring."""
    torch.set_num_threads(threads)
    kept = host_memory.keep_freed_memory()
    tr, st, shard = shard_trainer(study, shard_id, config, configfile, device, results)
    r0, dev = shard.runs[0], tr.device
    for _ in range(warmup):
        tr.train_step()
    f0, t0 = host_memory.minor_faults(), time.perf_counter()
    with torch.profiler.profile() as prof:
        for _ in range(steps):
            tr.train_step()
    wall = (time.perf_counter() - t0) / steps
    faults = (host_memory.minor_faults() - f0) / steps
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events) or 1.0
    ops = sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]
    return {
        "study": study,
        "scale": st.scale,
        "shard": shard.shard_id,
        "models": len(shard.runs),
        "arch": r0.arch,
        "width": r0.width,
        "depth": r0.depth,
        "batch": r0.batch_size,
        "activation": r0.activation,
        "device": str(dev),
        "threads": torch.get_num_threads(),
        "keep_freed_memory": kept,
        "steps": steps,
        "step_ms_profiled": wall * 1e3,
        "page_faults_per_step": faults,
        "ops": [
            {
                "op": e.key,
                "self_fraction": e.self_cpu_time_total / total,
                "self_ms_per_step": e.self_cpu_time_total / 1e3 / steps,
                "calls_per_step": e.count / steps,
            }
            for e in ops
        ],
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
