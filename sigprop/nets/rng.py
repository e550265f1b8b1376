"""Counter-based random numbers, one independent stream per model.

Why not ``torch.Generator``: a shard stacks M models, and a run's result must
not depend on which shard it landed in (otherwise editing one grid value would
change the numbers of every other run in the shard).  So every random draw is a
pure function of ``(model key, stream, counter)``: a 32-bit integer hash
(the MurmurHash3 finalizer, applied in cascade) evaluated elementwise in torch.
The same key gives the same numbers on CPU and GPU and in any shard.

All arithmetic is done in int64 on values below 2**32, with 32-bit products
split into 16-bit halves so no intermediate exceeds 2**63 (torch's int64
overflow is not something to rely on).
"""

from __future__ import annotations

import math

import torch

_MASK32 = 0xFFFFFFFF
_GOLDEN = 0x9E3779B9

# Streams: distinct constants so that init, data order and dropout never collide.
STREAM_INIT_W = 1
STREAM_INIT_B = 2
STREAM_DATA = 3
STREAM_DROPOUT = 4
STREAM_INIT_QR = 5


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """(x * c) mod 2**32 for int64 tensors x in [0, 2**32) and a 32-bit constant c."""
    lo = c & 0xFFFF
    hi = c >> 16
    return (x * lo + (((x * hi) & 0xFFFF) << 16)) & _MASK32


def fmix32(x: torch.Tensor) -> torch.Tensor:
    """MurmurHash3's 32-bit finalizer: a bijection on [0, 2**32) with full avalanche."""
    x = x & _MASK32
    x = x ^ (x >> 16)
    x = _mul32(x, 0x85EBCA6B)
    x = x ^ (x >> 13)
    x = _mul32(x, 0xC2B2AE35)
    x = x ^ (x >> 16)
    return x


def hash_bits(keys: torch.Tensor, stream: int, counters: torch.Tensor) -> torch.Tensor:
    """32 random bits for every (key, counter) pair.

    ``keys``: int64 ``[M]``; ``counters``: int64 of shape ``[...]`` (shared by all
    models).  Returns int64 ``[M, ...]`` in ``[0, 2**32)``.
    """
    k = keys.to(torch.int64).reshape((-1,) + (1,) * counters.dim())
    h = fmix32(k ^ fmix32(torch.full_like(k, stream * _GOLDEN)))
    c = counters.to(device=keys.device, dtype=torch.int64)
    # counters may exceed 2**32: fold the high word in separately
    h = fmix32(h ^ fmix32(c & _MASK32))
    h = fmix32(h ^ fmix32((c >> 32) + _GOLDEN))
    return h


def uniform(keys: torch.Tensor, stream: int, counters: torch.Tensor,
            dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Uniform numbers in the open interval (0, 1), shape ``[M, *counters.shape]``."""
    bits = hash_bits(keys, stream, counters) >> 8  # 24 bits: exact in float32
    return ((bits.to(torch.float64) + 0.5) * 2.0 ** -24).to(dtype)


def normal(keys: torch.Tensor, stream: int, shape: tuple[int, ...], offset: int = 0,
           dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard normal numbers ``[M, *shape]`` by Box–Muller on two hashed uniforms.

    ``offset`` shifts the counter range so that several tensors drawn from the
    same stream (e.g. the weights of different layers) do not overlap.
    """
    n = math.prod(shape)
    idx = torch.arange(n, device=keys.device, dtype=torch.int64) + offset
    u1 = uniform(keys, stream, 2 * idx, torch.float64)
    u2 = uniform(keys, stream, 2 * idx + 1, torch.float64)
    z = torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(2.0 * math.pi * u2)
    return z.to(dtype).reshape((keys.shape[0],) + tuple(shape))


def bernoulli_mask(keys: torch.Tensor, stream: int, step: int, layer: int,
                   shape: tuple[int, ...], keep: torch.Tensor) -> torch.Tensor:
    """Dropout masks: 1 with probability ``keep[m]``, shape ``[M, *shape]``.

    The counter encodes (step, layer, element) so masks never repeat.
    """
    n = math.prod(shape)
    base = ((step * 4099 + layer) & 0x3FFFFFFF) << 31  # distinct block per (step, layer)
    idx = torch.arange(n, device=keys.device, dtype=torch.int64) + base
    u = uniform(keys, stream, idx).reshape((keys.shape[0],) + tuple(shape))
    return (u < keep.reshape((-1,) + (1,) * len(shape)).to(u.dtype)).to(torch.float32)


def permutations(keys: torch.Tensor, epoch: int, n: int) -> torch.Tensor:
    """One random permutation of ``range(n)`` per model for ``epoch``: ``[M, n]``."""
    idx = torch.arange(n, device=keys.device, dtype=torch.int64) + (int(epoch) << 32)
    bits = hash_bits(keys, STREAM_DATA, idx)
    return torch.argsort(bits, dim=1, stable=True)
