"""The measurement: one random dropout layer per model maps probe inputs of known length q and
correlation c (Huang et al. 2019, arXiv:1912.09132, Fig. 1)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import tables
from ...runs import settings
from .theory import c_probe_q


def measure(
    shard, params, buffers, p, device: str = "cpu", data_path=None, masks_path=None
) -> pd.DataFrame:
    """Rows ``metric in {qmap_in, qmap_out, cmap_in, cmap_out, cmap_q}`` per run and probe."""
    from ...measure.maps import one_layer_maps  # torch: imported only in the job

    q_probes = np.asarray(p.measure.q_probes, float)
    c_probes = np.asarray(p.measure.c_probes, float)
    runs = shard.runs
    frames = []
    qmap = one_layer_maps(params, runs, q_probes, np.full_like(q_probes, 0.5))
    frames.append(
        qmap.assign(qmap_in=qmap.q_in, qmap_out=qmap.q_out)[
            ["model", "probe", "qmap_in", "qmap_out"]
        ]
    )
    for s in settings(runs):  # correlation maps at each setting's own q*
        idx = [
            i
            for i, r in enumerate(runs)
            if r.keep_rate == s["keep_rate"]
            and r.sigma_w2 == s["sigma_w2"]
            and r.sigma_b2 == s["sigma_b2"]
        ]
        q_c = c_probe_q(s, p.measure.q_cap)
        cm = one_layer_maps(
            [w[idx] for w in params], [runs[i] for i in idx], np.full_like(c_probes, q_c), c_probes
        )
        cm["model"] = np.asarray(idx)[cm.model.to_numpy()]
        frames.append(
            cm.assign(cmap_in=cm.c_in, cmap_out=cm.c_out, cmap_q=q_c)[
                ["model", "probe", "cmap_in", "cmap_out", "cmap_q"]
            ]
        )
    long = pd.concat([f.melt(id_vars=["model", "probe"], var_name="metric") for f in frames])
    long = long.dropna(subset=["value"]).assign(layer=1)
    return tables.run_rows(shard, long, device, order=("probe",))
