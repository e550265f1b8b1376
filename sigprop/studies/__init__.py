"""Study modules: each owns a study's theory table, figures and claims.

A study module exposes ``theory_table(study, theory_cfg, settings)`` (settings:
the distinct activation/σ_w²/σ_b²/keep-rate combinations of its runs),
``FIGURES`` (name -> function of ``(runs, theory, cfg)`` returning a matplotlib
figure), ``CAPTIONS`` and ``claims_table(runs, theory, cfg)``.  ``TASK`` says what
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
         "dropout_training")


def get(kind: str):
    if kind not in KINDS:
        raise ValueError(f"unknown study kind '{kind}'; known: {list(KINDS)}")
    return importlib.import_module(f"{__name__}.{kind}")


def task(kind: str) -> str:
    return getattr(get(kind), "TASK", "train")
