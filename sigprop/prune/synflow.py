"""SynFlow (Tanaka et al. 2020): iterative, data-free pruning by synaptic flow (003 Sec. 4.2).

Score of a weight: ``|theta o dR/dtheta|`` with the synaptic flow
``R = 1^T (prod_l |theta^l|) 1``, i.e. the sum of the outputs of the network
whose parameters are replaced by their absolute values, fed an all-ones input
(Tanaka et al. 2020, Eq. 2 and Alg. 1).  With ReLU (or linear) activations and
positive weights and inputs every unit is active, so for a bias-free linear
chain the score of ``W^l_ij`` is ``|W^l_ij| (1^T |W^L| ... |W^{l+1}|)_i
(|W^{l-1}| ... |W^1| 1)_j``.

As in the SynFlow code (``ganguli-lab/Synaptic-Flow``, ``Pruners/pruners.py``,
``prune.py``):

* every parameter and buffer is replaced by its absolute value (biases,
  BatchNorm affine and running statistics included); one input of ones per
  model; ``R`` = sum of the logits;
* BatchNorm in eval mode (``prune_loop`` calls ``model.eval()``): running
  statistics, which at initialization (mean 0, var 1) make BN a positive
  scaling ``|gamma| / sqrt(1 + eps)`` plus ``|beta|``;
* the current mask multiplies the weights (masked forward), so already pruned
  weights score 0; here they are set to ``-inf`` so the masks are nested;
* ``rounds`` (100 by default, Tanaka et al.'s choice for SynFlow) rounds with
  the exponential schedule: after round ``k`` the kept fraction is
  ``(1 - s)^{k / rounds}``, thresholded with the shared rule (global or
  layerwise) -- the last round removes exactly ``round(s n)`` weights.

Tanaka et al.'s guarantee is against disconnecting the network, not against
emptying a layer in the sense of 003's ``s_cr``: a 1x1 projection shortcut lies
in parallel with its block's convolutions and can be pruned away entirely while
flow still passes (seen on ResNet32, width 16, 90% sparsity, in 1 of 4 models:
the 64x32 shortcut of the third stage had no weight left).

Scores are computed in float64 (``dtype``): ``R`` is a product of per-layer
absolute row sums (about ``sqrt(fan_in)`` each), which for a 15-block ResNet
exceeds the float32 range.

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import torch

from .threshold import masks_from_scores, per_model

ROUNDS = 100


def scores(
    family,
    runs,
    params,
    buffers,
    in_shape,
    flags,
    keys,
    masks=None,
    train=False,
    dtype=torch.float64,
) -> list[torch.Tensor | None]:
    """Keep scores ``|theta o dR/dtheta|`` (``dtype``) of one round, with the current ``masks``."""
    dev = params[0].device
    m = params[0].shape[0]
    ws = [p.detach().abs().to(dtype) for p in params]
    for w, f in zip(ws, flags):
        if f:
            w.requires_grad_(True)
    masks = masks if masks is not None else [None] * len(params)
    fwd = [w if mk is None else w * mk.to(dtype) for w, mk in zip(ws, masks)]
    bufs = [b.detach().abs().to(dtype) if b.is_floating_point() else b for b in buffers]
    x = torch.ones((m, 1) + tuple(int(s) for s in in_shape), dtype=dtype, device=dev)
    logits, _ = family.apply(runs, fwd, bufs, x, train, keys, 0)
    wl = [w for w, f in zip(ws, flags) if f]
    grads = iter(torch.autograd.grad(logits.sum(), wl))
    return [(next(grads) * w.detach()).abs() if f else None for w, f in zip(ws, flags)]


def masks(
    family,
    runs,
    params,
    buffers,
    in_shape,
    flags,
    keys,
    sparsity,
    scope="global",
    rounds=ROUNDS,
    train=False,
    dtype=torch.float64,
) -> list[torch.Tensor | None]:
    """Boolean keep-masks after ``rounds`` rounds of the exponential schedule."""
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    target = per_model(sparsity, params[0].shape[0])
    dens = [1.0 - s for s in target]
    keep: list[torch.Tensor | None] = [
        torch.ones_like(p, dtype=torch.bool) if f else None for p, f in zip(params, flags)
    ]
    for k in range(1, rounds + 1):
        sc = scores(family, runs, params, buffers, in_shape, flags, keys, keep, train, dtype)
        sc = [
            None if s is None else torch.where(kp, s, torch.full_like(s, -torch.inf))
            for s, kp in zip(sc, keep)
        ]
        s_k = target if k == rounds else [1.0 - d ** (k / rounds) for d in dens]
        keep = masks_from_scores(sc, s_k, scope)
    return keep
