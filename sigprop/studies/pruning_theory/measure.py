"""The measurement at initialization (Hayou, Ton, Doucet & Teh 2021, "Robust Pruning at
Initialization", arXiv:2002.08797, Fig. 1, Thm. 1, Prop. 4): per model, the kept fraction of
every neuron's fan-in after its pruner, the critical sparsity of its one-shot pruner and, for
magnitude runs, that of the network whose layer l0 (the input layer, as in Table 7's
``alpha_1 = gamma``) has ``alpha_l0 = gamma`` and every other layer ``alpha = 1``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import tables


def _model_scores(shard, params, buffers, x_train, y_train, i):
    """Keep scores of model ``i`` by its run's pruner on its class-balanced scoring batch
    (the batch of the prune stage: ``prune_batch`` per class, ``prune_data_key``)."""
    import torch

    from ... import prune
    from ...nets import families

    r = shard.runs[i]
    x, y = prune.class_balanced_batch(x_train, y_train, r.prune_batch, r.prune_data_key)
    keys = torch.tensor([r.key], device=params[0].device, dtype=torch.int64)
    return prune.compute_scores(
        r.pruner,
        families.get(r.arch),
        [r],
        [p[i : i + 1] for p in params],
        [b[i : i + 1] for b in buffers],
        x[None],
        y[None],
        keys,
    )


def alpha_scale(gamma: float, fan_in: int, width: int) -> float:
    """The factor that turns a weight drawn with variance ``sigma_w2 / fan_in`` (our init) into
    one with variance ``sigma_w2 / (alpha N)``, ``alpha = gamma``, ``N = width``: 003's
    parametrization ``W^l ~ N(0, sigma_w2 / v_l)``, ``v_l = alpha_l N`` (Sec. 2.1), with
    ``alpha_l0 = gamma`` and ``alpha_l = 1`` elsewhere (App. E, Table 7).  For a hidden layer
    (``fan_in = N``) it is ``1 / sqrt(gamma)``; for the input layer (fan-in ``d``) it is
    ``sqrt(d / (gamma N))``."""
    return float(np.sqrt(fan_in / (gamma * width)))


def _scaled(scores, flags, layer, factor):
    """Scores with prunable layer ``layer`` multiplied by ``factor`` (magnitude scores |W|:
    exactly the scores of the network whose layer ``layer`` is scaled by ``factor``)."""
    out, k = [], 0
    for s, f in zip(scores, flags):
        if f and s is not None:
            s = s * factor if k == layer else s
            k += 1
        out.append(s)
    return out


def _rows(model, metric, value, layer=-1, probe=0.0):
    value = np.atleast_1d(np.asarray(value, float))
    n = len(value)
    return pd.DataFrame(
        {
            "model": model,
            "metric": metric,
            "value": value,
            "layer": np.broadcast_to(layer, n),
            "probe": np.broadcast_to(np.asarray(probe, float), n),
        }
    )


def measure(
    shard, params, buffers, p, device: str = "cpu", data_path=None, masks_path=None
) -> pd.DataFrame:
    """Per model: per-neuron kept fractions at the run's sparsity, ``s_cr`` and ``s_cr_layer``
    of its pruner, and for magnitude runs ``s_cr_gamma`` per ``measure.gammas``.  The masks
    are the prune stage's (``masks_path``, which the workflow passes) or, without it, computed
    here as the prune stage does."""
    from ... import prune
    from ...data.prepare import load
    from ...prune.stage import shard_masks
    from ...train import engine

    gammas = [float(g) for g in p.measure.gammas]
    l0 = int(p.measure.gamma_layer)
    data = engine.to_data(load(data_path), params[0].device, params[0].dtype)
    d_in = int(np.prod(tuple(data.x_train.shape[1:])))  # the input layer's fan-in
    flags = prune.prunable(shard.runs[0].arch, params)
    if masks_path:  # the prune stage's masks (the workflow passes them)
        from pathlib import Path

        masks = [
            m.to(params[0].device) if m is not None else None
            for m in engine.load_masks(Path(masks_path), shard)
        ]
    else:
        masks = shard_masks(shard, params, buffers, data.x_train, data.y_train)
    frames = []
    for i, r in enumerate(shard.runs):
        k = 0
        for m, f in zip(masks, flags):
            if f and m is not None:
                kept = m[i].double().mean(-1).cpu().numpy()  # [out]: fraction of the fan-in kept
                frames.append(
                    _rows(
                        i,
                        "kept_fraction_neuron",
                        kept,
                        layer=k + 1,
                        probe=np.arange(1, len(kept) + 1),
                    )
                )
                k += 1
        sc = _model_scores(shard, params, buffers, data.x_train, data.y_train, i)
        cr = prune.critical_sparsity_from_scores(sc)
        layer_of = {p_: j for j, p_ in enumerate(np.flatnonzero(flags))}
        frames.append(_rows(i, "s_cr", cr.s_cr.iloc[0]))
        frames.append(_rows(i, "s_cr_layer", layer_of[int(cr.layer.iloc[0])]))
        if r.pruner == "magnitude":
            fan_in = d_in if l0 == 0 else int(r.width)
            for g in gammas:
                cg = prune.critical_sparsity_from_scores(
                    _scaled(sc, flags, l0, alpha_scale(g, fan_in, int(r.width)))
                )
                frames.append(_rows(i, "s_cr_gamma", cg.s_cr.iloc[0], probe=g))
                frames.append(
                    _rows(i, "s_cr_gamma_layer", layer_of[int(cg.layer.iloc[0])], probe=g)
                )
    long = pd.concat(frames, ignore_index=True)
    return tables.run_rows(shard, long, device, order=("layer", "probe"))
