"""Magnitude-based pruning (MBP, 003 Sec. 2.1 and App. E): score ``|W|``.

Data independent ("zero-shot"): the mask keeps the weights with
``|W^l_i| >= t_s``, ``t_s`` the ``k_s``-th order statistic of all ``|W|``
(003 App. E; thresholding in :mod:`sigprop.prune.threshold`).

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import torch


def scores(params, flags) -> list[torch.Tensor | None]:
    """Keep scores ``|W|`` for the prunable ``params`` (None elsewhere)."""
    return [p.detach().abs() if f else None for p, f in zip(params, flags)]
