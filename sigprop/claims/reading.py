"""How a verdict reads to someone who did not run it: at which scale it was measured, and
whether that scale is the paper's regime for the claim.

A study file declares, per scale, what differs there from the paper's setup, axis by axis
(``scales.<scale>.regime``, e.g. ``{data: "8x8 digits, not MNIST", steps: "300, not 2000"}``),
and which axes each claim's statistic depends on (``depends_on``: claim-id patterns to axes;
a claim no pattern matches depends on every axis).  A claim's ``regime`` is then the part of
the scale's regime along its own axes: empty when the claim was measured in the paper's regime.

Each claim's tolerance says where it comes from (``tolerance_source``, declared per claim-id
pattern in the study file's ``tolerance_sources``, :func:`apply`): ``paper: <where>`` (the
paper states it), ``exact: <why>`` (the statement admits no tolerance beyond sampling error: a
sign, an order, an inequality, an equality the test checks within its standard errors only),
``ours: <why>`` (the project's choice), or ``unverified: <why>`` (a printed formula whose
evaluation by the project does not reproduce the paper's own numbers: untallied until it does).

How a verdict reads (:func:`reading`):

* a pass reads "supported" in the paper's regime, "supported at <scale> scale (<axes>)" outside
  it (the same qualification a fail gets);
* a fail outside the paper's regime is "not reproduced at <scale> scale (<axes>)": the design
  differs from the paper's along an axis the claim depends on, so the fail is not a refutation;
* a fail in the paper's regime "contradicts the paper" only when the tolerance is the paper's
  own or the statement admits none (``paper`` / ``exact``); beyond a tolerance of the project's
  choice it "departs beyond our tolerance" (counted apart from contradictions);
* a row whose tolerance source is ``unverified`` reads "unverified", whatever its verdict.
"""

from __future__ import annotations

import fnmatch
import re

import pandas as pd

AXES = (
    "data",
    "steps",
    "width",
    "depth",
    "samples",
    "seeds",
    "batch",
    "architecture",
    "optimizer",
    "grid",
    "statistic",
)
"""What a scale can change relative to the paper: the data set, the training budget (steps or
epochs), the width, the depth, the number of sampled networks or sets (``samples``), training
seeds, the batch size, the architecture, the optimizer or schedule, the grid of settings
(which settings are measured at all), and the statistic (how a claim's quantity is computed
from the runs, where it is not the paper's)."""

READINGS = {
    "supported": "pass in the paper's regime",
    "supported at <scale> scale (<axes>)": "pass where the design differs from the paper's "
    "along the named axes the claim depends on",
    "contradicts the paper": "fail in the paper's regime beyond a tolerance the paper gives, or "
    "against a statement that admits none",
    "departs beyond our tolerance": "fail in the paper's regime beyond a tolerance of the "
    "project's choice",
    "not reproduced at <scale> scale (<axes>)": "fail where the design differs from the "
    "paper's along an axis the claim depends on",
    "unverified": "the paper's printed formula, as the project evaluates it, does not reproduce "
    "the paper's own numbers: not tallied",
    "inconclusive": "the design cannot tell",
}
"""Every reading a claim or beyond row can have, with what it means."""

TOLERANCE_KINDS = ("paper", "exact", "ours", "unverified")
"""How a ``tolerance_source`` starts (``<kind>: <where or why>``)."""
PAPERS_OWN = ("paper", "exact")
BEYOND_SOURCE = "ours: a statement beyond the paper, tested at a tolerance of the project's choice"
"""The tolerance source of a beyond-the-paper row that its study file does not declare."""
"""The tolerance kinds under which a fail in the paper's regime contradicts the paper."""


def tolerance_kind(source: str) -> str:
    """The kind of a ``tolerance_source`` (the word before its first colon), or ``""``."""
    head = str(source or "").split(":", 1)[0].strip()
    return head if head in TOLERANCE_KINDS else ""


def tolerance_source(claim_id: str, sources) -> str:
    """The declared source of a claim's tolerance: the first pattern of the study file's
    ``tolerance_sources`` (claim-id pattern -> source, shell-style, in the file's order; a
    mapping or :func:`pairs`-like list) that matches, else ``""``."""
    items = sources.items() if isinstance(sources, dict) else (sources or [])
    for pattern, src in items:
        if fnmatch.fnmatchcase(str(claim_id), pattern):
            return str(src)
    return ""


def regime_axes(regime: str) -> list[str]:
    """The axes named in a claim's ``regime`` text (``"axis: what; axis: what"``)."""
    pat = r"(?:^|; )(" + "|".join(AXES) + r"): "
    return re.findall(pat, str(regime or ""))


def pairs(depends_on) -> list[list]:
    """``depends_on`` as ``[[pattern, axes], ...]`` in the study file's order: the form it
    travels in as JSON (a JSON object may be re-sorted on the way, and the first matching
    pattern wins)."""
    if isinstance(depends_on, dict):
        return [[k, list(v)] for k, v in depends_on.items()]
    return [[k, list(v)] for k, v in (depends_on or [])]


def pairs_of(mapping) -> list[list]:
    """A claim-id pattern -> text mapping (``tolerance_sources``) as ``[[pattern, text], ...]``
    in the study file's order (first match wins)."""
    if isinstance(mapping, dict):
        return [[k, str(v)] for k, v in mapping.items()]
    return [[k, str(v)] for k, v in (mapping or [])]


