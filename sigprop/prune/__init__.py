"""Pruning at initialization for the batched families: masks for every model of a shard.

Paper: 003 (Hayou et al. 2021, arXiv:2002.08797, "Robust Pruning at Initialization").
A pruner turns the initial parameters of
the M models of a shard (:mod:`sigprop.nets.families`) into 0/1 masks over
their conv / linear weights (003 Eq. 4).  One module per pruner holds its
scoring function; thresholding is shared (:mod:`sigprop.prune.threshold`).

========== ============================================ ==========================
pruner     keep score (lowest removed)                  module
========== ============================================ ==========================
random     i.i.d. uniform from each run's key           :mod:`.rand`
magnitude  ``|W|`` (MBP, 003 App. E)                    :mod:`.magnitude`
snip       ``|W dL/dW|`` (SBP, 003 Sec. 2.2)            :mod:`.snip`
grasp      ``theta o Hg`` = minus GraSP's ``S``         :mod:`.grasp`
synflow    ``|theta dR/dtheta|``, iterative, data-free  :mod:`.synflow`
sbp_sr     SNIP on a Stable ResNet (003 Sec. 3-4)       :mod:`.sbp_sr`
========== ============================================ ==========================

Defaults and where they come from (003 itself only says "a setup similar to
(Wang et al., 2020)", Sec. 4.2; the rest is the authors' code
``sAviOr287/imagenet_ICLR`` and, for SynFlow, Tanaka et al.'s code):

* pruned parameters: every conv and linear weight, biases and BatchNorm never
  (:func:`prunable`, :mod:`.common`);
* ``scope='global'``: one threshold over all prunable weights of a model (003
  Sec. 2.1-2.2);
* scoring data (snip, grasp, sbp_sr): the caller's ``x [M, B, ...]``,
  ``y [M, B]``; the authors use 10 examples per class grouped by class,
  :func:`class_balanced_batch`;
* BatchNorm while scoring (``bn_mode``): ``'train'`` (batch statistics) for
  snip / grasp / sbp_sr (the authors never call ``eval()``), ``'eval'`` for
  synflow (its ``prune_loop`` calls ``model.eval()``).  ``bn_mode`` is the
  ``train`` flag of ``family.apply`` (it also switches dropout, which the 003
  nets do not use);
* GraSP: temperature 200, batch split into 2 halves (:mod:`.grasp`);
* SynFlow: 100 rounds, exponential schedule, float64 (:mod:`.synflow`).

Shard independence: the forward-pass pruners (snip, grasp, sbp_sr, synflow)
score one model at a time (``apply`` on the shard's runs, parameters, buffers,
data and keys sliced to ``[m:m+1]``), so a model's scores are bitwise those it
gets alone.  A batched pass over the M models (``batched=True``) rounds
differently (grouped convolutions of M models): in float32 it flipped weights
that sit at the threshold -- ResNet32, width 16, 3 models, 100 images, 90%
sparsity: 300 (SNIP) and 532 (GraSP) of 1.4M mask entries differed between a
model pruned alone and inside the shard (none in float64, ``dtype``).
random and magnitude are elementwise and exact either way.

Nothing here changes ``params`` or ``buffers``; BatchNorm statistics updated by
a training-mode scoring pass are discarded.

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import functools

import torch

from . import grasp, magnitude, rand, sbp_sr, snip, synflow
from .common import as_input, get_family, model_keys, prunable
from .data import class_balanced_batch
from .report import layer_report
from .rescaling import rescale, rescaling_factors
from .threshold import (
    critical_sparsity,
    critical_sparsity_bisect,
    critical_sparsity_from_scores,
    masks_from_scores,
    per_model,
)

PRUNERS = ("random", "magnitude", "snip", "grasp", "synflow", "sbp_sr")
DATA_PRUNERS = ("snip", "grasp", "sbp_sr")
SCORE_DTYPE = (
    None  # default ``dtype`` of the snip / grasp / sbp_sr passes: None = the parameters' dtype
)
BN_MODE = {
    "snip": "train",
    "grasp": "train",
    "sbp_sr": "train",
    "synflow": "eval",
    "random": "eval",
    "magnitude": "eval",
}

__all__ = [
    "PRUNERS",
    "class_balanced_batch",
    "compute_masks",
    "compute_scores",
    "critical_sparsity",
    "critical_sparsity_bisect",
    "critical_sparsity_from_scores",
    "layer_report",
    "masks_from_scores",
    "prunable",
    "rescale",
    "rescaling_factors",
]


def _train_flag(pruner, bn_mode):
    mode = BN_MODE[pruner] if bn_mode is None else bn_mode
    if mode not in ("train", "eval"):
        raise ValueError(f"bn_mode must be 'train' or 'eval', got {mode!r}")
    return mode == "train"


def _check(pruner):
    if pruner not in PRUNERS:
        raise ValueError(f"unknown pruner '{pruner}'; known: {list(PRUNERS)}")


def _models(batched, runs, params, buffers, x, y, keys):
    """The shard as one part, or one part per model (everything sliced to ``[m:m+1]``)."""
    if batched:
        return [(runs, params, buffers, x, y, keys)]
    return [
        (
            runs[m : m + 1],
            [p[m : m + 1] for p in params],
            [b[m : m + 1] for b in buffers],
            None if x is None else x[m : m + 1],
            None if y is None else y[m : m + 1],
            keys[m : m + 1],
        )
        for m in range(len(runs))
    ]


def _stack(parts):
    """Per-part lists aligned with the params -> one list, parts concatenated on the model axis."""
    return [None if ps[0] is None else torch.cat(ps, 0) for ps in zip(*parts)]


def _prepare(params, buffers, x, y, dtype):
    dtype = params[0].dtype if dtype is None else dtype
    params = [p.detach().to(dtype) for p in params]
    buffers = [b.detach().to(dtype) if b.is_floating_point() else b for b in buffers]
    x = None if x is None else as_input(x, params[0])
    y = None if y is None else as_input(y, params[0])
    return params, buffers, x, y


def compute_scores(
    pruner: str,
    family,
    runs,
    params,
    buffers,
    x=None,
    y=None,
    keys=None,
    *,
    bn_mode: str | None = None,
    temperature: float = grasp.TEMPERATURE,
    grasp_splits: int = grasp.SPLITS,
    in_shape=None,
    flags=None,
    dtype: torch.dtype | None = SCORE_DTYPE,
    batched: bool = False,
) -> list[torch.Tensor | None]:
    """Keep scores (higher = kept) of a one-shot pruner, aligned with ``params`` (None if not prunable).

    For ``grasp`` the keep score is ``theta o Hg``, minus GraSP's own ``S``.
    ``synflow`` is iterative: this returns its first-round scores (unpruned net).
    ``dtype``: precision of the snip / grasp / sbp_sr passes (default: the parameters' dtype;
    SynFlow always scores in float64); ``batched``: one pass over all M models instead of
    one per model (see the module docstring).
    """
    _check(pruner)
    fam = get_family(family)
    flags = prunable(fam.name, params) if flags is None else list(flags)
    keys = model_keys(runs, keys, params[0].device)
    if pruner == "magnitude":
        return magnitude.scores(params, flags)
    if pruner == "random":
        return rand.scores(params, flags, keys)
    train = _train_flag(pruner, bn_mode)
    if pruner == "synflow":
        shape = tuple(x.shape[2:]) if in_shape is None else tuple(in_shape)
        return _stack(
            [
                synflow.scores(fam, r, p, b, shape, flags, k, None, train)
                for r, p, b, _, _, k in _models(batched, runs, params, buffers, None, None, keys)
            ]
        )
    if x is None or y is None:
        raise ValueError(f"{pruner} needs a scoring batch x, y")
    params, buffers, x, y = _prepare(params, buffers, x, y, dtype)
    scorer = {
        "snip": snip.scores,
        "sbp_sr": sbp_sr.scores,
        "grasp": functools.partial(grasp.scores, temperature=temperature, splits=grasp_splits),
    }[pruner]
    return _stack(
        [
            scorer(fam, r, p, b, xm, ym, flags, k, train)
            for r, p, b, xm, ym, k in _models(batched, runs, params, buffers, x, y, keys)
        ]
    )


def compute_masks(
    pruner: str,
    family,
    runs,
    params,
    buffers,
    x,
    y,
    sparsity: float | list[float],
    scope: str = "global",
    rounds: int = synflow.ROUNDS,
    keys=None,
    *,
    bn_mode: str | None = None,
    temperature: float = grasp.TEMPERATURE,
    grasp_splits: int = grasp.SPLITS,
    in_shape=None,
    flags=None,
    dtype: torch.dtype | None = SCORE_DTYPE,
    batched: bool = False,
) -> list[torch.Tensor | None]:
    """0/1 masks (dtype of each param, shape ``[M, ...]``) for prunable params, None otherwise.

    ``family``: a family object or its name; ``runs``: the shard's runs;
    ``params, buffers``: the shard's initial state; ``x [M, B, *in_shape]``,
    ``y [M, B]``: the scoring batch (ignored by random / magnitude; SynFlow only
    reads ``x``'s shape, or ``in_shape`` when ``x`` is None); ``sparsity``: a
    float or one per model; ``scope``: ``'global'`` or ``'layerwise'``
    (:mod:`.threshold`: exactly ``round(s n)`` weights removed per model or per
    layer, deterministic ties); ``rounds``: SynFlow rounds; ``keys``: per-model
    random keys (default: each run's key).  ``bn_mode``, ``temperature``,
    ``grasp_splits``, ``dtype``, ``batched``: see the module docstring and
    :func:`compute_scores`; ``flags``: override :func:`prunable`.
    """
    _check(pruner)
    fam = get_family(family)
    flags = prunable(fam.name, params) if flags is None else list(flags)
    if pruner == "synflow":
        shape = tuple(x.shape[2:]) if in_shape is None else tuple(in_shape)
        keys = model_keys(runs, keys, params[0].device)
        sp = per_model(sparsity, len(runs))
        parts = _models(batched, runs, params, buffers, None, None, keys)
        sps = [sp] if batched else [[s] for s in sp]
        keep = _stack(
            [
                synflow.masks(
                    fam, r, p, b, shape, flags, k, s, scope, rounds, _train_flag(pruner, bn_mode)
                )
                for (r, p, b, _, _, k), s in zip(parts, sps)
            ]
        )
    else:
        sc = compute_scores(
            pruner,
            fam,
            runs,
            params,
            buffers,
            x,
            y,
            keys,
            bn_mode=bn_mode,
            temperature=temperature,
            grasp_splits=grasp_splits,
            flags=flags,
            dtype=dtype,
            batched=batched,
        )
        keep = masks_from_scores(sc, sparsity, scope)
    return [None if k is None else k.to(p.dtype) for k, p in zip(keep, params)]
