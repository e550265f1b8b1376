"""Every claim of a paper at both scales side by side: this run's verdict and the committed
paper-scale verdict (``docs/evidence/paper-scale/<study>/``), each with how it reads
(:func:`sigprop.claims.reading.reading`).  The referee's summary, the report's front page and
``docs/papers.md`` are all drawn from this one table (:func:`verdict_matrix`)."""

from __future__ import annotations

import pandas as pd

from .reading import readings

SCALES = ("run", "paper")
"""The two columns: this run (at the scale it was run at), and paper scale as committed."""

TESTED = ("claim", "beyond")
CELL = [
    "kind",
    "verdict",
    "reading",
    "regime",
    "exploratory",
    "measured",
    "detectable",
    "margin",
    "scale",
    "tolerance_source",
    "false_pass",
]


def _cells(df: pd.DataFrame | None) -> pd.DataFrame:
    if df is None or not len(df):
        return pd.DataFrame(columns=["study", "claim_id", "claim", "source", *CELL])
    d = df.copy()
    for c, default in (
        ("regime", ""),
        ("scale", ""),
        ("margin", float("nan")),
        ("tolerance_source", ""),
        ("false_pass", float("nan")),
        ("reading", ""),
    ):
        if c not in d:
            d[c] = default
    d["regime"] = d["regime"].fillna("").astype(str)
    stored = d["reading"].fillna("").astype(str)
    d["reading"] = stored.where(stored != "", readings(d))
    return d[["study", "claim_id", "claim", "source", *CELL]]


def verdict_matrix(run: pd.DataFrame, committed: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (study, claim id) that is a claim or a beyond-the-paper row at either scale:
    ``study, claim_id, claim, source, kind`` (the run's, else the committed row's) and, for each
    of :data:`SCALES`, ``<scale>_<field>`` for the fields of :data:`CELL` (``<scale>_verdict``
    is ``"-"`` where that scale has no such row).  Rows keep the run's order, then the
    committed ones the run does not have."""
    a, b = _cells(run), _cells(committed)
    keep = (
        a[a.kind.isin(TESTED)][["study", "claim_id"]],
        b[b.kind.isin(TESTED)][["study", "claim_id"]],
    )
    keys = pd.concat(keep, ignore_index=True).drop_duplicates()
    out = keys.merge(
        a.add_prefix("run_").rename(columns={"run_study": "study", "run_claim_id": "claim_id"}),
        on=["study", "claim_id"],
        how="left",
    )
    out = out.merge(
        b.add_prefix("paper_").rename(
            columns={"paper_study": "study", "paper_claim_id": "claim_id"}
        ),
        on=["study", "claim_id"],
        how="left",
    )
    out["claim"] = out.run_claim.fillna(out.paper_claim)
    out["source"] = out.run_source.fillna(out.paper_source)
    run_tested = out.run_kind.isin(TESTED)
    out["kind"] = out.run_kind.where(run_tested, out.paper_kind)
    for s in SCALES:
        out[f"{s}_verdict"] = out[f"{s}_verdict"].fillna("-")
        out[f"{s}_reading"] = out[f"{s}_reading"].fillna("-")
        out[f"{s}_regime"] = out[f"{s}_regime"].fillna("")
        out[f"{s}_exploratory"] = out[f"{s}_exploratory"].fillna(False).astype(bool)
        out[f"{s}_kind"] = out[f"{s}_kind"].fillna("-")
    cols = ["study", "claim_id", "claim", "source", "kind"] + [
        f"{s}_{c}" for s in SCALES for c in CELL
    ]
    return out[cols].reset_index(drop=True)


def changed(m: pd.DataFrame) -> pd.Series:
    """Rows whose verdict differs between the two scales (both present and tested)."""
    both = m.run_kind.isin(TESTED) & m.paper_kind.isin(TESTED)
    return both & (m.run_verdict != m.paper_verdict)
