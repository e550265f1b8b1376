"""The stacked optimizer's plain-SGD fast path (foreach calls, one rate as a cached 0-dim tensor,
per-model rates as [M, 1, ...] views) updates to the same bits as ``p - lr * g`` per parameter."""

from __future__ import annotations

import pytest
import torch

from sigprop.train.optim import StackedOptimizer


def _setup(dtype, m=5):
    g = torch.Generator().manual_seed(3)
    shapes = [(m, 33, 17), (m, 1, 33), (m, 10, 33), (m, 1, 10)]
    params = [torch.randn(s, generator=g, dtype=dtype) for s in shapes]
    grads = [torch.randn(s, generator=g, dtype=dtype) * 0.37 for s in shapes]
    return params, grads


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("one_rate", [True, False])
def test_plain_sgd_fast_path_rounds_as_lr_times_g_then_subtract(dtype, in_place, one_rate):
    params, grads = _setup(dtype)
    m = params[0].shape[0]
    lr = (torch.full((m,), 0.0123, dtype=dtype) if one_rate
          else torch.linspace(0.001, 0.05, m, dtype=dtype))
    want = [p - lr.view(-1, *(1,) * (p.dim() - 1)) * g for p, g in zip(params, grads)]
    opt = StackedOptimizer(params, "sgd", torch.zeros(m, dtype=dtype))
    for _ in range(2):   # the second step reuses the cached rate tensor
        ps_before = [p.clone() for p in params]
        gs = [g.clone() for g in grads]
        opt.step(lr, grads=gs, lr_scalar=float(lr[0]) if one_rate else None,
                 scale_grads_in_place=in_place)
        for p, w in zip(params, want):
            assert torch.equal(p, w)
        want = [p - lr.view(-1, *(1,) * (p.dim() - 1)) * g for p, g in zip(params, grads)]
        # not the fused p - lr g (one rounding), which differs somewhere in these tensors
        fused = [q.add(g, alpha=-float(lr[0])) for q, g in zip(ps_before, grads)]
        if one_rate and dtype == torch.float32:
            assert any(not torch.equal(f, p) for f, p in zip(fused, params))


def test_rate_tensor_follows_a_new_rate():
    params, grads = _setup(torch.float32)
    opt = StackedOptimizer(params, "sgd", torch.zeros(5))
    a = opt._rate_tensor(0.1, params[0])
    assert opt._rate_tensor(0.1, params[0]) is a
    b = opt._rate_tensor(0.05, params[0])
    assert float(b) == pytest.approx(0.05) and b.dtype == torch.float32
