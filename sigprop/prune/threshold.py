"""Masks from scores at an exact sparsity, and the critical sparsity ``s_cr`` (003 Sec. 2.1).

Convention: every scorer returns *keep scores* (higher = more important).
For model ``m`` with ``n_m`` prunable weights and sparsity ``s_m``:

* ``scope='global'`` (003 Sec. 2.1-2.2: one threshold ``t_s`` over the whole
  network, keeping the top ``k_s = (1 - s) sum_l M_l`` scores): exactly
  ``round(s_m n_m)`` weights with the lowest scores over all prunable layers of
  model ``m`` are removed;
* ``scope='layerwise'``: exactly ``round(s_m n_l)`` weights of each layer ``l``.

``round`` is round-half-up (``floor(x + 0.5)``).  Ties are broken
deterministically by position: the weights of a model are ordered by a stable
ascending sort of their scores over the concatenation of its prunable layers in
parameter order (row-major inside a layer), and the first ``round(s n)`` of that
order are removed -- among equal scores the earlier weight goes first.  Each
model is thresholded on its own row, so masks never depend on the shard.

(The authors' code removes ``int(s n)`` scores by ``topk`` and then keeps
``score <= threshold``, which keeps the threshold weight itself and every tie:
at least one weight fewer than ``int(s n)``.  Tanaka et al.'s code removes the
``int(s n)`` lowest (``kthvalue``) and every weight tied with the last of them.
Here the count is exact.)

``s_cr`` (003 Sec. 2.1, above Thm. 1: the smallest sparsity at which some layer
is fully pruned) follows exactly from the sorted scores of a one-shot pruner:
with ranks ``r`` from the order above, layer ``l`` is empty once the
``max_{i in l} r_i + 1`` lowest weights are removed, so
``k_cr = min_l (max_{i in l} r_i + 1)`` and ``s_cr = k_cr / n``
(:func:`critical_sparsity_from_scores`; ``compute_masks`` at ``s_cr`` removes
exactly ``k_cr`` weights and empties that layer, one weight fewer does not).

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch


def per_model(sparsity, m: int) -> list[float]:
    """``sparsity`` (a float or ``M`` floats) as a list of ``M`` floats in [0, 1]."""
    if isinstance(sparsity, (int, float)):
        s = [float(sparsity)] * m
    else:
        s = [float(v) for v in (sparsity.tolist() if hasattr(sparsity, "tolist") else sparsity)]
    if len(s) != m:
        raise ValueError(f"need one sparsity per model ({m}), got {len(s)}")
    if any(not 0.0 <= v <= 1.0 for v in s):
        raise ValueError(f"sparsity must lie in [0, 1], got {s}")
    return s


def n_remove(sparsity: list[float], n: int) -> list[int]:
    """``round(s n)`` (half up) weights to remove, for each model's sparsity ``s``."""
    return [min(n, max(0, math.floor(s * n + 0.5))) for s in sparsity]


def _ranks(flat: torch.Tensor) -> torch.Tensor:
    """Position of every entry in the stable ascending order of its row: ``[M, n]`` int64."""
    order = torch.argsort(flat, dim=1, stable=True)
    ranks = torch.empty_like(order)
    ar = torch.arange(flat.shape[1], device=flat.device).expand_as(order)
    return ranks.scatter_(1, order, ar)


def _flat(scores):
    idx = [i for i, s in enumerate(scores) if s is not None]
    if not idx:
        raise ValueError("no prunable parameters")
    m = scores[idx[0]].shape[0]
    parts = [scores[i].reshape(m, -1) for i in idx]
    dtype = torch.promote_types(parts[0].dtype, torch.float32)
    return idx, [p.numel() // m for p in parts], torch.cat([p.to(dtype) for p in parts], dim=1)


def masks_from_scores(scores, sparsity, scope: str = "global") -> list[torch.Tensor | None]:
    """Boolean keep-masks (True = kept) aligned with ``scores`` (None where ``scores`` is None)."""
    idx, sizes, flat = _flat(scores)
    m = flat.shape[0]
    s = per_model(sparsity, m)
    dev = flat.device
    if scope == "global":
        k = torch.tensor(n_remove(s, flat.shape[1]), device=dev)
        keep = _ranks(flat) >= k.view(-1, 1)
        pieces = torch.split(keep, sizes, dim=1)
    elif scope == "layerwise":
        pieces = []
        for part in torch.split(flat, sizes, dim=1):
            k = torch.tensor(n_remove(s, part.shape[1]), device=dev)
            pieces.append(_ranks(part) >= k.view(-1, 1))
    else:
        raise ValueError(f"scope must be 'global' or 'layerwise', got {scope!r}")
    out: list[torch.Tensor | None] = [None] * len(scores)
    for i, piece in zip(idx, pieces):
        out[i] = piece.reshape(scores[i].shape)
    return out


def critical_sparsity(masks, prunable_flags) -> torch.Tensor:
    """Per model ``[M]`` (bool): is some prunable layer fully pruned (sparsity >= ``s_cr``)?"""
    empty = [
        m.reshape(m.shape[0], -1).sum(1) == 0
        for m, f in zip(masks, prunable_flags)
        if f and m is not None
    ]
    if not empty:
        raise ValueError("no prunable parameters")
    return torch.stack(empty, dim=1).any(dim=1)


def critical_sparsity_from_scores(scores) -> pd.DataFrame:
    """Exact ``s_cr`` of a one-shot pruner from its keep scores (global scope).

    Returns one row per model: ``model``, ``n_prunable``, ``k_cr`` (weights
    removed when the first layer empties), ``s_cr = k_cr / n_prunable`` and
    ``layer`` (parameter index of the layer that empties first; the earliest on
    ties).  See the module docstring for the derivation.
    """
    idx, sizes, flat = _flat(scores)
    ranks = _ranks(flat)
    last = (
        torch.stack([part.max(dim=1).values for part in torch.split(ranks, sizes, dim=1)], dim=1)
        + 1
    )
    k_cr, which = last.min(dim=1)
    n = flat.shape[1]
    k = k_cr.cpu().numpy()
    return pd.DataFrame(
        {
            "model": np.arange(flat.shape[0]),
            "n_prunable": n,
            "k_cr": k,
            "s_cr": k / n,
            "layer": np.asarray(idx)[which.cpu().numpy()],
        }
    )


def critical_sparsity_bisect(
    masks_at, prunable_flags, m: int, lo: float = 0.0, hi: float = 1.0, tol: float = 1e-3
) -> np.ndarray:
    """``s_cr`` of any pruner by bisection over the sparsity (e.g. iterative SynFlow).

    ``masks_at(sparsities)`` returns masks for a list of ``m`` per-model
    sparsities (``lambda s: compute_masks(..., sparsity=s)``).  Assumes that
    layer collapse is monotone in the sparsity.  Returns ``[m]`` upper brackets
    (a sparsity at which a layer is empty, within ``tol`` of the last one found
    without collapse); NaN where no layer is empty even at ``hi``.
    """
    lo_ = np.full(m, float(lo))
    hi_ = np.full(m, float(hi))
    at_hi = critical_sparsity(masks_at(list(hi_)), prunable_flags).cpu().numpy()
    while np.any(hi_ - lo_ > tol):
        mid = 0.5 * (lo_ + hi_)
        col = critical_sparsity(masks_at(list(mid)), prunable_flags).cpu().numpy()
        hi_ = np.where(col, mid, hi_)
        lo_ = np.where(col, lo_, mid)
    return np.where(at_hi, hi_, np.nan)
