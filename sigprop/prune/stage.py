"""The prune stage's shard-level steps (Hayou, Ton, Doucet, Teh 2021, "Robust pruning at
initialization", arXiv:2002.08797): the masks of a shard's pruned models, their rescaled
starting weights and the per-layer report.  Used by ``rules/prune.smk`` (through
:mod:`sigprop.steps.shards`), the shard trainer and the pruning studies."""

from __future__ import annotations

import logging

import pandas as pd
import torch

from .. import prune
from ..nets import families
from ..runs import Shard

log = logging.getLogger("sigprop.prune")


PRUNE_GROUP = (
    "pruner",
    "sparsity",
    "prune_scope",
    "prune_rounds",
    "prune_batch",
    "prune_max",
    "dataset",
    "seed",
)


def prune_groups(shard: Shard) -> dict[tuple, list[int]]:
    """Model indices of the pruned runs, grouped by what :func:`sigprop.prune.compute_masks`
    takes as one call: pruner, sparsity, scope, rounds and the scoring batch (data set, seed,
    examples per class).  Dense runs are in no group."""
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(shard.runs):
        if r.pruner:
            groups.setdefault(tuple(getattr(r, f) for f in PRUNE_GROUP), []).append(i)
    return groups


def shard_masks(
    shard: Shard,
    params: list[torch.Tensor],
    buffers: list[torch.Tensor],
    x_train: torch.Tensor,
    y_train: torch.Tensor,
) -> list[torch.Tensor | None]:
    """Masks of every model of a shard, aligned with ``params``: ``None`` for parameters no
    pruner touches, else ``[M, ...]`` bool (all ones for the shard's dense models).

    Each group of :func:`prune_groups` is one :func:`sigprop.prune.compute_masks` call on its
    models' slices of the parameters and a class-balanced scoring batch of ``prune_batch``
    examples per class (003 Sec. 2.1; the authors' ``GraSP_fetch_data``) drawn with the runs'
    :attr:`~sigprop.runs.RunSpec.prune_data_key` (its first ``prune_max`` examples when that is
    set: the smoke run's cap); data-agnostic pruners (random, magnitude,
    SynFlow) get the same batch and ignore its values.  A run's mask is therefore a function
    of its initial weights, its pruning fields and the training data, whatever shard it is in.
    """
    r0 = shard.runs[0]
    family = families.get(r0.arch)
    flags = prune.prunable(r0.arch, params)
    M = len(shard.runs)
    out: list[torch.Tensor | None] = [None] * len(params)
    for idx in prune_groups(shard).values():
        run = shard.runs[idx[0]]
        ix = torch.tensor(idx, device=params[0].device)
        x, y = prune.class_balanced_batch(x_train, y_train, run.prune_batch, run.prune_data_key)
        if run.prune_max:  # grouped by class: the first classes' examples
            x, y = x[: run.prune_max], y[: run.prune_max]
        x = x.unsqueeze(0).expand(len(idx), *x.shape)  # the group's models share the batch
        y = y.unsqueeze(0).expand(len(idx), *y.shape)
        keys = torch.tensor(
            [shard.runs[i].key for i in idx], device=params[0].device, dtype=torch.int64
        )
        sub = prune.compute_masks(
            run.pruner,
            family,
            [shard.runs[i] for i in idx],
            [p[ix] for p in params],
            [b[ix] for b in buffers],
            x,
            y,
            run.sparsity,
            scope=run.prune_scope,
            rounds=run.prune_rounds,
            keys=keys,
        )
        for j, m in enumerate(sub):
            if m is None:
                continue
            if not flags[j]:
                raise ValueError(
                    f"pruner {run.pruner} masked parameter {j}, which "
                    f"sigprop.prune.prunable says is not prunable for {r0.arch}"
                )
            if out[j] is None:
                out[j] = torch.ones(
                    (M,) + tuple(params[j].shape[1:]), dtype=torch.bool, device=params[j].device
                )
            out[j][ix] = m.to(out[j].device) != 0
        log.info(
            "shard %s: %s at sparsity %g (%s) for %d model(s)",
            shard.shard_id,
            run.pruner,
            run.sparsity,
            run.prune_scope,
            len(idx),
        )
    return out


def start_params(
    shard: Shard, params: list[torch.Tensor], masks: list[torch.Tensor | None]
) -> list[torch.Tensor]:
    """The pruned networks' starting weights: ``δ ∘ W``, and ``ρ ∘ δ ∘ W`` (003 Eq. 6, the
    rescaling trick of Prop. 1 / Alg. 1) for the models with ``prune_rescale``.

    ``ρ`` is Alg. 1's per-neuron factor in its variance-preserving form
    (:func:`sigprop.prune.rescale` with each run's ``sigma_w2``): every neuron's kept fan-in
    again has the unpruned ``E[sum_j W_ij^2] = sigma_w2``, "the new variance after re-scaling
    is sigma_w2" of the proof of Prop. 1, so a net initialized on the EOC is put back on it.
    The rescaling is applied once to the initial weights, which then train freely.  It is a
    deterministic function of the initial weights and the masks, so it is recomputed where
    the weights are loaded rather than stored as a second copy of the weights."""
    params = [p if m is None else p * m.to(p.dtype) for p, m in zip(params, masks)]
    idx = [i for i, r in enumerate(shard.runs) if r.pruner and r.prune_rescale]
    if not idx:
        return params
    ix = torch.tensor(idx, device=params[0].device)
    sub = prune.rescale(
        shard.runs[0].arch,
        [p[ix] for p in params],
        [None if m is None else m[ix] for m in masks],
        sigma_w2=[shard.runs[i].sigma_w2 for i in idx],
        per="neuron",
    )
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
    rep = prune.layer_report(masks, flags)
    runs = pd.DataFrame(
        [
            {
                "model": i,
                "run_id": r.run_id,
                "arch": r.arch,
                "depth": r.depth,
                "width": r.width,
                "seed": r.seed,
                "pruner": r.pruner,
                "sparsity": r.sparsity,
                "prune_scope": r.prune_scope,
                "prune_rescale": r.prune_rescale,
            }
            for i, r in enumerate(shard.runs)
            if r.pruner
        ]
    )
    rep = rep.merge(runs, on="model", how="inner")
    rep.insert(0, "study", shard.study)
    rep.insert(1, "shard_id", shard.shard_id)
    return rep.reset_index(drop=True)
