"""SNIP / sensitivity-based pruning (SBP, 003 Sec. 2.2): score ``|W dL/dW|``.

003 Sec. 2.2: "We randomly sample a batch and compute the gradients of the loss
with respect to each weight.  The mask is then defined by
``delta^l_i = 1(|W^l_i dL/dW^l_i| >= t_s)``" with one global threshold.  As in
SNIP (Lee et al. 2018) and the authors' ``pruner/SNIP.py``, the score is taken
as ``|dL/dc|`` at ``c = 1`` for a multiplicative mask ``c`` in the masked forward
``apply(runs, [W * c, ...])``, which equals ``|W o dL/dW|``.

Defaults (authors' code ``sAviOr287/imagenet_ICLR``; 003 App. is silent):

* data: one class-balanced batch, ``samples_per_class = 10`` in every CIFAR
  config (100 images on CIFAR-10), sorted by class
  (:func:`sigprop.prune.data.class_balanced_batch`);
* loss: mean cross-entropy, no temperature;
* BatchNorm: training mode (batch statistics) -- the module is never put in
  ``eval()`` before scoring (``bn_mode='train'`` here; ``'eval'`` uses the
  running statistics, which at initialization makes BN the identity up to
  ``1/sqrt(1 + eps)``: that is the BN-free VGG the authors score when
  ``--bn`` is not given).

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import torch

from .common import loss_sum


def scores(
    family, runs, params, buffers, x, y, flags, keys, train=True
) -> list[torch.Tensor | None]:
    """Keep scores ``|W o dL/dW|`` per model (None for non-prunable parameters)."""
    cs = [torch.ones_like(p, requires_grad=True) if f else None for p, f in zip(params, flags)]
    fwd = [p.detach() if c is None else p.detach() * c for p, c in zip(params, cs)]
    loss = loss_sum(family, runs, fwd, buffers, x, y, train, keys)
    grads = iter(torch.autograd.grad(loss, [c for c in cs if c is not None]))
    return [None if c is None else next(grads).abs() for c in cs]
