"""Committed paper-scale claims tables (``docs/evidence/paper-scale/<study>/claims.parquet``),
read at paper scale against their study file's regime today: a table committed before a column
existed gets its default, and how each row reads follows the study file's declaration without a
rerun (:mod:`sigprop.claims.reading`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import tables

OLD_COLUMNS = tables.CLAIM_COLUMNS[:tables.CLAIM_COLUMNS.index("exploratory") + 1]
"""The columns every committed claims table has (those added later get their defaults)."""


def read_claims(path: str | Path, regime: dict | None = None,
                depends_on=None) -> pd.DataFrame:
    """A committed paper-scale claims table, read at paper scale: columns added to the claims
    table since it was committed get their defaults (``margin``, ``se``: NaN), and every row's
    ``regime`` is the study file's paper-scale ``regime`` along the axes its claim
    ``depends_on`` (:mod:`sigprop.claims.reading`), so that it reads as the declaration says
    today without a rerun."""
    from . import reading
    df = tables.read(path, OLD_COLUMNS)
    for c in ("margin", "se"):
        if c not in df:
            df[c] = float("nan")
    df = reading.apply(df, "paper", regime, depends_on)
    return df[tables.CLAIM_COLUMNS]


def declared_regime(study_cfg: dict | None) -> tuple[dict, list]:
    """A study file's paper-scale regime and the axes its claims depend on (in its order)."""
    from .reading import pairs
    cfg = study_cfg or {}
    return (dict(((cfg.get("scales") or {}).get("paper") or {}).get("regime") or {}),
            pairs(cfg.get("depends_on")))
