"""Study modules: each owns a study's theory table, figures and claims.

A study module exposes ``theory_table(study, theory_cfg, settings)`` (settings:
the distinct activation/σ_w²/σ_b²/keep-rate combinations of its runs),
``FIGURES`` (name -> function of ``(runs, theory, cfg)`` returning a matplotlib
figure), ``CAPTIONS`` and ``claims_table(runs, theory, cfg)``; figure and claims
functions that also take ``layers`` get the prune stage's per-layer reports.
Optional ``TABLES`` (names) with ``build_table(name, runs, cfg) -> (DataFrame,
title)`` make ``results/{study}/tables/{name}.{parquet,md,csv}``.  ``TASK`` says what
a shard job does: ``"train"`` (the default: the shard trainer) or ``"measure"``
(the module's ``measure(shard, params, buffers, cfg, device)`` on the initialized
models; ``cfg["data_path"]`` is the shard's prepared data set).  Add a paper by adding a module here, a config/studies file whose
``kind`` names it, and nothing in the rules.  Modules must not import torch at
the top level (they are imported while Snakemake builds the DAG).
"""

from __future__ import annotations

import importlib

KINDS = ("trainable_depth", "meanfield_maps", "gradient_metrics", "gradient_universality",
         "training_speed", "residual_ntk", "jacobian_moments", "dropout_ensemble",
         "dropout_training", "pruning_resnet", "pruning_eoc", "pruning_theory",
         "diversity_linear", "width_batch")


def get(kind: str):
    if kind not in KINDS:
        raise ValueError(f"unknown study kind '{kind}'; known: {list(KINDS)}")
    return importlib.import_module(f"{__name__}.{kind}")


def task(kind: str) -> str:
    return getattr(get(kind), "TASK", "train")


def analysis_kwargs(fn, layer_paths) -> dict:
    """Extra inputs of a figure or claims function: ``layers`` (the prune stage's per-layer
    reports, stacked) when ``fn`` takes it."""
    import inspect
    if "layers" not in inspect.signature(fn).parameters:
        return {}
    import pandas as pd

    from .. import tables
    frames = [tables.read(p) for p in layer_paths]
    return {"layers": pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()}


def build_table(module, name: str, runs, cfg: dict, parquet: str, md: str, csv: str):
    """One of a study's ``TABLES`` (``module.build_table(name, runs, cfg) -> (DataFrame, title)``)
    written as Parquet, Markdown and CSV."""
    from .. import tables
    from ..claims.render import write_table
    df, title = module.build_table(name, runs, cfg)
    tables.write_atomic(df, parquet)
    write_table({name: df}, md, csv, title)
    return df
