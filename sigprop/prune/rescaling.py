"""The rescaling trick of 003 Prop. 1 / Eq. (7) and Algorithm 1 (App. I) for pruned FFNN / CNN.

After pruning, 003 Eq. (6) runs ``F(rho^l o delta^l o W^l, y^{l-1}) + B^l`` with
per-neuron factors ``rho`` that put the pruned net back on the edge of chaos.
Algorithm 1: ``a_i = sum_j W_ij^2 delta_ij``, ``rho_ij = a_i^{-1/2}`` (FFNN); for
a CNN the sum is over input channels at each kernel position (Eq. 7).  The
factors come from :func:`sigprop.theory.pruning.rescaling_factors` /
:func:`~sigprop.theory.pruning.conv_rescaling_factors` (their docstrings discuss
the literal formula vs the variance-preserving one, ``sigma_w2`` given).

Every prunable weight (:func:`sigprop.prune.common.prunable`) is rescaled, the
readout included (Alg. 1 loops over all layers; the authors' ``scaled_init``
rescales every ``nn.Linear`` / ``nn.Conv2d``).  ResNets are refused: Prop. 3
says a pruned ResNet stays on the EOC and needs no rescaling.

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import numpy as np
import torch

from ..theory import pruning as theory
from .common import prunable


def _check(family_name):
    if "resnet" in family_name or "densenet" in family_name:
        raise ValueError(
            f"{family_name}: the rescaling trick is for FFNN / CNN (003 Prop. 1); "
            "residual nets need none (Prop. 3)"
        )


def rescaling_factors(
    family_name, params, masks, sigma_w2=None, per="neuron"
) -> list[torch.Tensor | None]:
    """``rho`` per prunable weight (broadcastable to it, fan-in axis of length 1), else None.

    ``sigma_w2``: None (literal Eq. 7 / Alg. 1), a float or ``M`` floats (one per
    model: variance-preserving ``rho = sqrt(sigma_w2 / (K a))``).  ``per``:
    ``'neuron'`` (Alg. 1) or ``'layer'`` (see :func:`sigprop.theory.pruning.rescaling_factors`).
    """
    _check(family_name)
    flags = prunable(family_name, params)
    out: list[torch.Tensor | None] = []
    for p, mk, f in zip(params, masks, flags):
        if not f:
            out.append(None)
            continue
        w = p.detach().cpu().double().numpy()
        d = np.ones(w.shape) if mk is None else mk.detach().cpu().double().numpy()
        sw = (
            None
            if sigma_w2 is None
            else np.broadcast_to(
                np.asarray(sigma_w2, dtype=float).reshape(-1), (w.shape[0],)
            ).reshape((-1,) + (1,) * (w.ndim - 1))
        )
        if w.ndim == 3:
            rho = theory.rescaling_factors(w, d, sigma_w2=sw, per=per)
        else:
            rho = theory.conv_rescaling_factors(w, d, kernel_ndim=w.ndim - 3, sigma_w2=sw, per=per)
        out.append(torch.as_tensor(np.ascontiguousarray(rho), dtype=p.dtype, device=p.device))
    return out


def rescale(family_name, params, masks, sigma_w2=None, per="neuron") -> list[torch.Tensor]:
    """New parameter list: prunable ``W -> rho o delta o W`` (003 Eq. 6), others unchanged."""
    rho = rescaling_factors(family_name, params, masks, sigma_w2, per)
    return [
        p if r is None else (p.detach() * r * (1 if mk is None else mk.to(p.dtype)))
        for p, r, mk in zip(params, rho, masks)
    ]
