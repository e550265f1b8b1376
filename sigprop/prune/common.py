"""What is pruned, and the masked forward / loss every data-dependent scorer shares.

Paper: 003 (Hayou et al. 2021, arXiv:2002.08797, "Robust Pruning at Initialization"),
Sec. 2.1 Eq. (4): a pruned net computes
``y^l = F_l(delta^l o W^l, y^{l-1}) + B^l`` -- the mask ``delta`` multiplies the
*weights* ``W^l`` of every layer; biases ``B^l`` are never pruned.

Which parameters are prunable (:func:`prunable`)
------------------------------------------------
The paper does not list the pruned layers.  Its authors' code
(``sAviOr287/imagenet_ICLR``, ``pruner/SNIP.py`` and ``pruner/GraSP.py``, with
``"exception": "-1"`` in every CIFAR config, i.e. no layer excepted) masks the
``weight`` of every ``nn.Conv2d`` and ``nn.Linear``: the first convolution, the
1x1 projection shortcuts, every block convolution and the final classifier.
SynFlow's code (Tanaka et al. 2020, ``Utils/generator.py::masked_parameters``
with its defaults ``bias=False, batchnorm=False``) does the same.  So here:

* prunable: every convolution weight (``[M, out, in, kh, kw]``, ``ndim >= 4``)
  and every linear / fully connected weight matrix (``[M, out, in]``);
* not prunable: biases (conv biases ``[M, out]``; linear biases, stored
  ``[M, 1, out]`` by :mod:`sigprop.nets.fc` and :mod:`sigprop.nets.stacked`),
  BatchNorm ``gamma`` / ``beta`` (``[M, C]``), anything with ``ndim <= 2``.

A 3-D tensor is a weight matrix unless it is a linear bias ``[M, 1, out]``.
Since shapes alone cannot always tell (a readout weight with one output is also
``[M, 1, n]``), the rule uses each family's parameter layout:

* ``fc``: parameters alternate ``W_0, b_0, W_1, b_1, ...`` (:func:`sigprop.nets.fc.init_params`):
  even positions are prunable;
* ``resnet_fc``, ``stable_resnet_fc``, ``densenet_fc`` (:mod:`sigprop.nets.residual`)
  have no biases: every parameter is a weight matrix;
* every other family (the stacked conv families of :mod:`sigprop.nets.convnets`,
  the per-model fallback): a 3-D ``[M, 1, k]`` tensor that directly follows a
  prunable 3-D weight ``[M, k, *]`` is that layer's bias (the stacked bodies
  always create a linear layer's bias right after its weight); every other 3-D
  tensor is a weight.

``tests/test_pruners.py`` checks this rule against the plain ``nn.Module``
versions of the families (``sigprop.nets.reference``): the flags are exactly the
``nn.Conv2d`` / ``nn.Linear`` weights, as in the authors' code.

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

NO_BIAS_FAMILIES = ("resnet_fc", "stable_resnet_fc", "densenet_fc")

# Random streams of sigprop.nets.rng (which uses 1..4); distinct large constants.
STREAM_PRUNE_RANDOM = 0x50520001
STREAM_PRUNE_DATA = 0x50520002


def prunable(family_name: str, params: list[torch.Tensor]) -> list[bool]:
    """Flags aligned with ``params``: True for conv / linear weights (see the module docstring)."""
    if family_name == "fc":
        return [i % 2 == 0 for i in range(len(params))]
    if family_name in NO_BIAS_FAMILIES:
        return [p.dim() >= 3 for p in params]
    flags: list[bool] = []
    for i, p in enumerate(params):
        if p.dim() >= 4:
            flags.append(True)
        elif p.dim() == 3:
            prev = params[i - 1] if i > 0 else None
            is_bias = (
                p.shape[1] == 1
                and prev is not None
                and flags[i - 1]
                and prev.dim() == 3
                and prev.shape[1] == p.shape[2]
            )
            flags.append(not is_bias)
        else:
            flags.append(False)
    return flags


def model_keys(runs, keys, device) -> torch.Tensor:
    """Per-model random keys ``[M]`` (int64): ``keys`` as given, or each run's :attr:`RunSpec.key`."""
    if keys is None:
        keys = [r.key for r in runs]
    return torch.as_tensor(keys, dtype=torch.int64, device=device)


def get_family(family):
    """A family object from itself or its name (:data:`sigprop.nets.families.FAMILIES`)."""
    if isinstance(family, str):
        from ..nets import families

        return families.get(family)
    return family


def masked(params, masks):
    """``[p * m if m is not None else p]``: the masked weights of 003 Eq. (4)."""
    return [p if m is None else p * m for p, m in zip(params, masks)]


def loss_sum(family, runs, params, buffers, x, y, train, keys, temperature=1.0):
    """Sum over the M models of each model's mean cross-entropy on its own batch.

    ``x``: ``[M, B, *in_shape]``, ``y``: ``[M, B]``.  The models of a shard are
    independent, so the gradient of this sum w.r.t. model ``m``'s parameters is
    model ``m``'s own gradient.  ``temperature``: logits are divided by it
    (GraSP's ``T``).  Updated BatchNorm buffers are discarded.
    """
    logits, _ = family.apply(runs, params, buffers, x, train, keys, 0)
    if temperature != 1.0:
        logits = logits / temperature
    m, b, c = logits.shape
    ce = F.cross_entropy(logits.reshape(m * b, c), y.reshape(-1).long(), reduction="none")
    return ce.view(m, b).mean(1).sum()


def as_input(x, like: torch.Tensor) -> torch.Tensor:
    """``x`` on ``like``'s device, floating inputs in ``like``'s dtype."""
    x = torch.as_tensor(x, device=like.device)
    return x.to(like.dtype) if x.is_floating_point() else x
