"""Claim rows: one row of :data:`sigprop.tables.CLAIM_COLUMNS` per claim, sanity check, control,
statement beyond the paper or summary (:data:`KINDS`), the frame of a study's rows and the
tally of a paper's counted claims.  The rules a row enforces (an equivalence claim's margin, a
design's false-pass rate) are in :func:`row`; the table-wide rules are in
:mod:`sigprop.claims.checks`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..tables import CLAIM_COLUMNS

KINDS = ("claim", "beyond", "sanity", "control", "summary")
STATED = ("claim", "beyond", "control")
"""The kinds whose rows must name their test and, when decided, the effect it could detect."""
BEYOND = "beyond the paper"
"""How the ``source`` of a ``beyond`` row starts: the statement is ours, not the paper's."""
VERDICTS = ("pass", "fail", "inconclusive", "smoke")
FALSE_PASS_MAX = 0.05
"""The largest chance of passing when the claim is false that a counted pass may have."""
MIN_ORDERED_ITEMS = 4
"""An ordering claim ("rises with") needs at least this many ordered items, or a stated reason
(with 3 items Kendall's tau takes only the values +-1/3 and +-1)."""


def row(
    study,
    claim_id,
    claim,
    source,
    measured,
    expected,
    tolerance,
    verdict,
    detail="",
    values: dict | None = None,
    *,
    kind: str = "claim",
    test: str = "",
    detectable: float = float("nan"),
    margin: float = float("nan"),
    se: float = float("nan"),
    tolerance_source: str = "",
    false_pass: float = float("nan"),
) -> dict:
    """One row.  ``values``: named numbers behind the verdict (e.g. both fit errors), kept as
    JSON so that paper tables (:mod:`sigprop.papers`) can be built from claims.  ``test``: the
    test in words (statistic, threshold, how many independent units); ``detectable``: the
    smallest effect it could detect at the configured seeds, in the units of ``measured``
    (:func:`check_table` requires both on every ``claim`` and ``beyond`` row).  ``margin``:
    for an equivalence claim, the largest deviation it tolerates, in the units of
    ``detectable``; a ``pass`` whose ``detectable`` exceeds it becomes ``inconclusive`` (the
    test could not have seen a deviation of that size), and the test says so.  ``se``: the
    standard error of ``measured`` where the test has one (the unit of ``sigprop compare``'s
    shifts between two runs).  ``tolerance_source``: where the tolerance comes from
    (:mod:`sigprop.claims.reading`; empty: the study file's declaration applies).
    ``false_pass``: the probability that the test passes when the claim is false (e.g. under a
    random order for a rank test); a claim or beyond row whose pass has ``false_pass`` above
    :data:`FALSE_PASS_MAX` becomes ``inconclusive``, and the test says so."""
    if kind not in KINDS:
        raise ValueError(f"claim {claim_id}: kind must be one of {KINDS}, not {kind!r}")
    margin = float(margin)
    if np.isfinite(margin):
        test = (
            (f"{test}; equivalence margin {margin:.4g}: a pass needs detectable <= margin")
            if test
            else test
        )
        if (
            kind in ("claim", "beyond")
            and verdict == "pass"
            and not (np.isfinite(detectable) and float(detectable) <= margin * (1 + 1e-9))
        ):
            verdict = "inconclusive"
            test += (
                f" (here {float(detectable):.4g} > {margin:.4g}: the design cannot resolve "
                "the margin, so no deviation found is not evidence of equality)"
            )
    false_pass = float(false_pass)
    if kind in ("claim", "beyond") and verdict == "pass" and false_pass > FALSE_PASS_MAX:
        verdict = "inconclusive"
        test += (
            f" (P(pass | claim false) = {false_pass:.3g} > {FALSE_PASS_MAX:g}: the design "
            "would pass too often without the effect, so its pass is not evidence)"
        )
    return dict(
        study=study,
        claim_id=claim_id,
        claim=claim,
        source=source,
        measured=measured,
        expected=expected,
        tolerance=tolerance,
        verdict=verdict,
        detail=detail,
        values=json.dumps({k: float(v) for k, v in (values or {}).items()}, sort_keys=True),
        kind=kind,
        test=test,
        detectable=float(detectable),
        exploratory=False,
        margin=margin,
        scale="",
        regime="",
        se=float(se),
        tolerance_source=str(tolerance_source or ""),
        false_pass=false_pass,
        reading="",
    )


