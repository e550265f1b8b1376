"""The measurement: Jacobian norm moments of each model at one fixed input (Littwin & Wolf 2020,
arXiv:2001.10460, Figs. 4-5), or, beyond the paper, the change of its empirical NTK during a
short SGD run."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import tables


def measure(
    shard, params, buffers, p, device: str = "cpu", data_path=None, masks_path=None
) -> pd.DataFrame:
    """Runs with ``steps == 1`` (Figs. 4-5): at initialization, rows per run ``f``,
    ``jac_sq_total`` (layer 0), ``jac_sq`` (layer k, probe h: matrix W^{k,h}; h = 0 outside the
    ResNet) and, for the ResNet, ``f_reduced`` (layer k) and ``f_path`` (layer k, probe h: the
    output's paths through W^{k,h}, 001 Eq. 36).  Runs with ``steps > 1`` (kernel
    regime, beyond the paper): :func:`measure_kernel`."""
    if shard.runs[0].steps > 1:
        return measure_kernel(shard, params, p, device, data_path)
    from .jacobians import jacobian_moments  # torch: imported only in the job

    runs = shard.runs
    arch = runs[0].arch
    r = jacobian_moments(
        arch, runs, params, chunk=int(p.measure.chunk), chunk_bytes=int(p.measure.chunk_mb) * 2**20
    )
    m = len(runs)
    frames = [
        pd.DataFrame({"model": np.arange(m), "layer": 0, "probe": 0, "metric": k, "value": r[key]})
        for k, key in (("f", "f"), ("jac_sq_total", "jac_sq_total"))
    ]
    nj = r["jac_sq"].shape[1]
    frames.append(
        pd.DataFrame(
            {
                "model": np.repeat(np.arange(m), nj),
                "layer": np.tile(r["layer"], m),
                "probe": np.tile(r["sub"], m),
                "metric": "jac_sq",
                "value": r["jac_sq"].ravel(),
            }
        )
    )
    if "f_reduced" in r:
        L = r["f_reduced"].shape[1]
        frames.append(
            pd.DataFrame(
                {
                    "model": np.repeat(np.arange(m), L),
                    "layer": np.tile(np.arange(1, L + 1), m),
                    "probe": 0,
                    "metric": "f_reduced",
                    "value": r["f_reduced"].ravel(),
                }
            )
        )
    if "f_path" in r:  # f^k through W^{k,h} (001 Eq. 36), for Thm. 3
        frames.append(
            pd.DataFrame(
                {
                    "model": np.repeat(np.arange(m), nj),
                    "layer": np.tile(r["layer"], m),
                    "probe": np.tile(r["sub"], m),
                    "metric": "f_path",
                    "value": r["f_path"].ravel(),
                }
            )
        )
    long = pd.concat(frames, ignore_index=True)
    return tables.run_rows(shard, long, device, order=("layer", "probe"))


def measure_kernel(shard, params, p, device: str = "cpu", data_path=None) -> pd.DataFrame:
    """Beyond 001: relative change of the empirical NTK on ``measure.kernel_probes`` test inputs
    over ``steps`` SGD steps (batch ``batch_size``, normalized step ``lr``) on the run's data set,
    the prepared file ``data_path`` the workflow gives the job
    (:func:`sigprop.studies.jacobian_moments.jacobians.train_kernel_change`).  Rows per run (layer 0, probe 0):
    ``ntk_rel_change``, ``ntk_diag_0``, ``lr``, ``loss_init``, ``loss_final``, ``diverged``."""
    import torch

    from ...data.prepare import load
    from .jacobians import train_kernel_change

    runs = shard.runs
    r0 = runs[0]
    if data_path is None:
        raise ValueError(
            f"shard {shard.shard_id}: the kernel-regime measurement trains on the "
            "shard's prepared data set, and no data_path was given"
        )
    ds = load(data_path)
    dev = params[0].device
    dtype = params[0].dtype
    xtr = torch.as_tensor(ds.x_train, device=dev).reshape(len(ds.x_train), -1).to(dtype)
    ytr = torch.as_tensor(ds.y_train, device=dev)
    n_probes = int(p.measure.kernel_probes)
    xpr = torch.as_tensor(ds.x_test[:n_probes], device=dev).reshape(n_probes, -1).to(dtype)
    eta = torch.tensor([r.lr for r in runs], dtype=torch.float64, device=dev)
    if len({r.batch_size for r in runs}) > 1:
        raise ValueError("kernel regime: a shard's runs must share their batch size")
    res = train_kernel_change(r0.arch, runs, params, xtr, ytr, xpr, r0.steps, r0.batch_size, eta)
    m = len(runs)
    long = pd.concat(
        [
            pd.DataFrame({"model": np.arange(m), "layer": 0, "probe": 0, "metric": k, "value": v})
            for k, v in res.items()
        ],
        ignore_index=True,
    )
    return tables.run_rows(shard, long, device, order=("layer", "probe"))