def claim_axes(claim_id: str, depends_on) -> tuple[str, ...]:
    """The axes a claim's statistic depends on: those of the first pattern of ``depends_on``
    (claim-id pattern -> axes, shell-style, in the study file's order; a mapping or
    :func:`pairs`) that matches, else every axis."""
    for pattern, axes in pairs(depends_on):
        if fnmatch.fnmatchcase(str(claim_id), pattern):
            return tuple(axes)
    return AXES


def claim_regime(claim_id: str, regime: dict | None, depends_on) -> str:
    """What differs from the paper's setup along the axes the claim depends on, as
    ``"axis: what; axis: what"`` (empty: the claim was measured in the paper's regime)."""
    axes = claim_axes(claim_id, depends_on)
    return "; ".join(
        f"{a}: {' '.join(str(regime[a]).split())}"
        for a in AXES
        if a in (regime or {}) and a in axes
    )


def apply(
    df: pd.DataFrame,
    scale: str,
    regime: dict | None,
    depends_on,
    tolerance_sources=None,
    corroborations=None,
    declared_first: bool = False,
) -> pd.DataFrame:
    """``df`` with ``scale`` set on every row, the claims that the study file declares
    corroborations (:func:`corroborate`) made summary rows, ``regime`` on the claim and beyond
    rows (:func:`claim_regime`), each claim and beyond row's ``tolerance_source`` filled from
    the study file's declaration where the row names none (:func:`tolerance_source`; with
    ``declared_first``, as for a committed table read today, the declaration wherever it
    matches), and every row's ``reading`` (:func:`readings`); sanity and summary rows keep an
    empty regime."""
    df = corroborate(df.copy(), corroborations)
    df["scale"] = str(scale)
    tested = df["kind"].isin(["claim", "beyond"])
    df["regime"] = [
        claim_regime(c, regime, depends_on) if t else "" for c, t in zip(df.claim_id, tested)
    ]
    own = (
        df["tolerance_source"].fillna("").astype(str)
        if "tolerance_source" in df
        else pd.Series("", index=df.index)
    )

    def source(own_: str, cid: str, kind: str) -> str:
        declared = tolerance_source(cid, tolerance_sources)
        if declared_first and declared:
            return declared
        return own_ if own_.strip() else (declared or (BEYOND_SOURCE if kind == "beyond" else ""))

    df["tolerance_source"] = [
        source(o, c, k) if t else o for o, c, t, k in zip(own, df.claim_id, tested, df["kind"])
    ]
    if "false_pass" not in df:
        df["false_pass"] = float("nan")
    df["reading"] = readings(df)
    return df


def corroborate(df: pd.DataFrame, corroborations) -> pd.DataFrame:
    """The study file's ``corroborations`` (claim-id pattern -> why, first match wins) applied:
    a ``claim`` row that a pattern matches measures what another counted claim already measures
    (e.g. another metric of the same nets), so it becomes a ``summary`` row, never counted,
    with the reason appended to its claim.  A declaration, not a measurement: it applies to a
    committed table as read, without a rerun."""
    items = pairs_of(corroborations)
    if not items or not len(df):
        return df
    why = [
        tolerance_source(c, items) if k == "claim" else "" for c, k in zip(df.claim_id, df["kind"])
    ]
    hit = pd.Series([bool(w) for w in why], index=df.index)
    df.loc[hit, "kind"] = "summary"
    df.loc[hit, "claim"] = [
        f"{c} (corroboration, not counted: {w})"
        for c, w in zip(df.loc[hit, "claim"], [w for w in why if w])
    ]
    return df


def reading(verdict: str, regime: str = "", scale: str = "", source: str = "") -> str:
    """A claim's verdict as a reader should take it (the module's rule): ``supported``,
    ``supported at <scale> scale (<axes>)``, ``contradicts the paper``, ``departs beyond our
    tolerance``, ``not reproduced at <scale> scale (<axes>)``, ``unverified``,
    ``inconclusive``, or ``smoke`` (a smoke run's rows have no verdict).  ``source``: the
    row's ``tolerance_source``; one that names no kind counts as the project's choice."""
    if tolerance_kind(source) == "unverified":
        return "unverified"
    at = f"{scale} scale" if scale else "this scale"
    axes = ", ".join(regime_axes(regime)) or str(regime or "").strip()
    qual = f"{at} ({axes})" if axes else at
    if verdict == "pass":
        return f"supported at {qual}" if str(regime or "").strip() else "supported"
    if verdict == "fail":
        if str(regime or "").strip():
            return f"not reproduced at {qual}"
        if tolerance_kind(source) in PAPERS_OWN:
            return "contradicts the paper"
        return "departs beyond our tolerance"
    return str(verdict)


def readings(df: pd.DataFrame) -> pd.Series:
    """:func:`reading` of every claim and beyond row of a claims table; a sanity, control or
    summary row reads as its kind and verdict (``sanity: pass``): it is no statement of the
    paper."""

    def col(name, default):
        return df[name].fillna(default) if name in df else pd.Series(default, index=df.index)

    regime, scale, kind = col("regime", ""), col("scale", ""), col("kind", "claim")
    source = col("tolerance_source", "")
    return pd.Series(
        [
            reading(v, r, s, t) if k in ("claim", "beyond") else f"{k}: {v}"
            for v, r, s, k, t in zip(df.verdict, regime, scale, kind, source)
        ],
        index=df.index,
        dtype=object,
    )
