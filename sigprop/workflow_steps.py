"""The heavy workflow steps as plain functions (scripts/ only parse arguments)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pandas as pd
import torch

from . import tables
from .data.prepare import load as load_dataset
from .nets import families
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
    return tuple(ds.x_train.shape[1:]), engine.n_outputs(ds)


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


# -- the prune stage (003 Hayou et al.) ------------------------------------------

PRUNE_GROUP = ("pruner", "sparsity", "prune_scope", "prune_rounds", "prune_batch", "dataset", "seed")


def prune_groups(shard: Shard) -> dict[tuple, list[int]]:
    """Model indices of the pruned runs, grouped by what :func:`sigprop.prune.compute_masks`
    takes as one call: pruner, sparsity, scope, rounds and the scoring batch (data set, seed,
    examples per class).  Dense runs are in no group."""
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(shard.runs):
        if r.pruner:
            groups.setdefault(tuple(getattr(r, f) for f in PRUNE_GROUP), []).append(i)
    return groups


def shard_masks(shard: Shard, params: list[torch.Tensor], buffers: list[torch.Tensor],
                x_train: torch.Tensor, y_train: torch.Tensor) -> list[torch.Tensor | None]:
    """Masks of every model of a shard, aligned with ``params``: ``None`` for parameters no
    pruner touches, else ``[M, ...]`` bool (all ones for the shard's dense models).

    Each group of :func:`prune_groups` is one :func:`sigprop.prune.compute_masks` call on its
    models' slices of the parameters and a class-balanced scoring batch of ``prune_batch``
    examples per class (003 Sec. 2.1; the authors' ``GraSP_fetch_data``) drawn with the runs'
    :attr:`~sigprop.runs.RunSpec.prune_data_key`; data-agnostic pruners (random, magnitude,
    SynFlow) get the same batch and ignore its values.  A run's mask is therefore a function
    of its initial weights, its pruning fields and the training data, whatever shard it is in.
    """
    from . import prune
    r0 = shard.runs[0]
    family = families.get(r0.arch)
    flags = prune.prunable(r0.arch, params)
    M = len(shard.runs)
    out: list[torch.Tensor | None] = [None] * len(params)
    for idx in prune_groups(shard).values():
        run = shard.runs[idx[0]]
        ix = torch.tensor(idx, device=params[0].device)
        x, y = prune.class_balanced_batch(x_train, y_train, run.prune_batch, run.prune_data_key)
        x = x.unsqueeze(0).expand(len(idx), *x.shape)  # the group's models share the batch
        y = y.unsqueeze(0).expand(len(idx), *y.shape)
        keys = torch.tensor([shard.runs[i].key for i in idx], device=params[0].device,
                            dtype=torch.int64)
        sub = prune.compute_masks(run.pruner, family, [shard.runs[i] for i in idx],
                                  [p[ix] for p in params], [b[ix] for b in buffers], x, y,
                                  run.sparsity, scope=run.prune_scope, rounds=run.prune_rounds,
                                  keys=keys)
        for j, m in enumerate(sub):
            if m is None:
                continue
            if not flags[j]:
                raise ValueError(f"pruner {run.pruner} masked parameter {j}, which "
                                 f"sigprop.prune.prunable says is not prunable for {r0.arch}")
            if out[j] is None:
                out[j] = torch.ones((M,) + tuple(params[j].shape[1:]), dtype=torch.bool,
                                    device=params[j].device)
            out[j][ix] = m.to(out[j].device) != 0
        log.info("shard %s: %s at sparsity %g (%s) for %d model(s)", shard.shard_id, run.pruner,
                 run.sparsity, run.prune_scope, len(idx))
    return out


def start_params(shard: Shard, params: list[torch.Tensor],
                 masks: list[torch.Tensor | None]) -> list[torch.Tensor]:
    """The pruned networks' starting weights: ``δ ∘ W``, and ``ρ ∘ δ ∘ W`` (003 Eq. 6, the
    rescaling trick of Prop. 1 / Alg. 1) for the models with ``prune_rescale``.

    ``ρ`` is Alg. 1's per-neuron factor in its variance-preserving form
    (:func:`sigprop.prune.rescale` with each run's ``sigma_w2``): every neuron's kept fan-in
    again has the unpruned ``E[sum_j W_ij^2] = sigma_w2``, "the new variance after re-scaling
    is sigma_w2" of the proof of Prop. 1, so a net initialized on the EOC is put back on it.
    The rescaling is applied once to the initial weights, which then train freely.  It is a
    deterministic function of the initial weights and the masks, so it is recomputed where
    the weights are loaded rather than stored as a second copy of the weights."""
    from . import prune
    params = [p if m is None else p * m.to(p.dtype) for p, m in zip(params, masks)]
    idx = [i for i, r in enumerate(shard.runs) if r.pruner and r.prune_rescale]
    if not idx:
        return params
    ix = torch.tensor(idx, device=params[0].device)
    sub = prune.rescale(shard.runs[0].arch, [p[ix] for p in params],
                        [None if m is None else m[ix] for m in masks],
                        sigma_w2=[shard.runs[i].sigma_w2 for i in idx], per="neuron")
    out = []
    for p, q in zip(params, sub):
        p = p.clone()
        p[ix] = q.to(p.dtype)
        out.append(p)
    return out


def mask_report(shard: Shard, masks: list, flags: list[bool]) -> pd.DataFrame:
    """Per pruned model and prunable layer: ``n_weights``, ``n_kept``, ``kept_fraction``,
    ``collapsed`` (:func:`sigprop.prune.layer_report`; 003 Figs. 1-2, 4 plot the kept fraction),
    with the study, shard, run id and the run's pruning fields as columns."""
    from . import prune
    rep = prune.layer_report(masks, flags)
    runs = pd.DataFrame([{"model": i, "run_id": r.run_id, "arch": r.arch, "depth": r.depth,
                          "width": r.width, "seed": r.seed, "pruner": r.pruner,
                          "sparsity": r.sparsity, "prune_scope": r.prune_scope,
                          "prune_rescale": r.prune_rescale}
                         for i, r in enumerate(shard.runs) if r.pruner])
    rep = rep.merge(runs, on="model", how="inner")
    rep.insert(0, "study", shard.study)
    rep.insert(1, "shard_id", shard.shard_id)
    return rep.reset_index(drop=True)


def prune_shard(shard_json: str, init_path: str, data_path: str, out_masks: str,
                out_report: str, device: str = "auto", threads: int | None = None) -> None:
    """The prune stage: masks of a shard's pruned models from their initial weights (003 Sec. 2),
    saved with :func:`sigprop.train.shard.save_masks`, and the per-layer report as Parquet.

    The weights are in the runs' parameter dtype, never under autocast; the pruners score one
    model at a time in that dtype (:data:`sigprop.prune.SCORE_DTYPE`), so a model's mask does not
    depend on its shard (SynFlow scores in float64).  The masks are stored, so
    training uses exactly these masks whatever device it runs on.  When a run asks for the
    rescaling trick it is computed here once, so an architecture the trick does not cover
    fails in this stage rather than in training."""
    dev = _setup(device, threads)
    shard = Shard.from_json(shard_json)
    if not shard.pruned:
        raise ValueError(f"shard {shard.shard_id} has no pruned run; it needs no prune job")
    dtype = engine.set_precision_policy(shard.runs[0].precision)
    data = engine.to_data(load_dataset(data_path), dev, dtype)
    params, buffers = engine.load_state(Path(init_path), shard)
    params = [p.to(dev, dtype) for p in params]
    buffers = [b.to(dev) for b in buffers]
    t0 = time.time()
    from . import prune
    masks = shard_masks(shard, params, buffers, data.x_train, data.y_train)
    start_params(shard, params, masks)  # fails here if the rescaling trick does not apply
    report = mask_report(shard, [None if m is None else m.cpu() for m in masks],
                         prune.prunable(shard.runs[0].arch, params))
    engine.save_masks(masks, shard, Path(out_masks))
    tables.write_atomic(report, out_report)
    log.info("shard %s: masks of %d/%d models in %.2fs", shard.shard_id,
             sum(bool(r.pruner) for r in shard.runs), len(shard.runs), time.time() - t0)


def train_shard(shard_json: str, init_path: str, data_path: str, out: str,
                checkpoint: str | None = None, checkpoint_every: int = 0,
                device: str = "auto", threads: int | None = None,
                masks_path: str | None = None) -> None:
    """Train a shard and write its long-format run table; remove the checkpoint after.

    A shard with pruned runs reads the prune stage's masks (``masks_path``, by default
    :attr:`~sigprop.runs.Shard.masks_path` under the working directory, the file the rule
    declares as an input, so the prune job runs first; ``scripts/train_shard.py`` need not
    pass it, and Snakemake reruns every job whose output is older than its script): its models
    start from :func:`start_params` and keep their masked weights at zero."""
    dev = _setup(device, threads)
    shard = Shard.from_json(shard_json)
    dtype = engine.set_precision_policy(shard.runs[0].precision)
    ds = load_dataset(data_path)
    if ds.meta.get("task") == "regression":
        raise ValueError(f"{data_path}: '{ds.meta.get('name')}' is a regression data set; the "
                         "shard trainer trains classifiers (cross-entropy): use a study with "
                         "TASK 'measure' for regression (e.g. diversity_linear)")
    data = engine.to_data(ds, dev, dtype)
    params, buffers = engine.load_state(Path(init_path), shard)
    masks = None
    if shard.pruned:
        masks = engine.load_masks(Path(masks_path or shard.masks_path), shard)
        params = start_params(shard, params, masks)
    elif masks_path:
        raise ValueError(f"shard {shard.shard_id} has no pruned run but got masks {masks_path}")
    t0 = time.time()
    trainer = engine.ShardTrainer(shard, data, params, dev, buffers=buffers,
                                  checkpoint=Path(checkpoint) if checkpoint else None,
                                  checkpoint_every=checkpoint_every, masks=masks)
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
    for studies whose measurement reads data (e.g. 002's trained networks);
    ``cfg["masks_path"]`` the prune stage's masks of a shard with pruned runs."""
    if data_path is not None:
        cfg = {**cfg, "data_path": str(data_path)}
    shard0 = Shard.from_json(shard_json)
    if shard0.pruned:   # the prune stage's masks (rules/prune.smk), as train_shard reads them
        cfg = {**cfg, "masks_path": shard0.masks_path}
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
