"""SBP-SR: sensitivity-based pruning of a Stable ResNet (003 Sec. 3-4).

003 Sec. 4.2: "We call our pruning algorithm for ResNet SBP-SR (SBP with Stable
Resnet)".  SBP is the SNIP criterion ``|W dL/dW|`` with one global threshold
(Sec. 2.2); the Stable ResNet is the re-parameterization of Prop. 2 / Eq. (9),
``y^l = y^{l-1} + F(W^l, y^{l-1}) / sqrt(L)`` with ``L`` the number of blocks
(ResNet32: 15), the families ``stable_resnet32/50/104`` (and ``stable_resnet_fc``).
The Stable ResNet is both scored and trained.  There is **no** rescaling
trick: Prop. 3 ("Resnet live on the EOC even after pruning") says a pruned
ResNet needs none, and in the authors' code (``main_prune_non_imagenet.py``)
the one flag ``--scaled_init`` builds the Stable ResNet
(``resnet(..., scaled=True)``, branch divided by ``sqrt(sum(num_blocks))``)
while the rescaled weights it also computes are applied only when
``network == 'vgg'``.  So SBP-SR = SNIP
scores (:mod:`sigprop.prune.snip`, same data and BatchNorm defaults) on a
``stable_`` family; a non-stable family is refused.

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

from . import snip


def check_family(name: str) -> None:
    if not name.startswith("stable_"):
        raise ValueError(
            f"SBP-SR prunes a Stable ResNet (003 Prop. 2): pass a stable_ family, got '{name}'"
        )


def scores(family, runs, params, buffers, x, y, flags, keys, train=True):
    """SNIP keep scores on a Stable ResNet (see the module docstring)."""
    check_family(family.name)
    return snip.scores(family, runs, params, buffers, x, y, flags, keys, train)
