"""The claims table's contract, checked before a table is written: kinds, verdicts, sources in
the paper, thresholds the test states, margins, false-pass rates, declared tolerance sources,
twin claims (one measurement counted twice), and the design changes that make verdicts
exploratory."""

from __future__ import annotations

import fnmatch
import math
import re
from fractions import Fraction

import numpy as np
import pandas as pd

from .rows import BEYOND, FALSE_PASS_MAX, KINDS, STATED, VERDICTS, claims_only

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_THRESHOLD = re.compile(
    r"(?:>=|<=|≥|≤|(?<![-=<>])>(?!=)|(?<![-=<>])<(?!=))\s*(" + _NUMBER + r")(?!\s*SE)"
)


def _numbers(text: str) -> list[float]:
    return [float(m) for m in re.findall(_NUMBER, str(text))]


def threshold_mismatches(expected: str, test: str, tolerance: float = float("nan")) -> list[float]:
    """The thresholds that ``expected`` states (a nonzero number after ``>=``, ``<=``, ``<``,
    ``>``, not a multiple of SE) and that ``test`` does not name (nor ``tolerance`` equal, in
    absolute value): an ``expected`` that promises another threshold than the one the test
    applies."""
    named = [abs(w) for w in _numbers(test)] + (
        [abs(float(tolerance))] if np.isfinite(tolerance) else []
    )
    out = []
    for m in _THRESHOLD.finditer(str(expected)):
        v = float(m.group(1))
        if v == 0:  # a sign ("> 0"), which a test with a margin applies more strictly
            continue
        if not any(math.isclose(abs(v), w, rel_tol=5e-3, abs_tol=1e-12) for w in named):
            out.append(v)
    return out


def check_table(df: pd.DataFrame, where: str, paper: str | None = None) -> None:
    """Stop with ``where`` (the study or file) named when a row breaks the claims contract: an
    unknown kind or verdict, a claim id twice, a claim or beyond row without its test, a decided
    (pass / fail) one without the smallest effect it could detect, an equivalence claim passing
    with a detectable effect above its margin, an ``expected`` that names a threshold its test
    does not apply, a ``beyond`` row whose source does not say so, and (with ``paper``, e.g.
    ``"001"``) a claim whose source lies outside that paper."""
    bad_kind = df[~df["kind"].isin(KINDS)]
    if len(bad_kind):
        r = bad_kind.iloc[0]
        raise ValueError(
            f"{where}: claim {r.claim_id} has kind {r.kind!r}; expected one of {KINDS}"
        )
    bad = df[~df["verdict"].isin(VERDICTS)]
    if len(bad):
        r = bad.iloc[0]
        raise ValueError(
            f"{where}: claim {r.claim_id} has verdict {r.verdict!r}; expected one of {VERDICTS}"
        )
    dup = df[df.duplicated("claim_id", keep=False)]
    if len(dup):
        raise ValueError(
            f"{where}: claim id {dup.iloc[0].claim_id} appears twice (one measurement, one row)"
        )
    c = df[df["kind"].isin(STATED)]
    no_test = c[c["test"].fillna("").str.strip() == ""]
    if len(no_test):
        raise ValueError(
            f"{where}: claim {no_test.iloc[0].claim_id} does not name its test "
            "(sigprop.claims.row(..., test=...))"
        )
    decided = c[c.verdict.isin(["pass", "fail"])]
    no_power = decided[~np.isfinite(decided["detectable"].astype(float))]
    if len(no_power):
        raise ValueError(
            f"{where}: claim {no_power.iloc[0].claim_id} has a verdict but no "
            "detectable effect (sigprop.claims.row(..., detectable=...)); a test "
            "that cannot state its power is 'inconclusive'"
        )
    if "margin" in df:
        m = c.margin.astype(float)
        over = c[
            (c.verdict == "pass") & np.isfinite(m) & ~(c.detectable.astype(float) <= m * (1 + 1e-9))
        ]
        if len(over):
            r = over.iloc[0]
            raise ValueError(
                f"{where}: equivalence claim {r.claim_id} passes with detectable "
                f"{r.detectable:.4g} above its margin {r.margin:.4g}; it can only be "
                "'inconclusive' (sigprop.claims.row applies the margin)"
            )
    if "false_pass" in df:
        fp = c.false_pass.astype(float)
        loose = c[(c.verdict == "pass") & c.kind.isin(["claim", "beyond"]) & (fp > FALSE_PASS_MAX)]
        if len(loose):
            r = loose.iloc[0]
            raise ValueError(
                f"{where}: claim {r.claim_id} passes with false_pass "
                f"{r.false_pass:.3g} above {FALSE_PASS_MAX:g}: a test that passes "
                "that often without the effect is 'inconclusive' (sigprop.claims.row "
                "applies the rule)"
            )
    for r in c.itertuples():
        miss = threshold_mismatches(
            r.expected,
            r.test,
            float(r.tolerance) if isinstance(r.tolerance, (int, float)) else float("nan"),
        )
        if miss:
            raise ValueError(
                f"{where}: claim {r.claim_id}: expected {r.expected!r} names the "
                f"threshold {miss[0]:g}, which its test does not apply ({r.test!r})"
            )
    wrong = df[(df["kind"] == "beyond") != df["source"].astype(str).str.startswith(BEYOND)]
    wrong = wrong[wrong["kind"].isin(["claim", "beyond"])]
    if len(wrong):
        r = wrong.iloc[0]
        raise ValueError(
            f"{where}: claim {r.claim_id} is of kind {r.kind!r} with source "
            f"{r.source!r}; a statement the paper does not make is of kind 'beyond' "
            f"and its source starts with {BEYOND!r} (sigprop.claims.beyond)"
        )
    if paper is not None:
        src = df["source"].astype(str)
        outside = df[(df["kind"] == "claim") & ~((src == paper) | src.str.startswith(f"{paper} "))]
        if len(outside):
            r = outside.iloc[0]
            raise ValueError(
                f"{where}: claim {r.claim_id} has source {r.source!r}, outside paper "
                f"{paper}: a claim's source is an item of its own paper ('{paper} "
                "Eq. ...'); another paper's statement is of kind 'beyond'"
            )


