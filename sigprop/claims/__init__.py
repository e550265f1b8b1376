"""Paper claims as checks over Parquet tables: each returns rows of
``sigprop.tables.CLAIM_COLUMNS`` with a measured value, what the paper expects,
a tolerance and a verdict (pass / fail / inconclusive)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..tables import CLAIM_COLUMNS


def row(study, claim_id, claim, source, measured, expected, tolerance, verdict, detail="",
        values: dict | None = None) -> dict:
    """One claim.  ``values``: named numbers behind the verdict (e.g. both fit errors), kept
    as JSON so that paper tables (:mod:`sigprop.claims.papers`) can be built from claims."""
    return dict(study=study, claim_id=claim_id, claim=claim, source=source, measured=measured,
                expected=expected, tolerance=tolerance, verdict=verdict, detail=detail,
                values=json.dumps({k: float(v) for k, v in (values or {}).items()}, sort_keys=True))


def values(claim: pd.Series) -> dict:
    """The named numbers of one claim row (``{}`` when it has none)."""
    v = claim.get("values", "")
    return json.loads(v) if isinstance(v, str) and v else {}


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def kendall_tau(x, y) -> float:
    """Kendall's tau-b over the pairs where both are finite, for ordering claims ("rises with",
    "falls with"): NaN with fewer than 2 distinct x (no order to test), 0 when y is constant
    (no association)."""
    from scipy.stats import kendalltau
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 2 or np.unique(x).size < 2:
        return np.nan
    if np.unique(y).size < 2:
        return 0.0
    return float(kendalltau(x, y).statistic)