def sanity(*args, **kwargs) -> dict:
    """A sanity row (identity or theorem): reported, never tallied.  Arguments as for
    :func:`row`, less ``kind``."""
    return row(*args, **kwargs, kind="sanity")


def control(*args, test: str, detectable: float, **kwargs) -> dict:
    """A control row: evidence that a claim's test has power (it rejects what it must reject).
    Like a claim it names its ``test`` and, when decided, the ``detectable`` effect
    (:func:`check_table`); ``inconclusive`` means the control could not resolve its effect at
    the configured seeds (an underpowered control), ``fail`` that the test lacks the power the
    claim relies on.  Reported apart, never tallied.  Other arguments as for :func:`row`."""
    return row(*args, **kwargs, kind="control", test=test, detectable=detectable)


def values(claim: pd.Series) -> dict:
    """The named numbers of one claim row (``{}`` when it has none)."""
    v = claim.get("values", "")
    return json.loads(v) if isinstance(v, str) and v else {}


def beyond(study, claim_id, claim, source, *args, **kwargs) -> dict:
    """A row that tests a statement the paper does not make (``source`` is prefixed with
    :data:`BEYOND`): reported beside the paper's claims, never in its tally."""
    if not str(source).startswith(BEYOND):
        source = f"{BEYOND}: {source}" if source else BEYOND
    return row(study, claim_id, claim, source, *args, **kwargs, kind="beyond")


def frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=CLAIM_COLUMNS)
    df["exploratory"] = df["exploratory"].astype(bool)
    for c in ("detectable", "margin", "se", "false_pass"):
        df[c] = df[c].astype(float)
    for c in ("scale", "regime", "tolerance_source", "reading"):
        df[c] = df[c].fillna("").astype(str)
    return df


def pooled(*args, **kwargs) -> dict:
    """A pooled row over measurements that claim rows already test: reported, never tallied.
    Arguments as for :func:`row`, less ``kind``."""
    return row(*args, **kwargs, kind="summary")


def _readings(df: pd.DataFrame) -> pd.Series:
    from .reading import readings

    if "reading" in df and (df["reading"].fillna("").astype(str) != "").all():
        return df["reading"].astype(str)
    return readings(df)


def claims_only(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that count: ``kind == 'claim'``, less those that read "unverified" (a printed
    formula whose evaluation does not reproduce the paper's own numbers)."""
    c = df[df["kind"] == "claim"]
    return c[_readings(c) != "unverified"] if len(c) else c


def tally(df: pd.DataFrame) -> dict:
    """Verdict counts over the claim rows only (beyond-the-paper, sanity, control and summary
    rows never count; controls are counted apart by verdict; unverified claims are counted
    apart), with how many of them are exploratory, how the fails read (``fail_contradicts``:
    beyond a tolerance the paper gives or admits; ``fail_departs``: beyond a tolerance of the
    project's choice; ``fail_out_of_regime``: "not reproduced at that scale", not a
    refutation) and how many passes lie outside the paper's regime."""
    c = claims_only(df)
    rd = _readings(c) if len(c) else pd.Series(dtype=object)
    out = {v: int((c.verdict == v).sum()) for v in ("pass", "fail", "inconclusive")}
    out["fail_out_of_regime"] = int(rd.str.startswith("not reproduced").sum())
    out["fail_contradicts"] = int((rd == "contradicts the paper").sum())
    out["fail_departs"] = int((rd == "departs beyond our tolerance").sum())
    out["fail_in_regime"] = out["fail"] - out["fail_out_of_regime"]
    out["pass_out_of_regime"] = int(rd.str.startswith("supported at").sum())
    a = df[df["kind"] == "claim"]
    out["unverified"] = int((_readings(a) == "unverified").sum()) if len(a) else 0
    if (c.verdict == "smoke").any():
        out["smoke"] = int((c.verdict == "smoke").sum())
    out["claims"] = len(c)
    out["exploratory"] = int(c.exploratory.sum())
    s = df[df["kind"] == "sanity"]
    out["sanity"] = len(s)
    out["sanity_failing"] = int((s.verdict != "pass").sum())
    k = df[df["kind"] == "control"]
    out["control"] = len(k)
    out["control_pass"] = int((k.verdict == "pass").sum())
    out["control_underpowered"] = int((k.verdict == "inconclusive").sum())
    out["control_failing"] = int((k.verdict == "fail").sum())
    out["summary"] = int((df["kind"] == "summary").sum())
    b = df[df["kind"] == "beyond"]
    out["beyond"] = len(b)
    out["beyond_pass"] = int((b.verdict == "pass").sum())
    return out
