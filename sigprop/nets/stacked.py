"""Batched (model-stacked) layers for convolutional families, written once for init and apply.

An architecture is a Python function ``body(ops, x, run)`` that calls the
operations of ``ops`` (``conv``, ``bn``, ``act``, ``maxpool``, ``linear`` ...).
The same function serves two purposes:

* :class:`Init` runs it on *shapes*: ``x`` is a tuple ``(C, H, W)`` or ``(F,)``
  and every ``conv`` / ``linear`` / ``bn`` call creates the stacked parameters
  ``[M, ...]`` (and BatchNorm buffers) in call order.
* :class:`Apply` runs it on data: the M models' images live in one tensor
  ``[B, M*C, H, W]`` (model-major channels), so a convolution of all M models
  is one ``conv2d(..., groups=M)``, a BatchNorm of all M models is one
  ``batch_norm`` over ``M*C`` channels (statistics per model and channel), and
  pooling / activations act channel-wise.  Flattened features are ``[M, B, F]``
  and linear layers are one ``baddbmm``.

Grouped convolution was measured faster than ``torch.func.vmap`` over
``functional_call`` on CPU (see ``tests/test_families.py`` docstring and the
families report); it also needs no special BatchNorm handling.

Init: every conv / linear weight ``~ N(0, sigma_w2 / fan_in)`` (fan_in =
``C_in * k * k``), biases ``~ N(0, sigma_b2)``, per model, drawn from
:mod:`sigprop.nets.rng` with the model's key at counter offset ``layer << 34``
(``layer`` counts the conv / linear layers in call order), so a model's init
does not depend on its shard.  BatchNorm: gamma 1, beta 0, running mean 0,
running var 1, momentum 0.1, eps 1e-5 (``torch.nn.BatchNorm2d`` defaults).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import activations, rng

BN_MOMENTUM = 0.1
BN_EPS = 1e-5


class Init:
    """Shape-level pass that creates stacked parameters ``[M, ...]`` in call order."""

    def __init__(self, keys, sigma_w2, sigma_b2, device, dtype):
        self.keys = keys.to(device)
        self.sw = torch.as_tensor(sigma_w2, dtype=torch.float64, device=device)
        self.sb = torch.as_tensor(sigma_b2, dtype=torch.float64, device=device)
        self.device, self.dtype = device, dtype
        self.params: list[torch.Tensor] = []
        self.buffers: list[torch.Tensor] = []
        self.layer = 0
        self.m = int(self.keys.shape[0])

    def _weight(self, shape, fan_in, gain2=None):
        off = self.layer << 34
        z = rng.normal(self.keys, rng.STREAM_INIT_W, shape, offset=off, dtype=torch.float64)
        g2 = self.sw if gain2 is None else gain2
        std = (g2 / fan_in).sqrt().view((-1,) + (1,) * len(shape))
        return (z * std).to(self.dtype)

    def _bias(self, n):
        off = self.layer << 34
        z = rng.normal(self.keys, rng.STREAM_INIT_B, (n,), offset=off, dtype=torch.float64)
        return (z * self.sb.sqrt().view(-1, 1)).to(self.dtype)

    def conv(self, x, c_out, k, stride=1, pad=0, bias=False):
        c_in, h, w = x
        self.params.append(self._weight((c_out, c_in, k, k), c_in * k * k))
        if bias:
            self.params.append(self._bias(c_out))
        self.layer += 1
        return (c_out, (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1)

    def bn(self, x):
        c = x[0]
        kw = dict(device=self.device, dtype=self.dtype)
        self.params += [torch.ones(self.m, c, **kw), torch.zeros(self.m, c, **kw)]
        self.buffers += [torch.zeros(self.m, c, **kw), torch.ones(self.m, c, **kw)]
        return x

    def linear(self, x, n_out, bias=True):
        (f,) = x
        self.params.append(self._weight((n_out, f), f))
        if bias:
            self.params.append(self._bias(n_out).unsqueeze(1))  # [M, 1, out] as in fc.py
        self.layer += 1
        return (n_out,)

    def act(self, x, name):
        activations.get(name)
        return x

    def maxpool(self, x, k, stride=None):
        stride = k if stride is None else stride
        c, h, w = x
        return (c, (h - k) // stride + 1, (w - k) // stride + 1)

    def gap(self, x):
        return (x[0],)

    def flatten(self, x):
        return (math.prod(x),)

    def add(self, a, b):
        if a != b:
            raise ValueError(f"residual shapes differ: {a} vs {b}")
        return a

    def scale(self, x, s):
        return x


class Apply:
    """Data-level pass: consumes the stacked parameters in the order :class:`Init` made them."""

    def __init__(self, params, buffers, m, train):
        self.params = iter(params)
        self.buffers = iter(buffers)
        self.new_buffers: list[torch.Tensor] = []
        self.m = m
        self.train = train

    def conv(self, x, c_out, k, stride=1, pad=0, bias=False):
        w = next(self.params)
        b = next(self.params).reshape(-1) if bias else None
        return F.conv2d(x, w.reshape((-1,) + tuple(w.shape[2:])), b, stride, pad, 1, self.m)

    def bn(self, x):
        gamma, beta = next(self.params), next(self.params)
        rm, rv = next(self.buffers), next(self.buffers)
        if self.train:
            rm2 = rm.detach().reshape(-1).clone()
            rv2 = rv.detach().reshape(-1).clone()
            y = F.batch_norm(
                x, rm2, rv2, gamma.reshape(-1), beta.reshape(-1), True, BN_MOMENTUM, BN_EPS
            )
            self.new_buffers += [rm2.view_as(rm), rv2.view_as(rv)]
            return y
        self.new_buffers += [rm, rv]
        return F.batch_norm(
            x,
            rm.reshape(-1),
            rv.reshape(-1),
            gamma.reshape(-1),
            beta.reshape(-1),
            False,
            0.0,
            BN_EPS,
        )

    def linear(self, x, n_out, bias=True):
        w = next(self.params)
        if bias:
            return torch.baddbmm(next(self.params), x, w.transpose(1, 2))
        return torch.bmm(x, w.transpose(1, 2))

    def act(self, x, name):
        return activations.get(name)(x)

    def maxpool(self, x, k, stride=None):
        return F.max_pool2d(x, k, stride)

    def gap(self, x):
        b = x.shape[0]
        return x.mean(dim=(2, 3)).view(b, self.m, -1).transpose(0, 1)

    def flatten(self, x):
        b = x.shape[0]
        return x.reshape(b, self.m, -1).transpose(0, 1)

    def add(self, a, b):
        return a + b

    def scale(self, x, s):
        return x * s


def images_in(x: torch.Tensor) -> torch.Tensor:
    """``[M, B, C, H, W]`` -> ``[B, M*C, H, W]`` (model-major channels)."""
    m, b = x.shape[:2]
    return x.transpose(0, 1).reshape((b, m * x.shape[2]) + tuple(x.shape[3:]))


def sigma(runs):
    return ([float(r.sigma_w2) for r in runs], [float(r.sigma_b2) for r in runs])
