"""Fully connected networks as a stack of M models that run as one.

Weights of layer ``l`` are one tensor ``[M, out, in]``, biases ``[M, 1, out]``;
a forward pass is one ``torch.baddbmm`` per layer for all M models.  Every
model has its own σ_w², σ_b², keep rate ρ, init scheme and random key.

Propagation follows 000 Eq. 1 (Huang et al.; Schoenholz et al. 2017 for ρ = 1)::

    z^l = (1/ρ) W^l (p^l ⊙ y^{l-1}) + b^l,   y^l = φ(z^l),   p^l ~ Bernoulli(ρ)

with W^l_ij ~ N(0, σ_w²/N_{l-1}) and b^l_i ~ N(0, σ_b²).  Dropout acts on the
input of each of the ``depth`` hidden layers (the data included) and not on
the readout, which is linear (logits).  Random numbers come from
:mod:`sigprop.nets.rng`, so a model's weights, masks and data order depend on
its own key only, never on the shard it sits in.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132.
"""

from __future__ import annotations

import torch

from . import activations, rng

INITS = ("gaussian", "orthogonal")


def layer_dims(d_in: int, width: int, depth: int, d_out: int) -> list[tuple[int, int]]:
    """(in, out) of each affine layer: ``depth`` hidden layers then the readout."""
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    dims = [d_in] + [width] * depth + [d_out]
    return list(zip(dims[:-1], dims[1:]))


def init_params(
    keys: torch.Tensor,
    sigma_w2: torch.Tensor,
    sigma_b2: torch.Tensor,
    init: list[str],
    dims: list[tuple[int, int]],
    dtype: torch.dtype = torch.float32,
) -> list[torch.Tensor]:
    """Initial parameters ``[W_0, b_0, W_1, b_1, ...]`` for M models.

    ``keys``, ``sigma_w2``, ``sigma_b2``: ``[M]``; ``init[m]`` in :data:`INITS`.
    Gaussian: W ~ N(0, σ_w²/fan_in).  Orthogonal: W = g·Q with Q having
    orthonormal rows (out ≤ in) or columns (out > in) and
    g = σ_w·sqrt(max(1, out/in)), so each unit's pre-activation variance is
    σ_w²‖x‖²/fan_in as in the Gaussian case (Pennington et al. 2017).
    """
    bad = sorted(set(init) - set(INITS))
    if bad:
        raise ValueError(f"unknown init {bad}; known: {list(INITS)}")
    dev = keys.device
    sw = sigma_w2.to(dev, torch.float64).sqrt()
    sb = sigma_b2.to(dev, torch.float64).sqrt()
    is_ortho = [i == "orthogonal" for i in init]  # decided on the host: no device sync
    ortho = torch.tensor(is_ortho, device=dev)
    params = []
    for layer, (d_in, d_out) in enumerate(dims):
        off = layer << 34
        z = rng.normal(keys, rng.STREAM_INIT_W, (d_out, d_in), offset=off, dtype=torch.float64)
        w = z * (sw / d_in**0.5).view(-1, 1, 1)
        if any(is_ortho):
            q = _orthogonal(z[ortho]) * (sw[ortho] * max(1.0, d_out / d_in) ** 0.5).view(-1, 1, 1)
            w[ortho] = q
        b = rng.normal(keys, rng.STREAM_INIT_B, (1, d_out), offset=off, dtype=torch.float64)
        b = b * sb.view(-1, 1, 1)
        params += [w.to(dtype), b.to(dtype)]
    return params


def _orthogonal(z: torch.Tensor) -> torch.Tensor:
    """Haar-orthogonal (semi-orthogonal) matrices from Gaussian ``z`` ``[M, out, in]``."""
    m, d_out, d_in = z.shape
    tall = d_out >= d_in
    a = z if tall else z.transpose(1, 2)
    q, r = torch.linalg.qr(a)
    q = q * torch.sign(torch.diagonal(r, dim1=1, dim2=2)).unsqueeze(1)
    return q if tall else q.transpose(1, 2)


def forward(
    params: list[torch.Tensor],
    x: torch.Tensor,
    act: str,
    keep: torch.Tensor | None = None,
    keys: torch.Tensor | None = None,
    step: int = 0,
) -> torch.Tensor:
    """Logits ``[M, B, d_out]`` for inputs ``x`` ``[M, B, d_in]``.

    Pass ``keep`` (``[M]``) and ``keys`` to train with dropout; leave them None
    for evaluation (the inverted 1/ρ scaling makes the weights directly usable).
    """
    return _layers(params, x, act, keep, keys, step, keep_all=False)[-1]


def preactivations(
    params: list[torch.Tensor],
    x: torch.Tensor,
    act: str,
    keep: torch.Tensor | None = None,
    keys: torch.Tensor | None = None,
    step: int = 0,
) -> list[torch.Tensor]:
    """Pre-activations ``z^1 .. z^L`` of every hidden layer and the logits, ``[M, B, width]`` each.

    Dropout masks (when ``keep`` is given) are independent per model and per
    input row, as 000 Eq. 1 assumes for two inputs a and b.
    """
    return _layers(params, x, act, keep, keys, step, keep_all=True)


def _layers(params, x, act, keep, keys, step, keep_all: bool) -> list[torch.Tensor]:
    """The layers of :func:`preactivations`; with ``keep_all`` False only the logits are kept
    (the training step needs no other pre-activation, and holding them costs memory)."""
    phi = activations.get(act)
    n_layers = len(params) // 2
    scales = None
    if keep is not None:
        shapes = [(x.shape[1], params[2 * i].shape[2]) for i in range(n_layers - 1)]
        scales = rng.dropout_scales(keys, step, shapes, keep)  # mask / keep, per model
    h = x
    out = []
    for layer in range(n_layers):
        w, b = params[2 * layer], params[2 * layer + 1]
        if layer < n_layers - 1 and scales is not None:
            h = h * scales[layer].to(h.dtype)
        z = torch.baddbmm(b, h, w.transpose(1, 2))
        if keep_all or layer == n_layers - 1:
            out.append(z)
        h = phi(z) if layer < n_layers - 1 else z
    return out
