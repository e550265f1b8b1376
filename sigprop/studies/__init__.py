"""Study modules: each owns a study's theory table, figures and claims.

A study module exposes ``theory_table(cfg)``, ``FIGURES`` (name -> function of
``(runs, theory, cfg)`` returning a matplotlib figure), ``CAPTIONS`` and
``claims_table(runs, theory, cfg)``.  Add a paper by adding a module here, a
config/studies file whose ``kind`` names it, and nothing in the rules.
"""

from __future__ import annotations

import importlib

KINDS = ("trainable_depth",)


def get(kind: str):
    if kind not in KINDS:
        raise ValueError(f"unknown study kind '{kind}'; known: {list(KINDS)}")
    return importlib.import_module(f"{__name__}.{kind}")
