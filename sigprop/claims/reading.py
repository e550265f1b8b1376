"""How a verdict reads to someone who did not run it: at which scale it was measured, and
whether that scale is the paper's regime for the claim.

A study file declares, per scale, what differs there from the paper's setup, axis by axis
(``scales.<scale>.regime``, e.g. ``{data: "8x8 digits, not MNIST", steps: "300, not 2000"}``),
and which axes each claim's statistic depends on (``depends_on``: claim-id patterns to axes;
a claim no pattern matches depends on every axis).  A claim's ``regime`` is then the part of
the scale's regime along its own axes: empty when the claim was measured in the paper's regime.

A fail in the paper's regime "contradicts the paper"; a fail outside it is "not reproduced at
that scale": the design differs from the paper's along an axis the claim depends on, so the fail
is not a refutation (:func:`reading`).
"""

from __future__ import annotations

import fnmatch

import pandas as pd

AXES = ("data", "steps", "width", "depth", "samples", "seeds", "batch", "architecture",
        "optimizer", "grid")
"""What a scale can change relative to the paper: the data set, the training budget (steps or
epochs), the width, the depth, the number of sampled networks or sets (``samples``), training
seeds, the batch size, the architecture, the optimizer or schedule, and the grid of settings
(which settings are measured at all)."""

READINGS = {
    "supported": "pass",
    "contradicts the paper": "fail in the paper's regime",
    "not reproduced at this scale": "fail where the design differs from the paper's along an "
                                    "axis the claim depends on",
    "inconclusive": "the design cannot tell",
}


def pairs(depends_on) -> list[list]:
    """``depends_on`` as ``[[pattern, axes], ...]`` in the study file's order: the form it
    travels in as JSON (a JSON object may be re-sorted on the way, and the first matching
    pattern wins)."""
    if isinstance(depends_on, dict):
        return [[k, list(v)] for k, v in depends_on.items()]
    return [[k, list(v)] for k, v in (depends_on or [])]


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
    return "; ".join(f"{a}: {' '.join(str(regime[a]).split())}"
                     for a in AXES if a in (regime or {}) and a in axes)


def apply(df: pd.DataFrame, scale: str, regime: dict | None, depends_on) -> pd.DataFrame:
    """``df`` with ``scale`` set on every row and ``regime`` on the claim and beyond rows
    (:func:`claim_regime`); sanity and summary rows keep an empty regime."""
    df = df.copy()
    df["scale"] = str(scale)
    tested = df["kind"].isin(["claim", "beyond"])
    df["regime"] = [claim_regime(c, regime, depends_on) if t else ""
                    for c, t in zip(df.claim_id, tested)]
    return df


def reading(verdict: str, regime: str = "", scale: str = "") -> str:
    """A claim's verdict as a reader should take it: ``supported``, ``contradicts the paper``
    (a fail in the paper's regime), ``not reproduced at <scale> scale`` (a fail where the
    design differs from the paper's along an axis the claim depends on), ``inconclusive``,
    ``smoke`` (a smoke run's rows have no verdict)."""
    if verdict == "pass":
        return "supported"
    if verdict == "fail":
        if str(regime or "").strip():
            return f"not reproduced at {scale} scale" if scale else "not reproduced at this scale"
        return "contradicts the paper"
    return str(verdict)


def readings(df: pd.DataFrame) -> pd.Series:
    """:func:`reading` of every claim and beyond row of a claims table; a sanity or summary row
    reads as its kind and verdict (``sanity: pass``): it is no statement of the paper."""
    regime = df["regime"] if "regime" in df else pd.Series("", index=df.index)
    scale = df["scale"] if "scale" in df else pd.Series("", index=df.index)
    kind = df["kind"] if "kind" in df else pd.Series("claim", index=df.index)
    return pd.Series([reading(v, r, s) if k in ("claim", "beyond") else f"{k}: {v}"
                      for v, r, s, k in zip(df.verdict, regime.fillna(""), scale.fillna(""),
                                            kind)], index=df.index)
