"""Architecture families: how a shard of M models of one architecture is built and run.

A family turns the runs of a shard into stacked parameters (leading model axis
``M``) and runs all M models in one batched forward pass.  The shard trainer
(:mod:`sigprop.train.engine`) only talks to this interface, so a new
architecture is a new family registered in :data:`FAMILIES`, nothing else.

Contract of a family:

``init(runs, keys, in_shape, n_out, device, dtype) -> (params, buffers)``
    ``params``: list of tensors ``[M, ...]`` (trained); ``buffers``: list of
    tensors ``[M, ...]`` that are not trained but carried along (BatchNorm
    running statistics, pruning masks).  All random numbers come from
    :mod:`sigprop.nets.rng` with the per-model ``keys``, so a model's initial
    weights do not depend on its shard.
``apply(runs, params, buffers, x, train, keys, step) -> (logits, buffers)``
    ``x``: ``[M, B, *in_shape]``; ``logits``: ``[M, B, n_out]``.  With
    ``train=True`` dropout (per-model keep rates, masks from ``rng`` with
    ``keys`` and ``step``) and batch statistics are used and the updated
    buffers are returned; with ``train=False`` nothing random happens.
``constrain(runs, params, buffers)``
    Called after every optimizer step (e.g. re-apply pruning masks).

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132.
"""

from __future__ import annotations

import torch

from . import fc


class FullyConnected:
    """000 Eq. 1 nets: ``depth`` hidden layers of ``width`` units, then a linear readout.

    Buffers are optional pruning masks, one ``[M, out, in]`` 0/1 tensor per weight
    matrix (from the prune stage); masked weights are zero in every forward pass
    and are set back to zero after every step (:meth:`constrain`).
    """

    name = "fc"

    def init(self, runs, keys, in_shape, n_out, device, dtype):
        r0 = runs[0]
        d_in = 1
        for s in in_shape:
            d_in *= int(s)
        dims = fc.layer_dims(d_in, r0.width, r0.depth, n_out)
        sw = torch.tensor([r.sigma_w2 for r in runs], dtype=torch.float64, device=device)
        sb = torch.tensor([r.sigma_b2 for r in runs], dtype=torch.float64, device=device)
        params = fc.init_params(keys.to(device), sw, sb, [r.init for r in runs], dims, dtype)
        return params, []

    def apply(self, runs, params, buffers, x, train, keys, step):
        x = x.reshape(x.shape[0], x.shape[1], -1)
        keep = _keep_rates(runs, x.device, x.dtype) if train else None
        if buffers:
            params = [p * buffers[i // 2] if i % 2 == 0 else p for i, p in enumerate(params)]
        return fc.forward(params, x, runs[0].activation, keep, keys, step), buffers

    def constrain(self, runs, params, buffers):
        if buffers:
            with torch.no_grad():
                for w, mask in zip(params[0::2], buffers):
                    w.mul_(mask.to(w.dtype))


_KEEP: dict = {}


def _keep_rates(runs, device, dtype) -> torch.Tensor | None:
    """The runs' keep rates ``[M]`` (None without dropout), made once per shard's tuple of runs,
    not at every step."""
    key = (id(runs), str(device), dtype)
    hit = _KEEP.get(key)
    if hit is None or hit[0] is not runs:
        if len(_KEEP) > 256:
            _KEEP.clear()
        rates = [r.keep_rate for r in runs]
        hit = _KEEP[key] = (
            runs,
            torch.tensor(rates, device=device, dtype=dtype) if any(k < 1 for k in rates) else None,
        )
    return hit[1]


def _fc_module(run, in_shape, n_out):
    from . import reference

    d = 1
    for s in in_shape:
        d *= int(s)
    return reference.ref_fc(d, run.width, run.depth, n_out, run.activation)


def _all() -> dict:
    from . import convnets, fallback, residual

    return {
        "fc": FullyConnected(),
        **residual.families(),
        **convnets.families(),
        # the per-model fallback, shown on the fully connected net (any nn.Module works)
        "fc_loop": fallback.PerModel("fc_loop", _fc_module),
    }


FAMILIES = _all()


def get(arch: str):
    try:
        return FAMILIES[arch]
    except KeyError:
        raise ValueError(f"unknown architecture '{arch}'; known: {sorted(FAMILIES)}") from None
