"""Fully connected residual and dense nets of 001 (Littwin & Wolf), M models stacked.

Same definitions as the simulations behind :mod:`sigprop.theory.kernels`
(``tests/test_theory_kernels.py::resnet_forward / densenet_forward``), i.e.
001 Sec. 3-4 in the NTK parameterization: every weight is stored ``N(0, 1)``
and the ``1/sqrt(fan_in)`` factors are in the forward pass.  No biases
(``sigma_b2`` is ignored).  Width ``n = run.width``, ``L = run.depth``.

``resnet_fc`` (001 Eqs. 7-8)::

    y^0 = W^s x / sqrt(d)
    g^{l,1} = sqrt(alpha/n) W^{l,1} y^{l-1}
    g^{l,h} = sqrt(alpha/n) W^{l,h} sqrt(sigma_w2) phi(g^{l,h-1})     1 < h <= m
    y^l = y^{l-1} + s g^{l,m}                                          l = 1..L
    f = W^f y^L / sqrt(n)

with ``m = run.branch_depth`` (default 1), ``alpha = run.alpha`` (default 1.0,
per model), ``phi = run.activation``, ``s = 1``.  001 uses relu with the factor
``sqrt(2)``: that is ``sigma_w2 = 2`` here (``sqrt(sigma_w2)`` is a per-model
gain, i.e. ``W^{l,h}`` of variance ``alpha sigma_w2 / n`` for ``h > 1``).

``stable_resnet_fc``: the same with ``s = 1/sqrt(L)`` on every branch, the
Stable ResNet re-parameterization of 003 Prop. 2 (Eq. 9), applied to the 001
branch.

``densenet_fc`` (001 Eq. 19)::

    q^0 = sqrt(sigma_w2) phi(W^s x / sqrt(d))
    y^l = (1/sqrt(n l)) sum_{h<l} W^{l,h} q^h,   q^l = sqrt(sigma_w2) phi(y^l)
    f = W^f y^L / sqrt(n)

``W^{l,0..l-1}`` are stored as one ``[M, n, l n]`` matrix (one bmm per layer).

All weights (``W^s``, hidden, ``W^f``) are trained parameters; 001's NTK counts
only the hidden ones (its Thm. 1-2), which a measurement can select: the
hidden weights are ``params[1:-1]``.  Weight ``i`` in the list is drawn from
:func:`sigprop.nets.rng.normal` with offset ``i << 34``.

Papers cited by prefix: 001 = Littwin, Wolf (2020), arXiv:2001.10460; 003 = Hayou, Ton, Doucet,
Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import math

import torch

from . import activations, rng


def _normal(keys, i, shape, dtype):
    return rng.normal(keys, rng.STREAM_INIT_W, shape, offset=i << 34, dtype=torch.float64).to(dtype)


def _per_model(runs, attr, default, x):
    return torch.tensor(
        [float(getattr(r, attr, default)) for r in runs], device=x.device, dtype=x.dtype
    ).view(-1, 1, 1)


def _no_dropout(name, runs, train):
    if train and any(r.keep_rate < 1 for r in runs):
        raise NotImplementedError(f"{name}: dropout (keep_rate < 1) is not supported")


def _flat(x):
    return x.reshape(x.shape[0], x.shape[1], -1)


class ResNetFC:
    """001 fully connected ResNet (``stable=False``) or its Stable ResNet variant."""

    def __init__(self, stable=False):
        self.stable = stable
        self.name = "stable_resnet_fc" if stable else "resnet_fc"

    @staticmethod
    def branch_depth(runs):
        m = int(getattr(runs[0], "branch_depth", 1))
        if m < 1 or any(int(getattr(r, "branch_depth", 1)) != m for r in runs):
            raise ValueError("branch_depth must be >= 1 and equal across a shard")
        return m

    def init(self, runs, keys, in_shape, n_out, device, dtype):
        keys = keys.to(device)
        d = math.prod(int(s) for s in in_shape)
        n, L, m = int(runs[0].width), int(runs[0].depth), self.branch_depth(runs)
        shapes = [(n, d)] + [(n, n)] * (L * m) + [(int(n_out), n)]
        return [_normal(keys, i, s, dtype) for i, s in enumerate(shapes)], []

    def apply(self, runs, params, buffers, x, train, keys, step):
        _no_dropout(self.name, runs, train)
        x = _flat(x)
        n, L, m = int(runs[0].width), int(runs[0].depth), self.branch_depth(runs)
        phi = activations.get(runs[0].activation)
        alpha = _per_model(runs, "alpha", 1.0, x)
        gain = _per_model(runs, "sigma_w2", 1.0, x).sqrt()
        c = (alpha / n).sqrt()
        s = 1.0 / math.sqrt(L) if self.stable else 1.0
        y = torch.bmm(x, params[0].transpose(1, 2)) / math.sqrt(x.shape[-1])
        i = 1
        for _ in range(L):
            g = c * torch.bmm(y, params[i].transpose(1, 2))
            i += 1
            for _ in range(1, m):
                g = c * torch.bmm(gain * phi(g), params[i].transpose(1, 2))
                i += 1
            y = y + s * g if s != 1.0 else y + g
        return torch.bmm(y, params[i].transpose(1, 2)) / math.sqrt(n), buffers

    def constrain(self, runs, params, buffers):
        return None


class DenseNetFC:
    """001 fully connected DenseNet (Eq. 19)."""

    name = "densenet_fc"

    def init(self, runs, keys, in_shape, n_out, device, dtype):
        keys = keys.to(device)
        d = math.prod(int(s) for s in in_shape)
        n, L = int(runs[0].width), int(runs[0].depth)
        shapes = [(n, d)] + [(n, l * n) for l in range(1, L + 1)] + [(int(n_out), n)]
        return [_normal(keys, i, s, dtype) for i, s in enumerate(shapes)], []

    def apply(self, runs, params, buffers, x, train, keys, step):
        _no_dropout(self.name, runs, train)
        x = _flat(x)
        n, L = int(runs[0].width), int(runs[0].depth)
        phi = activations.get(runs[0].activation)
        gain = _per_model(runs, "sigma_w2", 1.0, x).sqrt()
        y = torch.bmm(x, params[0].transpose(1, 2)) / math.sqrt(x.shape[-1])
        qs = [gain * phi(y)]
        for l in range(1, L + 1):
            y = torch.bmm(torch.cat(qs, dim=2), params[l].transpose(1, 2)) / math.sqrt(n * l)
            qs.append(gain * phi(y))
        return torch.bmm(y, params[L + 1].transpose(1, 2)) / math.sqrt(n), buffers

    def constrain(self, runs, params, buffers):
        return None


def families() -> dict:
    return {
        "resnet_fc": ResNetFC(False),
        "stable_resnet_fc": ResNetFC(True),
        "densenet_fc": DenseNetFC(),
    }
