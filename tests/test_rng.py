"""The counter-based RNG: right distributions, independent streams, composition-free."""

import math

import numpy as np
import pytest
import torch

from sigprop.nets import rng

KEYS = torch.tensor([1, 2, 12345, 2**31 - 1])


def test_uniform_moments_and_range():
    u = rng.uniform(KEYS, 7, torch.arange(200_000)).double()
    assert (u > 0).all() and (u < 1).all()
    # sample of 2e5 per key: sd of the mean is 0.29/sqrt(2e5) = 6.5e-4; 5 sd
    assert (u.mean(1) - 0.5).abs().max() < 3.3e-3
    assert (u.var(1) - 1 / 12).abs().max() < 2e-3


def test_normal_moments():
    z = rng.normal(KEYS, rng.STREAM_INIT_W, (400, 500), dtype=torch.float64).reshape(4, -1)
    assert (z.mean(1)).abs().max() < 5 * (1 / 200_000) ** 0.5
    assert (z.var(1) - 1).abs().max() < 5 * (2 / 200_000) ** 0.5
    kurt = (z**4).mean(1)
    assert (kurt - 3).abs().max() < 5 * (96 / 200_000) ** 0.5


def test_streams_models_and_blocks_are_uncorrelated():
    a = rng.uniform(KEYS, 3, torch.arange(100_000)).double() - 0.5
    b = rng.uniform(KEYS, 4, torch.arange(100_000)).double() - 0.5
    lim = 5 / 100_000**0.5  # correlation of independent samples: sd 1/sqrt(n)

    def corr(x, y):
        return float((x * y).mean() / (x.std() * y.std()))

    assert abs(corr(a[0], b[0])) < lim  # streams
    assert abs(corr(a[0], a[1])) < lim  # models
    assert abs(corr(a[0, :-1], a[0, 1:])) < lim  # neighbouring counters
    half = torch.full((4,), 0.5)
    m1, m3 = rng.dropout_masks(KEYS, 0, [(100_000,), (100_000,)], half)  # layers 0 and 1
    (m2,) = rng.dropout_masks(KEYS, 1, [(100_000,)], half)  # next step
    assert abs(corr(m1[0] - 0.5, m2[0] - 0.5)) < lim and abs(corr(m1[0] - 0.5, m3[0] - 0.5)) < lim


def test_mask_keep_fraction():
    keep = torch.tensor([1.0, 0.99, 0.9, 0.5])
    m = rng.dropout_masks(KEYS, 3, [(500, 200)], keep)[0]
    frac = m.reshape(4, -1).mean(1).double()
    sd = (keep.double() * (1 - keep.double()) / 100_000).sqrt()
    assert (frac - keep.double()).abs().le(5 * sd + 1e-12).all()
    assert set(np.unique(m.numpy())) <= {0.0, 1.0}


def test_numbers_depend_on_the_key_only():
    """A model's numbers are the same alone or stacked with others (shard-free)."""
    full = rng.normal(KEYS, 1, (30, 20))
    alone = rng.normal(KEYS[2:3], 1, (30, 20))
    assert torch.equal(full[2], alone[0])
    keep = torch.tensor([0.9, 0.8, 0.7, 0.6])
    mf = rng.dropout_masks(KEYS, 5, [(8, 16), (8, 4)], keep)
    ma = rng.dropout_masks(KEYS[1:2], 5, [(8, 16), (8, 4)], keep[1:2])
    assert torch.equal(mf[1][1], ma[1][0])
    # chunking the step's block into several calls does not change the numbers
    mc = rng.dropout_masks(KEYS, 5, [(8, 16), (8, 4)], keep, max_elements=1)
    assert all(torch.equal(a, b) for a, b in zip(mf, mc))
    assert torch.equal(rng.permutations(KEYS, 2, 50)[3], rng.permutations(KEYS[3:], 2, 50)[0])


def test_permutations_are_permutations_and_change_per_epoch():
    p0 = rng.permutations(KEYS, 0, 1000)
    p1 = rng.permutations(KEYS, 1, 1000)
    for p in (p0, p1):
        assert (p.sort(1).values == torch.arange(1000)).all()
    assert not torch.equal(p0, p1) and not torch.equal(p0[0], p0[1])


