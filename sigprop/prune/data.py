"""The scoring batch of the data-dependent pruners (SNIP, GraSP, SBP-SR).

003 gives no detail beyond "we use a setup similar to (Wang et al., 2020)"
(Sec. 4.2).  The authors' code (``sAviOr287/imagenet_ICLR``,
``GraSP_fetch_data`` in ``pruner/SNIP.py`` / ``pruner/GraSP.py``, as in Wang et
al.'s GraSP code) draws ``samples_per_class`` examples of every class from the
shuffled training set (10 per class in all its CIFAR configs: 100 images on
CIFAR-10) and returns them grouped by class, classes in increasing order.  GraSP
then splits this batch into two halves, which therefore hold different classes.
"""

from __future__ import annotations

import torch

from ..nets import rng
from .common import STREAM_PRUNE_DATA

SAMPLES_PER_CLASS = 10


def class_balanced_batch(
    x, y, per_class: int = SAMPLES_PER_CLASS, key=0, n_classes: int | None = None
):
    """``per_class`` random examples of each class, grouped by class (see the module docstring).

    ``x``: ``[N, *in_shape]``, ``y``: ``[N]`` integer labels (a training set).
    ``key``: an int (one draw: returns ``x [C*per_class, *in_shape]``,
    ``y [C*per_class]``) or ``M`` keys, e.g. the runs' keys (one independent draw
    per model: ``x [M, C*per_class, *in_shape]``, ``y [M, C*per_class]``).  The
    draw of a key is a hashed random order of the ``N`` examples
    (:mod:`sigprop.nets.rng`), so it depends on the key and the data only.
    """
    dev = x.device if torch.is_tensor(x) else torch.device("cpu")  # never the default device
    x = torch.as_tensor(x, device=dev)
    y = torch.as_tensor(y, device=dev).long()
    single = isinstance(key, int)
    keys = torch.as_tensor([key] if single else key, dtype=torch.int64, device=x.device).reshape(-1)
    c = int(y.max()) + 1 if n_classes is None else int(n_classes)
    counts = torch.bincount(y, minlength=c)
    if int(counts.min()) < per_class:
        raise ValueError(
            f"class {int(counts.argmin())} has {int(counts.min())} examples, "
            f"fewer than per_class={per_class}"
        )
    idx = torch.arange(y.shape[0], device=x.device)
    perm = torch.argsort(rng.hash_bits(keys, STREAM_PRUNE_DATA, idx), dim=1, stable=True)
    by_class = torch.gather(perm, 1, torch.argsort(y[perm], dim=1, stable=True))
    start = torch.cumsum(counts, 0) - counts
    take = (start.view(-1, 1) + torch.arange(per_class, device=x.device)).reshape(-1)
    sel = by_class[:, take]
    xb, yb = x[sel], y[sel]
    return (xb[0], yb[0]) if single else (xb, yb)
