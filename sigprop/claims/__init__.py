"""Paper claims as checks over Parquet tables: each returns rows of
``sigprop.tables.CLAIM_COLUMNS`` with a measured value, what the paper expects,
a tolerance and a verdict (pass / fail / inconclusive)."""

from __future__ import annotations

import pandas as pd

from ..tables import CLAIM_COLUMNS


def row(study, claim_id, claim, source, measured, expected, tolerance, verdict, detail="") -> dict:
    return dict(study=study, claim_id=claim_id, claim=claim, source=source, measured=measured,
                expected=expected, tolerance=tolerance, verdict=verdict, detail=detail)


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)