def test_int32_tensor_hash_matches_python_reference_bit_for_bit():
    """fmix32 on int32 tensors relies on wrap-around multiplication; check it exactly."""
    g = np.random.default_rng(0)
    xs = [int(v) for v in g.integers(0, 2**32, size=2000)] + [0, 1, 2**31 - 1, 2**31, 2**32 - 1]
    got = rng.fmix32(rng.to_i32(torch.tensor(xs, dtype=torch.int64))).to(torch.int64) & 0xFFFFFFFF
    assert got.tolist() == [rng.fmix32_int(x) for x in xs]


def test_mask_rows_do_not_depend_on_the_batch_size():
    keep = torch.full((4,), 0.7)
    small = rng.dropout_masks(KEYS, 9, [(3, 16), (3, 8)], keep)
    big = rng.dropout_masks(KEYS, 9, [(5, 16), (5, 8)], keep)
    for a, b in zip(small, big):
        assert torch.equal(a, b[:, :3])


def test_masks_equal_the_float_formula_except_at_keep_one():
    """The integer thresholds decide u < keep exactly as the float32 uniforms would; keep = 1
    keeps every unit (u = 1.0 happens, once in 2^24 words, after float32 rounding)."""
    keep = torch.tensor([0.3, 0.5, 0.9, 0.999])
    shapes = [(40, 50), (40, 7)]
    masks = rng.dropout_masks(KEYS, 4, shapes, keep)
    k = rng._model_keys(KEYS, rng.STREAM_DROPOUT, 4).view(-1, 1)
    for first, sizes, bits in rng._keep_bits(k, shapes, 2**18):
        u = (bits.to(torch.float32) + 0.5) * 2.0**-24
        want = (u < keep.view(-1, 1)).to(torch.float32)
        got = torch.cat([m.reshape(4, -1) for m in masks[first : first + len(sizes)]], 1)
        assert torch.equal(got, want)
    # the word whose float32 uniform rounds to 1.0 is kept at keep = 1 and dropped below it
    top = torch.full((1, 1), (1 << 24) - 1, dtype=torch.int32)
    assert float((top.to(torch.float32) + 0.5) * 2.0**-24) == 1.0
    thr = rng._thresholds_of(torch.tensor([1.0, 0.999999]))
    assert (top < thr.view(-1, 1)).flatten().tolist() == [True, False]


def test_a_keep_one_model_gets_no_mask_whatever_its_shard_mates():
    """A rho = 1 run is the same alone (no dropout) as stacked with dropout runs."""
    keep = torch.tensor([1.0, 0.5, 1.0, 0.9])
    big = [(300, 1000)] * 60  # 18M words per model: u = 1.0 is drawn about once
    for out in (rng.dropout_scales(KEYS, 2, big, keep), rng.dropout_masks(KEYS, 2, big, keep)):
        for s in out:  # (with u < 1 alone, models 0 and 2 lost 3 units here)
            assert bool((s[0] == 1).all()) and bool((s[2] == 1).all())


def test_dropout_scales_equal_masks_over_keep_bit_for_bit():
    for dtype in (torch.float32, torch.float64):
        for keep in ([0.95, 0.98, 0.99, 1.0], [0.9, 0.9, 0.8, 0.7], [1.0, 0.9, 1.0, 0.5]):
            kt = torch.tensor(keep, dtype=dtype)
            shapes = [(16, 32), (16, 32), (16, 10)]
            masks = rng.dropout_masks(KEYS, 7, shapes, kt)
            for max_el in (1, 2**10, 2**18, rng.chunk_elements("cuda")):
                scales = rng.dropout_scales(KEYS, 7, shapes, kt, max_elements=max_el)
                for m, s in zip(masks, scales):
                    want = m * (1.0 / kt).view(-1, 1, 1)
                    assert s.dtype == want.dtype and torch.equal(s, want)


def test_dropout_scales_are_the_same_when_two_threads_draw_them_at_once():
    """Local jobs train shards in threads of one process: two shards of one shape must not share
    the hash's scratch tensors (they did, and a kill-and-rerun test failed about one run in
    two)."""
    import threading

    from sigprop.nets import rng

    shapes = [(64, 512)] * 4
    keep = torch.tensor([0.9, 0.5, 0.8])
    keys = [torch.tensor([1, 2, 3]) + 10 * t for t in range(2)]
    want = [[rng.dropout_scales(keys[t], s, shapes, keep) for s in range(30)] for t in range(2)]
    got = [None, None]

    def work(t):
        got[t] = [rng.dropout_scales(keys[t], s, shapes, keep) for s in range(30)]

    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for t in range(2):
        for a, b in zip(got[t], want[t]):
            for x, y in zip(a, b):
                assert torch.equal(x, y)