def coarse(value: float, denominator: int = 1000) -> bool:
    """Whether ``value`` is a fraction with a small denominator (a count share, a tau of few
    untied items, 0, 1): a value that unrelated measurements can share by chance."""
    v = abs(float(value))
    return abs(v - float(Fraction(v).limit_denominator(denominator))) < 1e-12


def twin_pairs(df: pd.DataFrame) -> list[tuple[str, str, float]]:
    """Pairs of counted claims whose measured values agree in magnitude to 12 significant
    digits and are not :func:`coarse`: the same measurement counted twice (e.g. a "rises with"
    tau and the "falls with" tau of the same nets).  Returns ``(claim id, claim id, value)``."""
    c = claims_only(df)
    seen: dict[float, str] = {}
    out = []
    for r in c.itertuples():
        m = float(r.measured) if isinstance(r.measured, (int, float, np.floating)) else np.nan
        if not np.isfinite(m) or coarse(m):
            continue
        key = float(f"{abs(m):.12g}")
        ident = f"{r.study}:{r.claim_id}"
        if key in seen:
            out.append((seen[key], ident, m))
        else:
            seen[key] = ident
    return out


def check_sources(df: pd.DataFrame, where: str) -> None:
    """Stop with ``where`` named when a claim or beyond row does not say where its tolerance
    comes from (``tolerance_source`` starting with one of
    :data:`sigprop.claims.reading.TOLERANCE_KINDS`: declare it under the study file's
    ``tolerance_sources``)."""
    from .reading import TOLERANCE_KINDS, tolerance_kind

    c = df[df["kind"].isin(["claim", "beyond"])]
    src = (
        c["tolerance_source"].fillna("").astype(str)
        if "tolerance_source" in c
        else pd.Series("", index=c.index)
    )
    bad = c[[tolerance_kind(v) == "" for v in src]]
    if len(bad):
        r = bad.iloc[0]
        raise ValueError(
            f"{where}: claim {r.claim_id} does not say where its tolerance comes "
            f"from (tolerance_source {src[bad.index[0]]!r}): declare it under the "
            "study file's tolerance_sources as '<kind>: <where or why>', kind one "
            f"of {TOLERANCE_KINDS}"
        )


def design_changes(design: dict | None, scale: str) -> list[dict]:
    """The changes of a study's ``design:`` that apply to ``scale`` (a change names its scale,
    or ``both``; one that names none applies to both; a ladder rung is grown from the quick
    design, so the quick scale's changes apply to it)."""
    from sigprop.contract import base_scales

    own = set(base_scales(scale)) | {"both"}
    return [c for c in (design or {}).get("changes") or [] if c.get("scale", scale) in own]


def mark_exploratory(df: pd.DataFrame, changes: list[dict]) -> pd.DataFrame:
    """``exploratory = True`` on every row whose claim id matches a pattern in a change's
    ``affects`` (shell-style, e.g. ``threshold_*``): its verdict was obtained after the design
    was changed."""
    df = df.copy()
    hit = np.zeros(len(df), bool)
    for c in changes:
        for pat in c.get("affects") or []:
            hit |= np.array([fnmatch.fnmatchcase(str(i), pat) for i in df.claim_id], bool)
    df["exploratory"] = df["exploratory"].astype(bool) | hit
    return df
