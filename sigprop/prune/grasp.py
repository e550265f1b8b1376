"""GraSP (Wang et al. 2020), the Hessian-based pruner 003 compares against (Sec. 2.1, 4.2).

GraSP's importance of the weights ``theta`` is ``S(-theta) = -theta o H g``
(Wang et al. 2020, Eq. 8), ``g = dL/dtheta``, ``H`` the Hessian of the loss, and
it removes the weights with the *largest* ``S`` (those whose removal reduces the
gradient norm the least).  003 uses it through the authors' ``pruner/GraSP.py``
(a copy of Wang et al.'s code): ``grads = -W * W.grad`` after backpropagating
``z = g_stop . grad_f``, then ``topk`` of these scores are removed.  Here
:func:`grasp_scores` returns ``S = -theta o Hg`` with that sign, and
:func:`scores` returns the keep score ``-S = theta o Hg`` (lowest removed), so
all pruners share one thresholding rule.

Details as in the authors' / Wang et al.'s code:

* data: the class-balanced batch (``samples_per_class = 10`` on CIFAR),
  split into ``splits = 2`` consecutive halves (the batch is sorted by class, so
  the halves hold different classes, as there);
* logits divided by the temperature ``T = 200``; mean cross-entropy per half;
* ``g = sum_halves dL_h/dtheta`` (no graph), then
  ``Hg = sum_halves d(g_stop . dL_h/dtheta)/dtheta`` -- a Hessian-vector
  product by double backward (``torch.autograd.grad`` twice);
* only the prunable weights are differentiated (``H`` is their block of the
  Hessian, ``g`` their gradient), other parameters are constants;
* BatchNorm in training mode (the module is not put in ``eval()``; the
  ``.eval()`` in the code is commented out).

The global normalization by ``|sum S|`` in the code does not change the order
and is not applied.
"""

from __future__ import annotations

import torch

from .common import loss_sum

TEMPERATURE = 200.0
SPLITS = 2


def _halves(x, y, splits):
    return list(zip(torch.tensor_split(x, splits, dim=1), torch.tensor_split(y, splits, dim=1)))


def grasp_scores(
    family,
    runs,
    params,
    buffers,
    x,
    y,
    flags,
    keys,
    train=True,
    temperature=TEMPERATURE,
    splits=SPLITS,
) -> list[torch.Tensor | None]:
    """``S = -theta o Hg`` for the prunable parameters (largest ``S`` removed first)."""
    ws = [p.detach().requires_grad_(True) if f else p.detach() for p, f in zip(params, flags)]
    wl = [w for w, f in zip(ws, flags) if f]
    parts = _halves(x, y, splits)
    g = [torch.zeros_like(w) for w in wl]
    for xh, yh in parts:
        gh = torch.autograd.grad(
            loss_sum(family, runs, ws, buffers, xh, yh, train, keys, temperature), wl
        )
        g = [a + b for a, b in zip(g, gh)]
    hg = [torch.zeros_like(w) for w in wl]
    for xh, yh in parts:
        gh = torch.autograd.grad(
            loss_sum(family, runs, ws, buffers, xh, yh, train, keys, temperature),
            wl,
            create_graph=True,
        )
        z = sum((a * b).sum() for a, b in zip(g, gh))
        hg = [a + b for a, b in zip(hg, torch.autograd.grad(z, wl))]
    it = iter(-w.detach() * h for w, h in zip(wl, hg))
    return [next(it) if f else None for f in flags]


def scores(
    family,
    runs,
    params,
    buffers,
    x,
    y,
    flags,
    keys,
    train=True,
    temperature=TEMPERATURE,
    splits=SPLITS,
) -> list[torch.Tensor | None]:
    """Keep scores ``theta o Hg = -S`` (see the module docstring)."""
    s = grasp_scores(family, runs, params, buffers, x, y, flags, keys, train, temperature, splits)
    return [None if v is None else -v for v in s]