def test_counter_words_read_through_a_view_equal_the_int64_arithmetic_bit_for_bit():
    """_mix_counters reads a counter's two 32-bit words through an int32 view; it must give the
    words of the int64 arithmetic for every counter the streams use (layer offsets up to 2^40,
    high words past 2^31, negative numbers) and keep the counters' shape."""
    from sigprop.nets import rng

    g = torch.Generator().manual_seed(0)
    base = torch.randint(-(2**62), 2**62, (4000,), generator=g, dtype=torch.int64)
    special = torch.tensor(
        [
            0,
            1,
            2**31 - 1,
            2**31,
            2**32 - 1,
            2**32,
            2**34,
            5 << 34,
            (1 << 40) + 7,
            2**63 - 1,
            -1,
            -(2**31),
            -(2**32),
            -(2**63),
        ]
    )
    for c in (
        base,
        special,
        torch.arange(12, dtype=torch.int64).reshape(3, 4) + (3 << 34),
        (2 * torch.arange(1000) + 1)[::3],
    ):  # a strided (non-contiguous) view
        got = rng._mix_counters(c)
        assert got.dtype == torch.int32 and got.shape == c.shape
        assert torch.equal(got, rng._mix_counters_arith(c))


def _normal_general(keys, stream, shape, offset, dtype):
    """rng.normal by its general path: 64-bit counters through rng.uniform."""
    n = math.prod(shape)
    idx = torch.arange(n, dtype=torch.int64) + offset
    u1 = rng.uniform(keys, stream, 2 * idx, torch.float64)
    u2 = rng.uniform(keys, stream, 2 * idx + 1, torch.float64)
    z = u1.log_().mul_(-2.0).sqrt_().mul_(u2.mul_(2.0 * math.pi).cos_())
    return z.to(dtype).reshape((keys.shape[0],) + tuple(shape))


@pytest.mark.parametrize("threads", [1, 2])
def test_normal_shortcut_gives_the_general_paths_bits(threads):
    """normal()'s int32, chunked shortcut (_normal_uniforms) draws exactly the numbers of the
    64-bit-counter path, over chunk edges, odd sizes, several models, and offsets on both sides
    of the shortcut's limits (a 2^32 counter block crossed: the general path is taken)."""
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        cases = [
            ((300, 700), 3 << 34),
            ((7, 13), 0),
            ((1, 70_001), 5 << 34),
            ((333, 211), (1 << 34) + 12_345),
            ((100,), 2**31 - 10),
            ((10,), 2**62),
        ]
        for keys in (torch.tensor([5]), torch.tensor([1, 99, 2**40 + 3, -7]), torch.arange(13)):
            for shape, off in cases:
                for dt in (torch.float64, torch.float32):
                    got = rng.normal(keys, rng.STREAM_INIT_W, shape, offset=off, dtype=dt)
                    assert torch.equal(
                        got, _normal_general(keys, rng.STREAM_INIT_W, shape, off, dt)
                    )
    finally:
        torch.set_num_threads(old)
    assert rng._normal_uniforms(KEYS, 1, 1000, 7 << 34) is not None  # init offsets use it
    assert rng._normal_uniforms(KEYS, 1, 100, 2**31 - 10) is None  # crosses a 2^32 block
    assert rng._normal_uniforms(KEYS.to("meta"), 1, 1000, 7 << 34) is None  # sigprop plan's shapes


def test_a_gpu_draws_a_deep_shards_dropout_in_few_chunks():
    """On a GPU each chunk costs a dozen kernel launches: a paper-scale deep shard (31 models,
    batch 128, 249 dropout layers of width 300) takes at most 10 chunks a step there, one per
    layer on the CPU."""

    def chunks(device):
        return len(rng.chunk_spans([128 * 300] * 249, 31, rng.chunk_elements(device)))

    assert chunks("cpu") == 249
    assert chunks("cuda") <= 10
    assert rng.chunk_spans([5, 5, 20, 1], 2, 20) == [(0, 2), (2, 3), (3, 4)]
    assert rng.chunk_elements(torch.device("cuda", 1)) == rng.chunk_elements("cuda")
    assert rng.chunk_elements("meta") == rng.chunk_elements("cpu")
