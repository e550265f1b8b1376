"""The per-model fallback: any plain ``nn.Module`` trained in a shard, one model at a time.

For an architecture without a stacked implementation, wrap a builder
``(run, in_shape, n_out) -> nn.Module`` in :class:`PerModel`.  Parameters and
buffers are still stacked ``[M, ...]`` (so the trainer, optimizers, checkpoints
and tables work unchanged), but the forward pass loops over the models with
``torch.func.functional_call``: correct for anything, fast for nothing.

Initialization follows the stacked families: weights (2 or more dimensions)
N(0, σ_w²/fan_in) and biases N(0, σ_b²) from the model's own random key
(:mod:`sigprop.nets.rng`); other parameters (e.g. BatchNorm scales) and buffers
keep the module's own initial values.
"""

from __future__ import annotations

import math

import torch
from torch.func import functional_call

from . import rng


class PerModel:
    def __init__(self, name: str, builder):
        self.name = name
        self.builder = builder
        self._template: dict = {}

    def _module(self, run, in_shape, n_out, device, dtype):
        """One module per shape and device, built at init and reused by apply."""
        key = (run.shape_key(), str(torch.device(device)))
        if key not in self._template:
            with torch.device(device):  # built where it runs (no CPU copy, no default device)
                self._template[key] = self.builder(run, tuple(in_shape), n_out).to(dtype)
        return self._template[key]

    @staticmethod
    def _buffer_names(mod):
        return [n for n, _ in mod.named_buffers() if not n.endswith("num_batches_tracked")]

    def init(self, runs, keys, in_shape, n_out, device, dtype):
        if any(r.keep_rate < 1 for r in runs):
            raise NotImplementedError(f"{self.name}: dropout is not supported by the fallback")
        mod = self._module(runs[0], in_shape, n_out, device, dtype)
        m = len(runs)
        sw = torch.tensor([r.sigma_w2 for r in runs], dtype=torch.float64, device=device)
        sb = torch.tensor([r.sigma_b2 for r in runs], dtype=torch.float64, device=device)
        params = []
        for i, (name, p) in enumerate(mod.named_parameters()):
            shape = tuple(p.shape)
            view = (-1,) + (1,) * len(shape)
            if p.dim() >= 2:
                z = rng.normal(keys, rng.STREAM_INIT_W, shape, offset=i << 34, dtype=torch.float64)
                params.append((z * (sw / math.prod(shape[1:])).sqrt().view(view)).to(dtype))
            elif name.endswith("bias") and not _is_norm(mod, name):
                z = rng.normal(keys, rng.STREAM_INIT_B, shape, offset=i << 34, dtype=torch.float64)
                params.append((z * sb.sqrt().view(view)).to(dtype))
            else:
                params.append(p.detach().unsqueeze(0).expand((m,) + shape).clone())
        bufs = dict(mod.named_buffers())
        buffers = [
            bufs[n].detach().unsqueeze(0).expand((m,) + tuple(bufs[n].shape)).clone()
            for n in self._buffer_names(mod)
        ]
        return params, buffers

    def _rebuilt(self, runs, params, x):
        """The module for a shard initialized in another process (a cluster's init and train
        jobs): built from the input shape and the output width read off the last parameter,
        used only when every parameter shape then matches the stacked ones."""
        in_shape, n_out = tuple(x.shape[2:]), int(params[-1].shape[-1])
        mod = self._module(runs[0], in_shape, n_out, x.device, params[0].dtype)
        shapes = [tuple(p.shape) for _, p in mod.named_parameters()]
        if shapes != [tuple(p.shape[1:]) for p in params]:
            del self._template[(runs[0].shape_key(), str(torch.device(x.device)))]
            raise RuntimeError(
                f"{self.name}: apply() before init() on {x.device}, and the "
                "module rebuilt from the input and output shapes does not match "
                "the parameters"
            )
        return mod

    def apply(self, runs, params, buffers, x, train, keys, step):
        mod = self._template.get((runs[0].shape_key(), str(x.device)))
        if mod is None:
            mod = self._rebuilt(runs, params, x)
        names = [n for n, _ in mod.named_parameters()]
        bnames = self._buffer_names(mod)
        mod.train(train)
        outs, new = [], [[] for _ in bnames]
        for i in range(len(runs)):
            state = {n: p[i] for n, p in zip(names, params)}
            bstate = {n: b[i].clone() for n, b in zip(bnames, buffers)}
            outs.append(functional_call(mod, (state, bstate), (x[i],)))
            for j, n in enumerate(bnames):
                new[j].append(bstate[n].detach())
        return torch.stack(outs), [torch.stack(b) for b in new] if bnames else buffers

    def constrain(self, runs, params, buffers):
        return None


def _is_norm(mod, pname: str) -> bool:
    owner = mod.get_submodule(pname.rsplit(".", 1)[0]) if "." in pname else mod
    return isinstance(
        owner, (torch.nn.modules.batchnorm._BatchNorm, torch.nn.GroupNorm, torch.nn.LayerNorm)
    )
