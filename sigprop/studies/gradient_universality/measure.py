"""The measurement: per-layer gradient metrics (Huang et al. 2019, arXiv:1912.09132, Eq. 8)
of a shard's random dropout networks at their mean-field fixed point, as in the study
``gradient_metrics``."""

from __future__ import annotations

import pandas as pd


def measure(
    shard, params, buffers, p, device: str = "cpu", data_path=None, masks_path=None
) -> pd.DataFrame:
    """Per run and layer ``1..L``: ``g_aa``, ``g_ab``, ``g_ab_abs`` (g~_ab), ``g_ab_signed``
    (000 Eq. 8), exactly as the study ``gradient_metrics``
    (:func:`sigprop.measure.gradients.metric_rows`)."""
    from ...measure.gradients import metric_rows  # torch: imported only in the job

    return metric_rows(shard, params, device)
