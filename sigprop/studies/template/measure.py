"""The measurement: q^l of every hidden layer for inputs of mean square q^0 (Huang et al. 2019,
arXiv:1912.09132, Eq. 2)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import tables


def measure(
    shard, params, buffers, p, device="cpu", data_path=None, masks_path=None
) -> pd.DataFrame:
    """Rows ``metric = "q"`` per run and hidden layer (``layer`` 1..L)."""
    import torch  # only in the job

    from ...measure.maps import probe_inputs
    from ...nets import fc

    runs = shard.runs
    d = params[0].shape[2]
    q0 = np.full(p.measure.inputs, p.measure.q0)
    x = torch.stack(
        [probe_inputs(q0, np.zeros_like(q0), d, r.key, params[0].dtype) for r in runs]
    ).to(params[0].device)  # [M, 2 inputs, d]
    with torch.no_grad():
        hidden = fc.preactivations(params, x, runs[0].activation)[:-1]
    q = torch.stack([z.pow(2).mean(dim=(1, 2)) for z in hidden], dim=1)  # [M, L]
    m, n_layers = q.shape
    long = pd.DataFrame(
        {
            "model": np.repeat(np.arange(m), n_layers),
            "layer": np.tile(np.arange(1, n_layers + 1), m),
            "metric": "q",
            "value": q.double().cpu().numpy().ravel(),
        }
    )
    return tables.run_rows(shard, long, device, order=("layer",))
