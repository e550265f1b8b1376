"""The heavy workflow steps as plain functions (scripts/ only parse arguments)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from . import tables
from .data.prepare import load as load_dataset
from .runs import Shard
from .train import devices
from .train import shard as engine

log = logging.getLogger("sigprop.steps")


GPU_LOCK_DIR = "results/.gpu_locks"


def _setup(device: str, threads: int | None) -> torch.device:
    if threads:
        torch.set_num_threads(int(threads))
    dev = devices.acquire(device, lock_dir=GPU_LOCK_DIR)
    log.info("device %s, torch %s, %d threads", dev, torch.__version__, torch.get_num_threads())
    return dev


def _dims(ds) -> tuple[tuple[int, ...], int]:
    n_classes = int(ds.meta.get("n_classes") or int(ds.y_train.max()) + 1)
    return tuple(ds.x_train.shape[1:]), n_classes


def init_shard(shard_json: str, data_path: str, out: str, device: str = "auto",
               threads: int | None = None) -> None:
    """Draw every model's initial parameters (on the GPU when there is one) and save them."""
    dev = _setup(device, threads)
    shard = Shard.from_json(shard_json)
    ds = load_dataset(data_path)
    in_shape, n_out = _dims(ds)
    dtype = engine.set_precision_policy(shard.runs[0].precision)
    t0 = time.time()
    params, buffers = engine.initial_state(shard, in_shape, n_out, dev, dtype)
    engine.save_state(params, buffers, shard, Path(out))
    log.info("shard %s: %d models, %d parameters each, initialized in %.2fs",
             shard.shard_id, len(shard.runs), sum(p[0].numel() for p in params), time.time() - t0)


def train_shard(shard_json: str, init_path: str, data_path: str, out: str,
                checkpoint: str | None = None, checkpoint_every: int = 0,
                device: str = "auto", threads: int | None = None) -> None:
    """Train a shard and write its long-format run table; remove the checkpoint after."""
    dev = _setup(device, threads)
    shard = Shard.from_json(shard_json)
    dtype = engine.set_precision_policy(shard.runs[0].precision)
    data = engine.to_data(load_dataset(data_path), dev, dtype)
    params, buffers = engine.load_state(Path(init_path), shard)
    t0 = time.time()
    trainer = engine.ShardTrainer(shard, data, params, dev, buffers=buffers,
                                  checkpoint=Path(checkpoint) if checkpoint else None,
                                  checkpoint_every=checkpoint_every)
    df = trainer.run()
    tables.write_atomic(df, out)
    log.info("shard %s: %d models x %d steps in %.1fs; %d diverged; %d rows",
             shard.shard_id, len(shard.runs), shard.runs[0].steps, time.time() - t0,
             sum(s >= 0 for s in trainer.diverged_step), len(df))
    if checkpoint and Path(checkpoint).exists():
        Path(checkpoint).unlink()


def measure_shard(kind: str, shard_json: str, init_path: str, out: str, cfg: dict,
                  device: str = "auto", threads: int | None = None,
                  data_path: str | None = None) -> None:
    """Run a measurement study's ``measure`` on a shard's initialized models.

    ``cfg["data_path"]`` is the shard's prepared data set (``results/data/<name>.npz``)
    for studies whose measurement reads data (e.g. 002's trained networks)."""
    if data_path is not None:
        cfg = {**cfg, "data_path": str(data_path)}
    from . import studies
    dev = _setup(device, threads)
    shard = Shard.from_json(shard_json)
    engine.set_precision_policy(shard.runs[0].precision)
    params, buffers = engine.load_state(Path(init_path), shard)
    params = [p.to(dev) for p in params]
    buffers = [b.to(dev) for b in buffers]
    t0 = time.time()
    df = studies.get(kind).measure(shard, params, buffers, cfg, device=dev.type)
    tables.write_atomic(df, out)
    log.info("shard %s: %d models measured in %.1fs; %d rows", shard.shard_id, len(shard.runs),
             time.time() - t0, len(df))
