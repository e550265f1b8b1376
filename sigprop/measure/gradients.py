"""Per-layer gradient metrics of random dropout networks at initialization (000 Figs. 2-3).

For every model of a shard, a pair of inputs ``a, b`` at the model's mean-field
fixed point (pre-activations ``h_a, h_b`` of the input dimension with mean square
exactly ``q*`` and correlation exactly ``c*``, fed through ``phi`` as in
:mod:`sigprop.measure.maps`) is propagated through the depth-``L`` hidden stack
(000 Eq. 1, independent dropout masks for ``a`` and ``b``, the readout layer
ignored).  The output is ``y = z^L`` (the last hidden pre-activation), the labels
are zero and the loss is ``E_a = sum_i (z^L_{a,i})^2``.  ``delta^l = dE/dz^l`` is
obtained by autograd through the SAME weights and masks as the forward pass (no
gradient-independence assumption), and with ``x^{l-1}`` the input of layer ``l``
(mask and ``1/rho`` included, so ``dE/dW^l = delta^l (x^{l-1})^T``) the metrics
of 000 Eq. (8) are exact means over the entries of the weight gradient::

    g_aa^l     = (|delta_a^l|^2 / N_l) (|x_a^{l-1}|^2 / N_{l-1})
    g_ab^l     = |(delta_a^l . delta_b^l / N_l) (x_a^{l-1} . x_b^{l-1} / N_{l-1})|
    g~_ab^l    = (sum_i |delta_a,i delta_b,i| / N_l) (sum_j |x_a,j x_b,j| / N_{l-1})

(``N_0`` is the input dimension).  ``g_aa`` is reported as the mean of the
a- and b-inputs' values (two equivalent samples of the same quantity).

:func:`metric_rows` gives a shard's metrics as run-table rows (the measurement of the studies
``gradient_metrics`` and ``gradient_universality``); :mod:`sigprop.measure.gradient_runs` reads
them back.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from .. import tables
from ..nets import activations, rng
from .maps import probe_inputs

METRICS = ("g_aa", "g_ab", "g_ab_abs", "g_ab_signed")


def fixed_point_inputs(runs, d: int, dtype=torch.float64) -> torch.Tensor:
    """``[M, 2, d]`` pre-activations with mean square q* and correlation c* of each run."""
    from ..theory import meanfield

    out = []
    for r in runs:
        q = float(meanfield.q_star(r.sigma_w2, r.sigma_b2, r.keep_rate, r.activation))
        c = float(meanfield.c_star(r.sigma_w2, r.sigma_b2, r.keep_rate, r.activation))
        if not (np.isfinite(q) and np.isfinite(c)):
            raise ValueError(f"run {r.run_id}: no finite fixed point (q*={q}, c*={c})")
        out.append(probe_inputs(np.array([q]), np.array([min(c, 1.0)]), d, r.key, dtype))
    return torch.stack(out)


def forward_backward(
    hidden: list[torch.Tensor],
    h0: torch.Tensor,
    act: str,
    keep: torch.Tensor,
    keys: torch.Tensor,
    step: int = 0,
):
    """Inputs ``x^{l-1}`` and deltas ``delta^l`` of every hidden layer, ``[M, B, N]`` each.

    ``hidden``: ``[W_0, b_0, ..., W_{L-1}, b_{L-1}]`` (the readout left out);
    ``h0``: ``[M, B, d]`` pre-activations of the data (``x^0 = mask * phi(h0) / rho``).
    Masks are those of :func:`sigprop.nets.fc.preactivations` for the same keys
    and step.  ``delta^l = dE/dz^l`` with ``E = sum (z^L)^2`` per input, by autograd.
    """
    phi = activations.get(act)
    n = len(hidden) // 2
    shapes = [(h0.shape[1], hidden[2 * i].shape[2]) for i in range(n)]
    masks = rng.dropout_masks(keys, step, shapes, keep)
    inv_keep = (1.0 / keep).view(-1, 1, 1).to(h0.dtype)
    xs, taps = [], []
    with torch.enable_grad():
        y = phi(h0)
        for layer in range(n):
            w, b = hidden[2 * layer].detach(), hidden[2 * layer + 1].detach()
            x = y * (masks[layer].to(h0.dtype) * inv_keep)
            tap = torch.zeros(
                x.shape[0],
                x.shape[1],
                w.shape[1],
                dtype=h0.dtype,
                device=h0.device,
                requires_grad=True,
            )  # dE/dtap = dE/dz^l
            z = torch.baddbmm(b, x, w.transpose(1, 2)) + tap
            xs.append(x.detach())
            taps.append(tap)
            y = phi(z)
        loss = z.pow(2).sum()  # sum of E_a over models and inputs: each z_a only feeds E_a
        deltas = torch.autograd.grad(loss, taps)
    return xs, list(deltas)


def layer_metrics(xs: list[torch.Tensor], deltas: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    """000 Eq. (8) per model and layer from inputs and deltas: ``[M, L]`` each."""
    out = {k: [] for k in METRICS}
    for x, d in zip(xs, deltas):
        xa, xb, da, db = x[:, 0], x[:, 1], d[:, 0], d[:, 1]
        gaa_a = da.pow(2).mean(-1) * xa.pow(2).mean(-1)
        gaa_b = db.pow(2).mean(-1) * xb.pow(2).mean(-1)
        signed = (da * db).mean(-1) * (xa * xb).mean(-1)
        out["g_aa"].append(0.5 * (gaa_a + gaa_b))
        out["g_ab_signed"].append(signed)
        out["g_ab"].append(signed.abs())
        out["g_ab_abs"].append((da * db).abs().mean(-1) * (xa * xb).abs().mean(-1))
    return {k: torch.stack(v, dim=1) for k, v in out.items()}


def gradient_metrics(params: list[torch.Tensor], runs, step: int = 0) -> dict[str, np.ndarray]:
    """Per-layer metrics of every model (``[M, L]`` float64 numpy arrays, column ``l-1`` = layer ``l``)."""
    hidden = params[:-2]
    dev = hidden[0].device
    hidden = [p.to(torch.float64) for p in hidden]
    d = hidden[0].shape[2]
    act = runs[0].activation
    if any(r.activation != act for r in runs):
        raise ValueError("a shard's models must share their activation")
    h0 = fixed_point_inputs(runs, d).to(dev)
    keys = torch.tensor([r.key for r in runs], device=dev, dtype=torch.int64)
    keep = torch.tensor([r.keep_rate for r in runs], device=dev, dtype=torch.float64)
    xs, deltas = forward_backward(hidden, h0, act, keep, keys, step)
    return {k: v.cpu().numpy() for k, v in layer_metrics(xs, deltas).items()}


def metric_rows(shard, params: list[torch.Tensor], device: str = "cpu") -> pd.DataFrame:
    """Rows ``metric ∈ {g_aa, g_ab, g_ab_abs (g~_ab), g_ab_signed}`` per run and layer ``1..L``."""
    runs = shard.runs
    g = gradient_metrics(params, runs)
    frames = []
    for metric, v in g.items():
        m, n_layers = v.shape
        frames.append(
            pd.DataFrame(
                {
                    "model": np.repeat(np.arange(m), n_layers),
                    "layer": np.tile(np.arange(1, n_layers + 1), m),
                    "metric": metric,
                    "value": v.ravel(),
                }
            )
        )
    long = pd.concat(frames, ignore_index=True).assign(probe=0)
    return tables.run_rows(shard, long, device, order=("layer",))
