"""Random pruning: i.i.d. uniform scores, the baseline of 003 Prop. 1's "random" criterion.

Scores are drawn with :mod:`sigprop.nets.rng` (counter-based hashing) from each
model's own key, so a model's mask depends on its key only, never on its shard
(SynFlow's ``Rand`` pruner draws ``randn_like`` from a global generator, which
would not be shard-independent).  Parameter ``i`` of the model uses counters
``(i << 40) + j`` (``j`` its row-major position); two 32-bit words per weight
give a uniform number on a 2^-53 grid, so ties have probability ~n^2 2^-54.

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import torch

from ..nets import rng
from .common import STREAM_PRUNE_RANDOM


def scores(params, flags, keys: torch.Tensor) -> list[torch.Tensor | None]:
    """Uniform(0, 1) keep scores (float64) for the prunable ``params`` (None elsewhere)."""
    out: list[torch.Tensor | None] = []
    for i, (p, f) in enumerate(zip(params, flags)):
        if not f:
            out.append(None)
            continue
        n = p[0].numel()
        ctr = torch.arange(n, device=keys.device, dtype=torch.int64) + (i << 40)
        hi = rng.hash_bits(keys, STREAM_PRUNE_RANDOM, ctr, 0).to(torch.int64) & 0x1FFFFF
        lo = rng.hash_bits(keys, STREAM_PRUNE_RANDOM, ctr, 1).to(torch.int64) & 0xFFFFFFFF
        u = (hi.to(torch.float64) * 2.0**32 + lo.to(torch.float64)) * 2.0**-53
        out.append(u.reshape(p.shape).to(p.device))
    return out
