"""Claims declared by a study, filled with its statistics.

A study declares each claim once (:class:`sigprop.contract.Claim` in ``CLAIMS`` of its
``__init__.py``: statement, test, what a pass expects, what the row reports, kind and source in
the paper); its ``claims.py`` computes only the statistics of each row (:func:`result`) and
:func:`build` turns them into the claims table: the declared texts filled with the row's
fields, through :func:`sigprop.claims.rows.row` and its rules (an equivalence claim's margin,
a design's false-pass rate).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from ..contract import CLAIM_KINDS, Claim
from .rows import BEYOND, frame, row

NAN = float("nan")
TEXTS = ("statement", "test", "expected", "detail")
"""The declared texts of a claim, each filled with a row's fields."""


def result(
    claim: str,
    qualifier: str = "",
    *,
    measured,
    tolerance,
    verdict: str,
    values: dict | None = None,
    detectable: float = NAN,
    margin: float = NAN,
    se: float = NAN,
    false_pass: float = NAN,
    tolerance_source: str = "",
    kind: str | None = None,
    source: str | None = None,
    texts: Mapping[str, str] | None = None,
    **fields,
) -> dict:
    """One row's statistics for the declared claim ``claim``: its id is ``claim[qualifier]``
    (``claim`` alone without a qualifier), and ``fields`` fill the slots of the declared
    texts.

    Per row, and only where the row differs from its declaration: ``kind`` (e.g. ``"beyond"``
    for the paper's statement tested on a setting the paper does not cover), ``source``, and
    ``texts``, declared texts replaced for this row (e.g. the ``expected`` of a row that has no
    data to test), themselves filled with ``fields``."""
    bad = set(texts or ()) - set(TEXTS)
    if bad:
        raise KeyError(f"claim {claim}: texts may replace {TEXTS}, not {sorted(bad)}")
    if kind is not None and kind not in CLAIM_KINDS:
        raise ValueError(f"claim {claim}: kind must be one of {CLAIM_KINDS}, not {kind!r}")
    return {
        "claim": claim,
        "claim_id": f"{claim}[{qualifier}]" if qualifier else claim,
        "kind": kind,
        "source": source,
        "texts": dict(texts or {}),
        "stats": dict(
            measured=measured,
            tolerance=tolerance,
            verdict=verdict,
            values=values,
            detectable=detectable,
            margin=margin,
            se=se,
            false_pass=false_pass,
            tolerance_source=tolerance_source,
        ),
        "fields": fields,
    }


def _fill(text: str, fields: dict, claim_id: str, what: str) -> str:
    try:
        return text.format(**fields)
    except KeyError as e:
        raise KeyError(
            f"claim {claim_id}: its declared {what} has the slot {{{e.args[0]}}}, which the "
            f"claims code does not fill (fields: {sorted(fields)})"
        ) from None


def build(
    study: str, declared: Mapping[str, Claim], results: Iterable[dict], source: str = ""
) -> pd.DataFrame:
    """The claims table of ``results`` (:func:`result`), each row's texts the declared ones of
    its claim filled with its fields; ``source`` is the study's, for claims that declare none.

    Raises KeyError for a row of an undeclared claim (naming the declared ones) or a slot its
    fields do not fill."""
    rows = []
    for r in results:
        c = declared.get(r["claim"])
        if c is None:
            raise KeyError(
                f"study {study}: claim {r['claim']!r} is not declared in CLAIMS "
                f"(declared: {', '.join(declared)})"
            )
        cid, f, st = r["claim_id"], r["fields"], dict(r["stats"])
        text = {k: _fill(r["texts"].get(k, getattr(c, k)), f, cid, k) for k in TEXTS}
        kind = r["kind"] or c.kind
        src = r["source"] if r["source"] is not None else (c.source or source)
        if kind == "beyond" and not str(src).startswith(BEYOND):
            src = f"{BEYOND}: {src}" if src else BEYOND
        rows.append(
            row(
                study,
                cid,
                text["statement"],
                src,
                st.pop("measured"),
                text["expected"],
                st.pop("tolerance"),
                st.pop("verdict"),
                text["detail"],
                st.pop("values"),
                kind=kind,
                test=text["test"],
                **st,
            )
        )
    return frame(rows)
