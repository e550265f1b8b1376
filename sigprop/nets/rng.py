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
import sys
import threading

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
    return fmix32_(x.clone() if x.dtype == torch.int32 else x.to(torch.int32))


def fmix32_(x: torch.Tensor, scratch: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`fmix32` in place on an int32 tensor (returned).

    The same arithmetic as ``x ^ ((x >> 16) & 0xFFFF)`` and so on, written with in-place
    operations and one scratch tensor (``scratch``, of ``x``'s shape, or a new one): 3x faster
    on CPU (each out-of-place integer op with a Python scalar allocated a tensor and took a slow
    path)."""
    t = torch.empty_like(x) if scratch is None else scratch
    for shift, mask, mult in (
        (16, 0xFFFF, _signed(_C1)),
        (13, 0x7FFFF, _signed(_C2)),
        (16, 0xFFFF, None),
    ):
        torch.bitwise_right_shift(x, shift, out=t)
        t.bitwise_and_(mask)
        x.bitwise_xor_(t)
        if mult is not None:
            x.mul_(mult)
    return x


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
    """Scramble 64-bit counters to 32-bit words (shared by all models):
    ``fmix32(lo ^ fmix32(hi + GOLDEN))`` with ``lo``, ``hi`` the counter's low and high 32-bit
    words.  The words are read through an int32 view of the int64 tensor (no int64 arithmetic:
    that took two thirds of drawing a paper-scale net's initial weights); on a big-endian host
    the arithmetic of :func:`_mix_counters_arith` gives the same words."""
    c = counters.to(torch.int64)
    if sys.byteorder != "little":
        return _mix_counters_arith(c)
    w = c.contiguous().view(torch.int32).view(*c.shape, 2)
    hi = w[..., 1].add(_signed(_GOLDEN))  # int32 wrap-around, as in fmix32_
    lo = w[..., 0].contiguous()
    return fmix32_(lo.bitwise_xor_(fmix32_(hi)))


def _mix_counters_arith(c: torch.Tensor) -> torch.Tensor:
    """:func:`_mix_counters` by int64 arithmetic (the reference its view path is tested
    against, bit for bit)."""
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
    """Top 24 bits as a uniform number in the open interval (0, 1): ``(v + 0.5) 2^-24`` with
    ``v = (bits >> 8) & 0xFFFFFF`` (computed in place: the same numbers, fewer new tensors)."""
    return (bits >> 8).bitwise_and_(0xFFFFFF).to(dtype).add_(0.5).mul_(2.0**-24)


def uniform(
    keys: torch.Tensor, stream: int, counters: torch.Tensor, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """Uniform numbers in (0, 1), shape ``[M, *counters.shape]`` (on the ``meta`` device, which
    holds shapes and no values, an empty tensor of that shape: nothing to hash)."""
    if keys.device.type == "meta":
        return torch.empty(
            (keys.shape[0],) + tuple(counters.shape), dtype=dtype, device=keys.device
        )
    return _unit(hash_bits(keys, stream, counters), dtype)


def normal(
    keys: torch.Tensor,
    stream: int,
    shape: tuple[int, ...],
    offset: int = 0,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Standard normal numbers ``[M, *shape]`` by Box–Muller on two hashed uniforms.

    ``offset`` shifts the counter range so that several tensors drawn from the
    same stream (e.g. the weights of different layers) do not overlap.
    """
    if keys.device.type == "meta":  # shapes only (sigprop plan's FLOP count)
        return torch.empty((keys.shape[0],) + tuple(shape), dtype=dtype, device=keys.device)
    n = math.prod(shape)
    fast = _normal_uniforms(keys, stream, n, offset)
    if fast is not None:
        u1, u2pi = fast
    else:
        idx = torch.arange(n, device=keys.device, dtype=torch.int64) + offset
        u1 = uniform(keys, stream, 2 * idx, torch.float64)
        u2pi = uniform(keys, stream, 2 * idx + 1, torch.float64).mul_(2.0 * math.pi)
    # z = sqrt(-2 ln u1) cos(2 pi u2), in place (the same operations in the same order)
    z = u1.log_().mul_(-2.0).sqrt_().mul_(u2pi.cos_())
    return z.to(dtype).reshape((keys.shape[0],) + tuple(shape))


_NORMAL_CHUNK = 1 << 16  # int32 words per hashing chunk: 256 kB, in the CPU's L2 cache


def _normal_uniforms(
    keys: torch.Tensor, stream: int, n: int, offset: int
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """:func:`normal`'s two uniforms, ``u1 = uniform(keys, stream, 2 idx)`` and
    ``2 pi uniform(keys, stream, 2 idx + 1)`` for ``idx = offset + arange(n)`` (float64
    ``[M, n]`` each), bit for bit, made without 64-bit counters; ``None`` when the shortcut does
    not apply or the device is not the CPU (the caller then takes the general path).

    All ``2n`` counters of one call share their high 32-bit word when they lie in one 2^32 block
    (the init offsets are ``i << 34``, so a layer of fewer than 2^31 weights always does), and
    their low words then form an int32 ``arange`` of step 2 that does not wrap.  So the shared
    half of :func:`_mix_counters`, ``fmix32(hi + GOLDEN)``, is one Python integer, and the low
    words are made directly in int32.  The work runs in chunks of :data:`_NORMAL_CHUNK` words
    so that the eight passes of each :func:`fmix32_` stay in the cache.  Chunking changes no
    bit: every operation here is integer arithmetic or an exactly rounded IEEE product of
    exactly representable numbers; ``log`` and ``cos``, whose vectorized and scalar kernels may
    differ in the last bit, still run in :func:`normal` on the whole arrays, as before.  One
    width-1000, depth-200 network's weights (the gradient_metrics study at paper scale) took
    8.6 s on one core and take about 3 s (M = 1 to 4 models a call)."""
    dev, m = keys.device, keys.shape[0]
    if dev.type != "cpu":  # a GPU runs the whole-array ops at once; on "meta" (sigprop plan's
        return None  # shape counting) a chunk loop would cost only Python time
    first, last = 2 * offset, 2 * (offset + n - 1) + 1
    if n <= 0 or offset < 0 or first >> 32 != last >> 32 or (first & _MASK32) + 2 * n > 1 << 31:
        return None
    hi = _signed(fmix32_int((first >> 32) + _GOLDEN))
    k = _model_keys(keys, stream).view(-1, 1)
    lo0 = first & _MASK32
    u = (
        torch.empty((m, n), dtype=torch.float64, device=dev),
        torch.empty((m, n), dtype=torch.float64, device=dev),
    )
    step = max(1, _NORMAL_CHUNK // max(m, 1))
    mixed = torch.empty(step, dtype=torch.int32, device=dev)
    bits = torch.empty((m, step), dtype=torch.int32, device=dev)
    scratch = torch.empty((m, step), dtype=torch.int32, device=dev)
    for a in range(0, n, step):
        b = min(n, a + step)
        c = b - a
        for half, out in enumerate(u):
            mx = mixed[:c]
            torch.arange(
                lo0 + 2 * a + half, lo0 + 2 * b + half, 2, dtype=torch.int32, device=dev, out=mx
            )
            fmix32_(mx.bitwise_xor_(hi), scratch.view(-1)[:c])
            w = bits[:, :c]
            torch.bitwise_xor(k, mx.unsqueeze(0), out=w)
            fmix32_(w, scratch[:, :c])
            w.bitwise_right_shift_(8).bitwise_and_(0xFFFFFF)  # _unit, in the chunk
            o = out[:, a:b]
            o.copy_(w).add_(0.5).mul_(2.0**-24)
            if half:
                o.mul_(2.0 * math.pi)
    return u


CHUNK_ELEMENTS = {"cpu": 2**18, "cuda": 2**25}
"""Words hashed per call of the dropout draw, by device type: on the CPU 2^18 (1 MB, in the L2
cache); on a GPU 2^25 (128 MB), since there each call is a dozen kernel launches whose host
cost dominates small chunks (an H100 spent 72 % of a deep narrow shard's step waiting for
launches with 2^18: docs/performance.md).  Chunking does not change the numbers."""


def chunk_elements(device: torch.device | str) -> int:
    """:data:`CHUNK_ELEMENTS` of ``device``'s type (the CPU's for any other type)."""
    return CHUNK_ELEMENTS.get(torch.device(device).type, CHUNK_ELEMENTS["cpu"])


def dropout_masks(
    keys: torch.Tensor,
    step: int,
    shapes: list[tuple[int, ...]],
    keep: torch.Tensor,
    max_elements: int | None = None,
) -> list[torch.Tensor]:
    """Dropout masks of every layer for one training step: ``[M, *shape]`` each.

    1 with probability ``keep[m]``.  Layer ``l``'s element at row-major position
    ``i`` uses counter ``(l << 40) + i``, so a mask does not depend on the other
    layers' sizes, and for shape ``[B, width]`` a sample's row does not depend on
    ``B`` (a model gives the same masks in a shard padded to a larger batch).
    Several layers are generated per call, as ``max_elements`` allows (default
    :func:`chunk_elements` of the keys' device); chunking does not change the numbers.

    Per step and element the work is one :func:`fmix32` and an integer compare: the counters'
    scrambled words do not depend on the step and are made once per shape list
    (:func:`_mixed_counters`), and ``u < keep`` with ``u`` the top 24 bits as a float32 in
    (0, 1) is decided on the integer bits against a per-model threshold that gives exactly
    the same answer (:func:`_keep_thresholds`), except at ``keep = 1``, which keeps every unit.
    """
    m = keys.shape[0]
    thr = _keep_thresholds(keep).view(-1, 1)
    k = _model_keys(keys, STREAM_DROPOUT, step).view(-1, 1)
    out = []
    for first, sizes, bits in _keep_bits(k, shapes, max_elements):
        mask = torch.lt(bits, thr).to(torch.float32)
        for shape, part in zip(shapes[first : first + len(sizes)], torch.split(mask, sizes, dim=1)):
            out.append(part.reshape((m,) + tuple(shape)))
    return out


def dropout_scales(
    keys: torch.Tensor,
    step: int,
    shapes: list[tuple[int, ...]],
    keep: torch.Tensor,
    max_elements: int | None = None,
) -> list[torch.Tensor]:
    """What inverted dropout multiplies each layer's input by at one training step:
    ``mask / keep[m]`` of :func:`dropout_masks` (``[M, *shape]`` each, in ``keep``'s dtype),
    equal to ``dropout_masks(...) * (1 / keep)`` bit for bit, made cheaper.

    The kept entries get ``1 / keep[m]`` and the dropped ones 0 in one ``where`` (no float mask
    and no second product), and the models with ``keep = 1`` hash nothing: their scales are 1
    (their masks would be all ones, as ``u < 1`` for every ``u`` in (0, 1)).  The hash runs in
    chunks of at most ``max_elements`` words (default :func:`chunk_elements`), into
    scratch tensors kept between steps.  Huang et al. 2019 (arXiv:1912.09132), Eq. 1: each unit
    is kept with probability ρ and the kept ones are scaled by 1/ρ.
    """
    m = keys.shape[0]
    dropping, inv = _dropping(keep)
    if dropping is None:  # every model drops: no gather, no scatter
        k_all, thr, inv_d = keys, _keep_thresholds(keep), inv
    else:
        k_all, thr, inv_d = (
            keys.index_select(0, dropping),
            _keep_thresholds(keep)[dropping],
            inv[dropping],
        )
    k = _model_keys(k_all, STREAM_DROPOUT, step).view(-1, 1)
    thr, inv_d = thr.view(-1, 1), inv_d.view(-1, 1)
    zero = torch.zeros((), dtype=inv.dtype, device=inv.device)
    out = []
    for first, sizes, bits in _keep_bits(k, shapes, max_elements):
        part = torch.where(torch.lt(bits, thr), inv_d, zero)
        if dropping is not None:
            full = torch.ones((m, part.shape[1]), dtype=inv.dtype, device=inv.device)
            part = full.index_copy_(0, dropping, part)
        for shape, p in zip(shapes[first : first + len(sizes)], torch.split(part, sizes, dim=1)):
            out.append(p.reshape((m,) + tuple(shape)))
    return out


def _keep_bits(k: torch.Tensor, shapes: list[tuple[int, ...]], max_elements: int):
    """Yield ``(first layer, sizes, bits)`` per chunk of consecutive layers: ``bits`` the top 24
    bits (as int32 ``[M, sum(sizes)]``) of the hash of each model's step key ``k`` (``[M, 1]``)
    with the layers' scrambled counters.  ``bits`` lives in a scratch tensor that the next chunk
    overwrites: use it before asking for the next."""
    m = k.shape[0]
    if max_elements is None:
        max_elements = chunk_elements(k.device)
    sizes = [math.prod(s) for s in shapes]
    for i, j in chunk_spans(sizes, m, max_elements):
        total = sum(sizes[i:j])
        mixed = _mixed_counters(tuple(sizes[i:j]), i, k.device)
        bits, tmp = _scratch(m * total, k.device)
        bits = bits.view(m, total)
        torch.bitwise_xor(k, mixed.unsqueeze(0), out=bits)
        fmix32_(bits, tmp.view(m, total))
        bits.bitwise_right_shift_(8).bitwise_and_(0xFFFFFF)
        yield i, sizes[i:j], bits


def chunk_spans(sizes: list[int], models: int, max_elements: int) -> list[tuple[int, int]]:
    """The layers ``[i, j)`` hashed together: consecutive layers while ``models`` x their
    elements stay within ``max_elements`` (a layer larger than that alone)."""
    spans, i = [], 0
    while i < len(sizes):
        j, total = i, 0
        while j < len(sizes) and (total == 0 or (total + sizes[j]) * models <= max_elements):
            total += sizes[j]
            j += 1
        spans.append((i, j))
        i = j
    return spans


_LOCAL = threading.local()


def _scratch(n: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Two int32 work tensors of ``n`` elements, reused from step to step (a fresh tensor of
    some MB costs its page faults at every step on the CPU).  Kept per thread: local jobs train
    shards in threads of one process, and two shards of one shape sharing a scratch tensor
    would overwrite each other's masks (found by tests/test_faults.py's kill-and-rerun test,
    which failed about one run in two)."""
    cache = getattr(_LOCAL, "scratch", None)
    if cache is None:
        cache = _LOCAL.scratch = {}
    key = (n, str(device))
    hit = cache.get(key)
    if hit is None:
        if len(cache) > 16:
            cache.clear()
        hit = cache[key] = (
            torch.empty(n, dtype=torch.int32, device=device),
            torch.empty(n, dtype=torch.int32, device=device),
        )
    return hit


_DROPPING: dict = {}


def _dropping(keep: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor]:
    """``(indices of the models with keep < 1, or None when that is every model; 1 / keep)``,
    computed once per keep-rate tensor (looked up by identity and version, as
    :func:`_keep_thresholds`: no host sync per step)."""
    hit = _DROPPING.get(id(keep))
    if hit is not None and hit[0] is keep and hit[1] == keep._version:
        return hit[2]
    drops = (keep.detach() < 1).cpu()
    idx = None if bool(drops.all()) else torch.nonzero(drops).flatten().to(keep.device)
    out = (idx, 1.0 / keep.detach())
    if len(_DROPPING) > 64:
        _DROPPING.clear()
    _DROPPING[id(keep)] = (keep, keep._version, out)
    return out


_MIXED: dict = {}


def _mixed_counters(sizes: tuple[int, ...], first_layer: int, device) -> torch.Tensor:
    """:func:`_mix_counters` of the counters ``(l << 40) + i`` of layers ``first_layer, ...``
    with ``sizes`` elements each, kept for the next steps (a few MB at most)."""
    key = (sizes, first_layer, str(device))
    out = _MIXED.get(key)
    if out is None:
        idx = torch.cat(
            [
                torch.arange(n, device=device, dtype=torch.int64) + ((first_layer + l) << 40)
                for l, n in enumerate(sizes)
            ]
        )
        out = _mix_counters(idx)
        if len(_MIXED) > 64:
            _MIXED.clear()
        _MIXED[key] = out
    return out


_THRESHOLDS: dict = {}
_THRESHOLDS_OF_TENSOR: dict = {}


def _keep_thresholds(keep: torch.Tensor) -> torch.Tensor:
    """:func:`_thresholds_of` for a shard's keep rates, computed once per set of rates.

    The trainer passes the same keep-rate tensor at every step (:func:`sigprop.nets.families`
    caches it per shard), so it is first looked up by identity and in-place version: reading
    its values (``tolist``) would make the host wait for the device at every step."""
    hit = _THRESHOLDS_OF_TENSOR.get(id(keep))
    if hit is not None and hit[0] is keep and hit[1] == keep._version:
        return hit[2]
    key = (tuple(keep.detach().reshape(-1).tolist()), str(keep.device))
    out = _THRESHOLDS.get(key)
    if out is None:
        if len(_THRESHOLDS) > 64:
            _THRESHOLDS.clear()
        out = _THRESHOLDS[key] = _thresholds_of(keep)
    if len(_THRESHOLDS_OF_TENSOR) > 64:
        _THRESHOLDS_OF_TENSOR.clear()
    _THRESHOLDS_OF_TENSOR[id(keep)] = (keep, keep._version, out)
    return out


def _thresholds_of(keep: torch.Tensor) -> torch.Tensor:
    """Per model, the number ``T`` of 24-bit values ``v`` with ``u(v) < keep``, where
    ``u(v) = float32((v + 0.5) 2^-24)`` as :func:`_unit` computes it; ``u`` grows with ``v``,
    so ``u(v) < keep`` exactly when ``v < T`` (found by bisection on the float32 formula)."""
    kp = keep.detach().to(torch.float32).reshape(-1)
    lo = torch.zeros_like(kp, dtype=torch.int64)  # u(lo - 1) < keep (or lo = 0)
    hi = torch.full_like(lo, 1 << 24)  # u(hi) >= keep (or hi = 2^24)
    for _ in range(25):
        mid = (lo + hi) // 2
        below = ((mid.to(torch.float32) + 0.5) * 2.0**-24) < kp
        lo = torch.where(below, mid + 1, lo)
        hi = torch.where(below, hi, mid)
    # keep = 1 keeps every unit: u(2^24 - 1) rounds to 1.0 in float32, so ``u < 1`` alone would
    # drop one value in 2^24 and a rho = 1 run's numbers would depend on sharing its shard with
    # dropout runs (whose presence turns masks on); fixed 2026-11-24
    return torch.where(kp >= 1, torch.full_like(lo, 1 << 24), lo).to(torch.int32)


def permutations(keys: torch.Tensor, epoch: int, n: int) -> torch.Tensor:
    """One random permutation of ``range(n)`` per model for ``epoch``: ``[M, n]``."""
    idx = torch.arange(n, device=keys.device, dtype=torch.int64)
    return torch.argsort(hash_bits(keys, STREAM_DATA, idx, epoch), dim=1, stable=True)
