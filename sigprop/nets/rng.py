"""Counter-based random numbers, one independent stream per model.

Why not ``torch.Generator``: a shard stacks M models, and a run's result must
not depend on which shard it landed in (otherwise editing one grid value would
change the numbers of every other run in the shard).  So every random draw is a
pure function of ``(model key, stream, block words, counter)`` through the
MurmurHash3 32-bit finalizer ``fmix32``, evaluated elementwise in torch.  The
same key gives the same numbers on CPU and GPU and in any shard.

Tensors hold the 32-bit words as int32 and rely on two's-complement wrap-around
of int32 multiplication (10x faster than exact int64 arithmetic on CPU);
``tests/test_rng.py`` checks the tensor path bit for bit against the
pure-Python :func:`fmix32_int`, so a platform that did not wrap would fail there.
"""

from __future__ import annotations

import math

import torch

_MASK32 = 0xFFFFFFFF
_GOLDEN = 0x9E3779B9
_C1, _C2 = 0x85EBCA6B, 0xC2B2AE35

# Streams: distinct constants so that init, data order and dropout never collide.
STREAM_INIT_W = 1
STREAM_INIT_B = 2
STREAM_DATA = 3
STREAM_DROPOUT = 4


def _signed(c: int) -> int:
    c &= _MASK32
    return c - (1 << 32) if c >= 1 << 31 else c


def to_i32(x: torch.Tensor) -> torch.Tensor:
    """Low 32 bits of an integer tensor as int32 (two's complement)."""
    x = x.to(torch.int64) & _MASK32
    return (x - ((x >> 31) << 32)).to(torch.int32)


def fmix32(x: torch.Tensor) -> torch.Tensor:
    """MurmurHash3's finalizer on int32 tensors: a bijection of 32-bit words."""
    x = x ^ ((x >> 16) & 0xFFFF)
    x = x * _signed(_C1)
    x = x ^ ((x >> 13) & 0x7FFFF)
    x = x * _signed(_C2)
    return x ^ ((x >> 16) & 0xFFFF)


def fmix32_int(x: int) -> int:
    """:func:`fmix32` on a Python integer (reference, and words shared by all models)."""
    x &= _MASK32
    x ^= x >> 16
    x = (x * _C1) & _MASK32
    x ^= x >> 13
    x = (x * _C2) & _MASK32
    return x ^ (x >> 16)


def _word(stream: int, *words: int) -> int:
    """One 32-bit word from a stream id and block selectors (step, epoch...)."""
    h = fmix32_int(stream * _GOLDEN)
    for w in words:
        h = fmix32_int(h ^ fmix32_int((int(w) & _MASK32) ^ _GOLDEN))
        h = fmix32_int(h ^ fmix32_int((int(w) >> 32) & _MASK32))
    return h


def _model_keys(keys: torch.Tensor, stream: int, *words: int) -> torch.Tensor:
    """Per-model keys of one block: int32 ``[M]``."""
    return fmix32(fmix32(to_i32(keys)) ^ _signed(_word(stream, *words)))


def _mix_counters(counters: torch.Tensor) -> torch.Tensor:
    """Scramble 64-bit counters to 32-bit words (shared by all models)."""
    c = counters.to(torch.int64)
    return fmix32(to_i32(c) ^ fmix32(to_i32((c >> 32) + _GOLDEN)))


def hash_bits(keys: torch.Tensor, stream: int, counters: torch.Tensor, *words: int) -> torch.Tensor:
    """32 random bits (int32) for every (key, counter): shape ``[M, *counters.shape]``.

    ``words`` (step, epoch, ...) select a block of the stream.  Per output
    element the cost is one ``fmix32``: counters are scrambled once for all
    models, keys once per model.
    """
    k = _model_keys(keys, stream, *words).reshape((-1,) + (1,) * counters.dim())
    return fmix32(k ^ _mix_counters(counters.to(keys.device)).unsqueeze(0))


def _unit(bits: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Top 24 bits as a uniform number in the open interval (0, 1)."""
    return ((((bits >> 8) & 0xFFFFFF).to(dtype) + 0.5) * 2.0 ** -24)


def uniform(keys: torch.Tensor, stream: int, counters: torch.Tensor,
            dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Uniform numbers in (0, 1), shape ``[M, *counters.shape]``."""
    return _unit(hash_bits(keys, stream, counters), dtype)


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


def dropout_masks(keys: torch.Tensor, step: int, shapes: list[tuple[int, ...]],
                  keep: torch.Tensor, max_elements: int = 2 ** 22) -> list[torch.Tensor]:
    """Dropout masks of every layer for one training step: ``[M, *shape]`` each.

    1 with probability ``keep[m]``.  Layer ``l``'s element at row-major position
    ``i`` uses counter ``(l << 40) + i``, so a mask does not depend on the other
    layers' sizes, and for shape ``[B, width]`` a sample's row does not depend on
    ``B`` (a model gives the same masks in a shard padded to a larger batch).
    Several layers are generated per call, as ``max_elements`` allows; chunking
    does not change the numbers.
    """
    m = keys.shape[0]
    k = _model_keys(keys, STREAM_DROPOUT, step).view(-1, 1)
    sizes = [math.prod(s) for s in shapes]
    keep_ = keep.view(-1, 1).to(torch.float32)
    out, i = [], 0
    while i < len(shapes):
        j, total = i, 0
        while j < len(shapes) and (total == 0 or (total + sizes[j]) * m <= max_elements):
            total += sizes[j]
            j += 1
        idx = torch.cat([torch.arange(sizes[l], device=keys.device, dtype=torch.int64) + (l << 40)
                         for l in range(i, j)])
        u = _unit(fmix32(k ^ _mix_counters(idx).unsqueeze(0)), torch.float32)
        mask = (u < keep_).to(torch.float32)
        for shape, part in zip(shapes[i:j], torch.split(mask, sizes[i:j], dim=1)):
            out.append(part.reshape((m,) + tuple(shape)))
        i = j
    return out


def permutations(keys: torch.Tensor, epoch: int, n: int) -> torch.Tensor:
    """One random permutation of ``range(n)`` per model for ``epoch``: ``[M, n]``."""
    idx = torch.arange(n, device=keys.device, dtype=torch.int64)
    return torch.argsort(hash_bits(keys, STREAM_DATA, idx, epoch), dim=1, stable=True)
