"""Pruners of :mod:`sigprop.prune` (003, Hayou et al., "Robust Pruning at Initialization").

Every check compares with something computed independently: plain ``nn.Module``
versions of the families (:mod:`sigprop.nets.reference`) for the prunable rule
and the SNIP gradient, finite differences for GraSP's Hessian-vector product,
the closed-form path norm for SynFlow, a brute-force scan for the critical
sparsity, row sums for the rescaling trick, numpy sorts for the thresholds.
Tiny float64 nets on CPU.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from sigprop import prune
from sigprop.nets import families, reference
from sigprop.prune import grasp, synflow
from sigprop.runs import RunSpec, Shard
from sigprop.theory import pruning as theory
from sigprop.train.engine import initial_state

CPU = torch.device("cpu")
F64 = torch.float64


def _runs(arch, n=3, **kw):
    base = {
        "arch": arch,
        "width": 4,
        "depth": 2,
        "activation": "relu",
        "sigma_w2": 2.0,
        "sigma_b2": 0.05,
    }
    base.update(kw)
    return tuple(RunSpec(seed=i, **base) for i in range(n))


def _state(runs, in_shape, n_out=3, dtype=F64):
    return initial_state(Shard("t", runs), in_shape, n_out, CPU, dtype)


def _batch(m, b, in_shape, n_out=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((m, b) + tuple(in_shape), generator=g, dtype=F64)
    y = torch.randint(0, n_out, (m, b), generator=g)
    return x, y


IMG = (3, 8, 8)


# ------------------------------------------------------------------ what is prunable


@pytest.mark.parametrize(
    "arch,in_shape,n_out",
    [
        ("fc", (5,), 3),
        ("fc", (5,), 1),
        ("resnet32", IMG, 3),
        ("stable_resnet32", IMG, 1),
        ("vgg16", (3, 16, 16), 3),
        ("vcnn", IMG, 1),
        ("lenet", (1, 16, 16), 1),
        ("lenet", (1, 16, 16), 4),
    ],
)
def test_prunable_is_every_conv_and_linear_weight(arch, in_shape, n_out):
    """Flags = the nn.Conv2d / nn.Linear weights of the plain module (the authors' rule)."""
    run = _runs(arch, 1, width=2)[0]
    params, _ = _state((run,), in_shape, n_out)
    mod = reference.build(arch, run, in_shape, n_out)
    weights = {id(m.weight) for m in mod.modules() if isinstance(m, (nn.Conv2d, nn.Linear))}
    expected = [id(p) in weights for p in mod.parameters()]
    assert len(expected) == len(params)
    assert prune.prunable(arch, params) == expected
    if arch == "resnet32":
        assert sum(expected) == 1 + 30 + 2 + 1  # stem, block convs, 1x1 shortcuts, readout


@pytest.mark.parametrize("arch", ["resnet_fc", "densenet_fc"])
def test_prunable_bias_free_residual_fc(arch):
    params, _ = _state(_runs(arch, 1), (5,), 1)
    assert prune.prunable(arch, params) == [True] * len(params)


# ------------------------------------------------------------------ thresholding


def _removed_sets(flat_scores, k):
    """Indices of the k lowest scores, ties to the lower index (numpy lexsort)."""
    order = np.lexsort((np.arange(flat_scores.size), flat_scores))
    return set(order[:k].tolist())


@pytest.mark.parametrize("scope", ["global", "layerwise"])
def test_exact_sparsity_and_ties(scope):
    runs = _runs("fc", 3, depth=2, width=6)
    params, _ = _state(runs, (5,))
    params = [torch.round(p * 2) / 2 for p in params]  # many exactly tied |w|
    flags = prune.prunable("fc", params)
    sp = [0.1, 0.37, 0.9]
    masks = prune.compute_masks("magnitude", "fc", runs, params, [], None, None, sp, scope)
    layers = [i for i, f in enumerate(flags) if f]
    assert all(masks[i] is None for i, f in enumerate(flags) if not f)
    for m in range(3):
        if scope == "global":
            groups = [layers]
        else:
            groups = [[i] for i in layers]
        for g in groups:
            sc = np.concatenate([params[i][m].abs().reshape(-1).numpy() for i in g])
            keep = np.concatenate([masks[i][m].reshape(-1).numpy() for i in g])
            k = math.floor(sp[m] * sc.size + 0.5)
            assert int((keep == 0).sum()) == k
            assert set(np.flatnonzero(keep == 0).tolist()) == _removed_sets(sc, k)
            assert len(np.unique(sc)) < sc.size / 2  # ties were really there


def test_magnitude_removes_smallest_weights():
    runs = _runs("fc", 2, depth=3, width=8)
    params, _ = _state(runs, (6,))
    masks = prune.compute_masks("magnitude", "fc", runs, params, [], None, None, 0.6)
    for m in range(2):
        w = np.concatenate([p[m].abs().reshape(-1).numpy() for p in params[0::2]])
        keep = np.concatenate([k[m].reshape(-1).numpy() for k in masks[0::2]])
        assert keep.sum() == w.size - round(0.6 * w.size)
        assert w[keep == 1].min() > w[keep == 0].max()


# ------------------------------------------------------------------ scores


@pytest.mark.parametrize("arch,in_shape", [("fc", (5,)), ("resnet32", IMG)])
def test_snip_equals_w_grad_of_plain_module(arch, in_shape):
    """SNIP = |w * dL/dw| from autograd on the plain nn.Module (BatchNorm in train mode)."""
    runs = _runs(arch, 2, width=2)
    params, buffers = _state(runs, in_shape)
    x, y = _batch(2, 12, in_shape)
    sc = prune.compute_scores("snip", arch, runs, params, buffers, x, y)
    for m in range(2):
        mod = reference.from_stacked(arch, runs[m], in_shape, 3, params, buffers, m, F64).train()
        loss = nn.functional.cross_entropy(mod(x[m]), y[m])
        ws = [mm.weight for mm in mod.modules() if isinstance(mm, (nn.Conv2d, nn.Linear))]
        grads = torch.autograd.grad(loss, ws)
        mine = [s[m] for s in sc if s is not None]
        assert len(mine) == len(ws)
        for s, w, g in zip(mine, ws, grads):
            torch.testing.assert_close(
                s.reshape(w.shape), (w * g).abs().detach(), rtol=1e-9, atol=1e-14
            )


@pytest.mark.parametrize(
    "arch,in_shape,temp", [("fc", (5,), 200.0), ("fc", (5,), 1.0), ("resnet32", IMG, 200.0)]
)
def test_grasp_equals_finite_difference_hvp(arch, in_shape, temp):
    """GraSP's S = -w o Hg with Hg from central differences of first-order gradients."""
    runs = _runs(arch, 2, width=2, activation="tanh")
    params, buffers = _state(runs, in_shape)
    fam = families.get(arch)
    x, y = _batch(2, 10, in_shape)
    flags = prune.prunable(arch, params)
    keys = prune.model_keys(runs, None, CPU)
    s = grasp.grasp_scores(fam, runs, params, buffers, x, y, flags, keys, True, temp, 2)
    halves = [(x[:, :5], y[:, :5]), (x[:, 5:], y[:, 5:])]

    def grad(ps):
        ws = [p.clone().requires_grad_(f) for p, f in zip(ps, flags)]
        wl = [w for w, f in zip(ws, flags) if f]
        out = [torch.zeros_like(w) for w in wl]
        for xh, yh in halves:
            loss = prune.common.loss_sum(fam, runs, ws, buffers, xh, yh, True, keys, temp)
            out = [a + b for a, b in zip(out, torch.autograd.grad(loss, wl))]
        return out

    g = grad(params)
    eps = 1e-6 / math.sqrt(sum(float((v**2).sum()) for v in g))  # FD error ~ eps^2 (checked)
    it = iter(g)
    step = [next(it) if f else torch.zeros_like(p) for p, f in zip(params, flags)]
    gp = grad([p + eps * d for p, d in zip(params, step)])
    gm = grad([p - eps * d for p, d in zip(params, step)])
    hg = [(a - b) / (2 * eps) for a, b in zip(gp, gm)]
    mine = [v for v in s if v is not None]
    ws = [p for p, f in zip(params, flags) if f]
    num = torch.cat([(-w * h).reshape(-1) for w, h in zip(ws, hg)])
    got = torch.cat([v.reshape(-1) for v in mine])
    assert float(num.abs().max()) > 0
    torch.testing.assert_close(got, num, rtol=1e-5, atol=1e-6 * float(num.abs().max()))
    keep = prune.compute_scores("grasp", arch, runs, params, buffers, x, y, temperature=temp)
    torch.testing.assert_close(torch.cat([v.reshape(-1) for v in keep if v is not None]), -got)


def test_synflow_one_round_is_path_norm():
    """Bias-free relu net, all-ones input: score = |W_ij| (1^T |W_L|..|W_l+1|)_i (|W_l-1|..|W_1| 1)_j."""
    runs = _runs("fc", 2, depth=3, width=5, sigma_b2=0.0)
    params, _ = _state(runs, (4,))
    sc = prune.compute_scores("synflow", "fc", runs, params, [], torch.zeros(2, 1, 4), None)
    ws = params[0::2]
    for m in range(2):
        a = [w[m].abs() for w in ws]
        v = [torch.ones(4, dtype=F64)]
        for w in a[:-1]:
            v.append(w @ v[-1])
        u = [torch.ones(3, dtype=F64)]
        for w in reversed(a[1:]):
            u.insert(0, w.T @ u[0])
        for l, w in enumerate(a):
            torch.testing.assert_close(
                sc[2 * l][m], w * u[l][:, None] * v[l][None, :], rtol=1e-12, atol=0
            )
    masks = prune.compute_masks(
        "synflow", "fc", runs, params, [], torch.zeros(2, 1, 4), None, 0.7, rounds=1
    )
    ref = prune.masks_from_scores(sc, 0.7)
    assert all((a is None and b is None) or torch.equal(a.bool(), b) for a, b in zip(masks, ref))


@pytest.mark.parametrize("scope", ["global", "layerwise"])
def test_synflow_iterative_exact_and_nested(scope):
    runs = _runs("resnet32", 2, width=2)
    params, buffers = _state(runs, IMG)
    flags = prune.prunable("resnet32", params)
    n = [p[0].numel() for p, f in zip(params, flags) if f]
    sp = [0.5, 0.95]
    out = {}
    for r in (1, 4):
        out[r] = prune.compute_masks(
            "synflow",
            "resnet32",
            runs,
            params,
            buffers,
            None,
            None,
            sp,
            scope,
            rounds=r,
            in_shape=IMG,
        )
        rep = prune.layer_report(out[r], flags)
        for m in range(2):
            removed = (rep[rep.model == m].n_weights - rep[rep.model == m].n_kept).tolist()
            if scope == "global":
                assert sum(removed) == math.floor(sp[m] * sum(n) + 0.5)
            else:
                assert removed == [math.floor(sp[m] * k + 0.5) for k in n]
    diff = sum(int((a != b).sum()) for a, b in zip(out[1], out[4]) if a is not None)
    assert diff > 0  # iterating changes the masks
    # one round of the schedule with the masks of the previous round: kept set only shrinks
    dens = [(1 - s) ** 0.25 for s in sp]
    keys = prune.model_keys(runs, None, CPU)
    fam = families.get("resnet32")
    first = synflow.masks(
        fam, runs, params, buffers, IMG, flags, keys, [1 - d for d in dens], scope, 1
    )
    second = synflow.masks(
        fam, runs, params, buffers, IMG, flags, keys, [1 - d**2 for d in dens], scope, 2
    )
    assert all(bool((b <= a).all()) for a, b in zip(first, second) if a is not None)


def test_random_scores_uniform_and_keyed():
    runs = _runs("fc", 2, depth=2, width=64)
    params, _ = _state(runs, (64,))
    sc = prune.compute_scores("random", "fc", runs, params, [])
    u = torch.cat([s.reshape(2, -1) for s in sc if s is not None], 1)
    assert u.dtype == F64 and float(u.min()) >= 0 and float(u.max()) < 1
    assert abs(float(u.mean()) - 0.5) < 0.01 and len(torch.unique(u[0])) == u.shape[1]
    assert not torch.equal(u[0], u[1])
    other = prune.compute_scores("random", "fc", runs, params, [], keys=[7, 8])
    assert not torch.equal(other[0], sc[0])


def test_sbp_sr_is_snip_on_stable_resnet():
    runs = _runs("stable_resnet32", 2, width=2)
    params, buffers = _state(runs, IMG)
    x, y = _batch(2, 8, IMG)
    a = prune.compute_scores("sbp_sr", "stable_resnet32", runs, params, buffers, x, y)
    b = prune.compute_scores("snip", "stable_resnet32", runs, params, buffers, x, y)
    assert all((s is None and t is None) or torch.equal(s, t) for s, t in zip(a, b))
    with pytest.raises(ValueError, match="Stable ResNet"):
        prune.compute_masks("sbp_sr", "resnet32", runs, params, buffers, x, y, 0.5)


# ------------------------------------------------------------------ shard independence


@pytest.mark.parametrize("pruner", ["random", "magnitude", "snip", "grasp", "synflow"])
@pytest.mark.parametrize("arch,in_shape", [("fc", (5,)), ("resnet32", IMG)])
def test_masks_do_not_depend_on_the_shard(pruner, arch, in_shape):
    """float32 parameters as in training; also the batched float64 pass (tiny nets: no flips)."""
    runs = _runs(arch, 3, width=2)
    params, buffers = _state(runs, in_shape, dtype=torch.float32)
    x, y = _batch(3, 10, in_shape)
    before = [p.clone() for p in params + buffers]
    sp = [0.3, 0.8, 0.95]
    kw = {"rounds": 3}
    together = prune.compute_masks(pruner, arch, runs, params, buffers, x, y, sp, **kw)
    assert all(torch.equal(a, b) for a, b in zip(before, params + buffers))  # nothing modified
    batched = prune.compute_masks(
        pruner, arch, runs, params, buffers, x, y, sp, dtype=F64, batched=True, **kw
    )
    for m in range(3):
        p1, b1 = _state((runs[m],), in_shape, dtype=torch.float32)
        alone = prune.compute_masks(
            pruner, arch, (runs[m],), p1, b1, x[m : m + 1], y[m : m + 1], sp[m], **kw
        )
        for a, t, u in zip(alone, together, batched):
            assert (a is None) == (t is None) == (u is None)
            if a is not None:
                assert (
                    a.dtype == torch.float32 and torch.equal(a[0], t[m]) and torch.equal(a[0], u[m])
                )


# ------------------------------------------------------------------ critical sparsity


@pytest.mark.parametrize("pruner", ["magnitude", "snip", "random"])
def test_critical_sparsity_from_scores_equals_scan(pruner):
    runs = _runs("fc", 2, depth=3, width=3)
    params, _ = _state(runs, (4,), 2)
    x, y = _batch(2, 6, (4,), 2)
    flags = prune.prunable("fc", params)
    sc = prune.compute_scores(pruner, "fc", runs, params, [], x, y)
    df = prune.critical_sparsity_from_scores(sc)
    n = sum(p[0].numel() for p, f in zip(params, flags) if f)
    first = [None, None]
    for k in range(n + 1):
        col = prune.critical_sparsity(prune.masks_from_scores(sc, k / n), flags)
        for m in range(2):
            if first[m] is None and bool(col[m]):
                first[m] = k
    assert df.k_cr.tolist() == first
    assert np.allclose(df.s_cr, np.array(first) / n)
    for m in range(2):  # the layer that empties first, by the report
        rep = prune.layer_report(prune.masks_from_scores(sc, first[m] / n), flags)
        assert rep[(rep.model == m) & rep.collapsed].param.tolist() == [df.layer[m]]

    def masks_at(s):
        return prune.masks_from_scores(sc, s)

    bis = prune.critical_sparsity_bisect(masks_at, flags, 2, tol=1e-4)
    lo = (np.array(first) - 0.5) / n  # round-half-up: collapse iff s >= (k_cr - 0.5) / n
    assert np.all(bis >= lo) and np.all(bis <= lo + 1e-4)


# ------------------------------------------------------------------ rescaling trick


def test_rescale_fc_matches_theory_and_alg1_row_sums():
    runs = _runs("fc", 2, depth=2, width=6, sigma_w2=1.7)
    params, _ = _state(runs, (5,))
    masks = prune.compute_masks("magnitude", "fc", runs, params, [], None, None, 0.7)
    new = prune.rescale("fc", params, masks)
    for p, mk, q in zip(params, masks, new):
        if mk is None:
            assert q is p
            continue
        rho = theory.rescaling_factors(p.numpy(), mk.numpy())
        np.testing.assert_allclose(q.numpy(), rho * mk.numpy() * p.numpy(), rtol=1e-14)
        rows = (q**2).sum(-1)
        kept = mk.sum(-1) > 0
        torch.testing.assert_close(
            rows[kept], torch.ones_like(rows[kept])
        )  # Alg. 1: sum_j (rho W)^2 = 1
    vp = prune.rescale("fc", params, masks, sigma_w2=[1.7, 2.5])
    for q, mk in zip(vp[0::2], masks[0::2]):
        rows = (q**2).sum(-1)
        target = torch.tensor([1.7, 2.5], dtype=F64).view(2, 1).expand_as(rows)
        kept = mk.sum(-1) > 0
        torch.testing.assert_close(rows[kept], target[kept])


def test_rescale_cnn_per_kernel_position():
    runs = _runs("vcnn", 2, depth=3, width=4)
    params, _ = _state(runs, IMG)
    masks = prune.compute_masks("random", "vcnn", runs, params, [], None, None, 0.5)
    new = prune.rescale("vcnn", params, masks, sigma_w2=2.0)
    for p, mk, q in zip(params, masks, new):
        if mk is None or p.dim() != 5:
            continue
        sums = (q**2).sum(2)  # over input channels at each (out, kh, kw)
        kept = mk.sum(2) > 0
        torch.testing.assert_close(sums[kept], torch.full_like(sums[kept], 2.0 / 9))
        torch.testing.assert_close(
            (q**2).sum((2, 3, 4))[kept.all(-1).all(-1)],
            torch.full_like((q**2).sum((2, 3, 4))[kept.all(-1).all(-1)], 2.0),
        )
    with pytest.raises(ValueError, match="Prop. 3"):
        prune.rescale("resnet32", params, masks)


# ------------------------------------------------------------------ report, data, training


def test_layer_report_counts():
    m1 = torch.zeros(2, 3, 4)
    m1[0, 0, :] = 1
    m1[1] = 1
    m2 = torch.zeros(2, 5, 2, 1, 1)
    m2[0, :2] = 1
    df = prune.layer_report([m1, None, m2], [True, False, True])
    assert df.param.tolist() == [0, 2, 0, 2]
    assert df.n_weights.tolist() == [12, 10, 12, 10]
    assert df.n_kept.tolist() == [4, 4, 12, 0]
    assert np.allclose(df.kept_fraction, [4 / 12, 0.4, 1.0, 0.0])
    assert df.collapsed.tolist() == [False, False, False, True]
    assert df.weight_shape.tolist() == ["3x4", "5x2x1x1", "3x4", "5x2x1x1"]
    assert prune.critical_sparsity([m1, None, m2], [True, False, True]).tolist() == [False, True]


def test_class_balanced_batch():
    g = torch.Generator().manual_seed(1)
    y = torch.randint(0, 4, (200,), generator=g)
    x = torch.arange(200, dtype=F64).view(200, 1) * torch.ones(1, 3, dtype=F64)
    xb, yb = prune.class_balanced_batch(x, y, 5, key=[11, 12, 13])
    assert xb.shape == (3, 20, 3) and yb.shape == (3, 20)
    assert torch.equal(yb, torch.arange(4).repeat_interleave(5).expand(3, 20))
    assert torch.equal(y[xb[..., 0].long()], yb)  # labels belong to the examples
    assert all(len(set(r.tolist())) == 20 for r in xb[..., 0])
    x1, y1 = prune.class_balanced_batch(x, y, 5, key=12)
    assert torch.equal(x1, xb[1]) and torch.equal(y1, yb[1])
    assert not torch.equal(xb[0], xb[1])
    with pytest.raises(ValueError, match="fewer"):
        prune.class_balanced_batch(x, y, 100, key=0)


def test_masked_weights_stay_zero_through_sgd():
    """Masked forward + zeroing; the fc family's own mask buffers give the same trajectory."""
    runs = _runs("fc", 2, depth=2, width=6, activation="tanh")
    params, _ = _state(runs, (5,))
    x, y = _batch(2, 16, (5,))
    masks = prune.compute_masks("snip", "fc", runs, params, [], x, y, 0.8)
    fam = families.get("fc")
    keys = prune.model_keys(runs, None, CPU)
    a = [
        (p * mk if mk is not None else p).clone().requires_grad_(True)
        for p, mk in zip(params, masks)
    ]
    b = [p.clone().requires_grad_(True) for p in params]
    bufs = [mk for mk in masks if mk is not None]
    for _step in range(4):
        la = prune.common.loss_sum(fam, runs, prune.common.masked(a, masks), [], x, y, True, keys)
        lb = prune.common.loss_sum(fam, runs, b, bufs, x, y, True, keys)
        ga, gb = torch.autograd.grad(la, a), torch.autograd.grad(lb, b)
        with torch.no_grad():
            for p, g, mk in zip(a, ga, masks):
                if mk is not None:
                    assert float(g[mk == 0].abs().max()) == 0.0  # masked forward: no gradient there
                p -= 0.5 * g
                if mk is not None:
                    p.mul_(mk)
            for p, g in zip(b, gb):
                p -= 0.5 * g
            fam.constrain(runs, b, bufs)
    for p, q, p0, mk in zip(a, b, params, masks):
        torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-14)
        if mk is not None:
            assert torch.all(p[mk == 0] == 0)
            assert bool((p[mk == 1] != p0[mk == 1]).any())
