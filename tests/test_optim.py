"""The stacked optimizer's plain-SGD fast path (one foreach call; one rate as a number, or a
rate per model as [M, 1, ...] views) updates every model to the same bits as
``torch.optim.SGD`` stepping that model alone."""

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


def _stock(params, grads, lr, steps):
    """Model i of each parameter stepped by its own torch.optim.SGD."""
    out = []
    for i in range(params[0].shape[0]):
        ps = [p[i].clone().requires_grad_(True) for p in params]
        opt = torch.optim.SGD(ps, lr=float(lr[i]))
        for _ in range(steps):
            for p, g in zip(ps, grads):
                p.grad = g[i].clone()
            opt.step()
        out.append([p.detach() for p in ps])
    return [torch.stack([o[k] for o in out]) for k in range(len(params))]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("one_rate", [True, False])
def test_plain_sgd_fast_path_equals_torch_optim_sgd_bit_for_bit(dtype, one_rate):
    params, grads = _setup(dtype)
    m = params[0].shape[0]
    lr = (
        torch.full((m,), 0.0123, dtype=dtype)
        if one_rate
        else torch.linspace(0.001, 0.05, m, dtype=dtype)
    )
    want = _stock(params, grads, lr, steps=3)
    opt = StackedOptimizer(params, "sgd", torch.zeros(m, dtype=dtype))
    for _ in range(3):
        opt.step(lr, grads=[g.clone() for g in grads], lr_scalar=float(lr[0]) if one_rate else None)
    for p, w in zip(params, want):
        assert torch.equal(p, w)


def test_a_zero_rate_leaves_a_model_exactly_as_it_was():
    params, grads = _setup(torch.float32)
    before = [p.clone() for p in params]
    lr = torch.tensor([0.1, 0.0, 0.1, 0.0, 0.1])
    StackedOptimizer(params, "sgd", torch.zeros(5)).step(lr, grads=grads)
    for p, b in zip(params, before):
        assert torch.equal(p[1], b[1]) and torch.equal(p[3], b[3])
        assert not torch.equal(p[0], b[0])
