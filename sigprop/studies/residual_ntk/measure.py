"""The measurement: the empirical NTK over the hidden weights of each model at Fig. 2's probe
inputs and on the diagonal (Littwin & Wolf 2020, arXiv:2001.10460, Eq. 1, Fig. 2)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import tables
from .theory import angles


def measure(
    shard, params, buffers, p, device: str = "cpu", data_path=None, masks_path=None
) -> pd.DataFrame:
    """Rows ``ntk`` (probe ``j``, column ``theta``) and ``ntk_diag`` (probe 0) per model."""
    from . import ntk  # torch: imported only in the job

    theta = angles(p.measure.n_angles)
    dim, dtype, dev = params[0].shape[-1], params[0].dtype, params[0].device
    x1, x2 = ntk.fig2_probe_inputs(theta, dim, float(p.measure.fig2_input_dim), dtype)
    xd = ntk.embed([[1.0]], dim, 1.0, dtype)
    g = ntk.empirical_ntk(shard.runs, params, x1.to(dev), x2.to(dev))[:, 0, :]
    gd = ntk.empirical_ntk(shard.runs, params, xd.to(dev), xd.to(dev))[:, 0, 0]
    m, a = g.shape
    long = pd.concat(
        [
            pd.DataFrame(
                {
                    "model": np.repeat(np.arange(m), a),
                    "metric": "ntk",
                    "probe": np.tile(np.arange(a), m),
                    "theta": np.tile(theta, m),
                    "value": g.ravel(),
                }
            ),
            pd.DataFrame(
                {
                    "model": np.arange(m),
                    "metric": "ntk_diag",
                    "probe": 0,
                    "theta": np.nan,
                    "value": gd,
                }
            ),
        ],
        ignore_index=True,
    )
    return tables.run_rows(shard, long, device, order=("probe",))
