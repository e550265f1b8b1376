"""Length and correlation maps measured on finite random networks (000 Fig. 1): of one layer
(:func:`one_layer_maps`) and of every hidden layer (:func:`layer_correlations`).

For each probe, a pair of pre-activation vectors ``h_a, h_b`` of the input
dimension ``d`` with *exactly* mean square ``q`` and correlation ``c`` is fed
through ``phi`` and one random dropout layer of every model of a shard,
``z = (1/ρ) W (p ⊙ φ(h)) + b`` (000 Eq. 1, independent masks for a and b).  The
measured ``q_out = mean_i z_i²`` and ``c_out = mean_i z_a,i z_b,i / sqrt(q_a q_b)``
are the simulated counterparts of 000 Eqs. 2–4.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..nets import activations, fc


def probe_inputs(
    q: np.ndarray, c: np.ndarray, d: int, seed: int = 0, dtype=torch.float64
) -> torch.Tensor:
    """``[2P, d]``: rows 2p, 2p+1 have mean square ``q[p]`` and correlation ``c[p]`` exactly."""
    g = torch.Generator(device="cpu").manual_seed(seed)  # drawn on the CPU: the same on any device
    out = []
    for qp, cp in zip(np.asarray(q, float), np.asarray(c, float)):
        z1, z2 = torch.randn(2, d, generator=g, dtype=torch.float64, device="cpu")
        z1 = z1 / z1.pow(2).mean().sqrt()
        z2 = z2 - (z2 @ z1) / (z1 @ z1) * z1  # orthogonal to z1
        z2 = z2 / z2.pow(2).mean().sqrt()
        s = np.sqrt(max(0.0, 1.0 - cp * cp))
        out += [np.sqrt(qp) * z1, np.sqrt(qp) * (cp * z1 + s * z2)]
    return torch.stack(out).to(dtype)


def one_layer_maps(params: list[torch.Tensor], runs, probes_q, probes_c) -> pd.DataFrame:
    """Measured (q_in, c_in) -> (q_out, c_out) of the first layer of every model.

    Each model gets its own probe vectors (seeded by its run key), so averaging
    over models averages over both weights and inputs.  Returns one row per
    (model index, probe) with columns ``model, probe, q_in, c_in, q_out, c_out``.
    """
    w0 = params[0]
    m, _, d = w0.shape
    act = runs[0].activation
    h = torch.stack([probe_inputs(probes_q, probes_c, d, r.key, w0.dtype) for r in runs]).to(
        w0.device
    )
    x = activations.get(act)(h)
    keys = torch.tensor([r.key for r in runs], device=w0.device, dtype=torch.int64)
    keep = torch.tensor([r.keep_rate for r in runs], device=w0.device, dtype=w0.dtype)
    with torch.no_grad():
        z = fc.preactivations(params, x, act, keep, keys, step=0)[0]  # [M, 2P, N]
    za, zb = z[:, 0::2], z[:, 1::2]
    qa, qb = za.pow(2).mean(-1), zb.pow(2).mean(-1)
    c_out = (za * zb).mean(-1) / (qa * qb).sqrt()
    p = len(probes_q)
    return pd.DataFrame(
        {
            "model": np.repeat(np.arange(m), p),
            "probe": np.tile(np.arange(p), m),
            "q_in": np.tile(np.asarray(probes_q, float), m),
            "c_in": np.tile(np.asarray(probes_c, float), m),
            "q_out": (0.5 * (qa + qb)).double().cpu().numpy().ravel(),
            "c_out": c_out.double().cpu().numpy().ravel(),
        }
    )


def layer_correlations(
    params: list[torch.Tensor], runs, q0: float, c0: float, dropout: bool = True
) -> pd.DataFrame:
    """The length and correlation of a pair of inputs at every hidden layer of every model
    (000 Eqs. 2-4 iterated, as ``sigprop.theory.meanfield.trajectory`` predicts them).

    Each model gets its own pair of first-layer inputs, ``phi`` of pre-activations with mean
    square ``q0`` and correlation ``c0`` exactly (:func:`probe_inputs`, seeded by the run key),
    and its own dropout masks (independent for a and b) when ``dropout``.  Returns one row per
    (model, layer ``l`` = 1..L) with ``q_a, q_b, q`` (their mean) and ``c``: the measured
    ``mean_i z^l_a,i z^l_b,i / sqrt(q_a q_b)`` (the logits are left out)."""
    w0 = params[0]
    m, _, d = w0.shape
    act = runs[0].activation
    h = torch.stack([probe_inputs([q0], [c0], d, r.key, w0.dtype) for r in runs]).to(w0.device)
    x = activations.get(act)(h)
    keys = torch.tensor([r.key for r in runs], device=w0.device, dtype=torch.int64)
    keep = (
        torch.tensor([r.keep_rate for r in runs], device=w0.device, dtype=w0.dtype)
        if dropout
        else None
    )
    with torch.no_grad():
        zs = fc.preactivations(params, x, act, keep, keys if dropout else None, step=0)[:-1]
    frames = []
    for layer, z in enumerate(zs, start=1):
        za, zb = z[:, 0], z[:, 1]
        qa, qb = za.pow(2).mean(-1), zb.pow(2).mean(-1)
        c = (za * zb).mean(-1) / (qa * qb).sqrt()
        frames.append(
            pd.DataFrame(
                {
                    "model": np.arange(m),
                    "layer": layer,
                    "q_a": qa.double().cpu().numpy(),
                    "q_b": qb.double().cpu().numpy(),
                    "q": (0.5 * (qa + qb)).double().cpu().numpy(),
                    "c": c.double().cpu().numpy(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
