"""000 Table 1, rebuilt from the claims of the 000 studies.

Table 1 of 000 lists, per metric, the depth scale that governs it under the
"realistic condition" (000, no gradient independence) and under the
"independent assumption" of Schoenholz et al. [6], and the empirical trainable
depth each implies: q_ab ~ ξ2 for both; g_aa ~ ξ1 for both; g_ab ~ ξ1 (000)
against ξ2 ([6]); trainable depth min(12ξ1, 12ξ2) (000) against 6ξ2 ([6]).

Here a third row says what our measurements support (from claim rows only: a sanity
row, such as g_ab at rho = 1 where it equals g_aa by construction, is not evidence), and a fourth cites the
claims that decide it with their verdicts.  A column whose claims were not run
(study not in the config) says so instead of guessing.  Nothing is copied from
the paper except its two rows of depth scales.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import values

COLUMNS = ["q_ab", "g_aa", "g_ab", "trainable depth"]
PAPER_ROWS = {
    "realistic condition (000)": ["ξ2", "ξ1", "ξ1", "min(12ξ1, 12ξ2)"],
    "independent assumption ([6])": ["ξ2", "ξ1", "ξ2", "6ξ2"],
}
# claim-id prefixes (from the 000 studies) that decide each column
EVIDENCE = {
    "q_ab": ("c_map_matches_simulation",),
    "g_aa": ("g_aa_decays_at_chi1", "eq12_predicts_g_aa"),
    "g_ab": ("g_ab_follows_chi1", "g_ab_abs_decays_at_chi1"),
    "trainable depth": ("boundary_min12xi_vs_6xi2",),
}
BOUNDARY_ALL = "boundary_min12xi_vs_6xi2[all]"


def _evidence(claims: pd.DataFrame, column: str, pooled: bool = False) -> pd.DataFrame:
    """The claim rows that decide ``column``: sanity rows (e.g. g_ab at rho = 1, where it
    equals g_aa by construction) are never evidence; pooled summaries (the boundary over all
    panels) only with ``pooled``, for the measured row."""
    if "kind" in claims.columns:
        claims = claims[claims["kind"].isin(["claim", "summary"] if pooled else ["claim"])]
    ids = claims.claim_id.astype(str)
    keep = np.zeros(len(claims), bool)
    for p in EVIDENCE[column]:
        keep |= ids.str.startswith(p + "[").to_numpy()
    return claims[keep]


def _count(ev: pd.DataFrame) -> str:
    n = ev.verdict.value_counts()
    return ", ".join(f"{n.get(v, 0)} {v}" for v in ("pass", "fail", "inconclusive") if n.get(v, 0))


def _measured(column: str, ev: pd.DataFrame) -> str:
    if ev.empty:
        return "not run (its study is not in the config)"
    ok = bool((ev.verdict == "pass").all())
    undecided = not ok and not (ev.verdict == "fail").any() and (ev.verdict == "pass").any()
    if column == "q_ab":
        return (
            "ξ2 not tested directly; the c-map it follows from (Eqs. 3-4) matches simulation"
            if ok
            else "c-map does not match simulation (see claims)"
        )
    where = f"where decided ({_count(ev)}, none failing)" if undecided else ""
    if column == "g_aa":
        return "ξ1" if ok else (f"ξ1 {where}" if undecided else "not ξ1 everywhere (see claims)")
    if column == "g_ab":
        return (
            "ξ1 (decay rate χ1, not χ2)"
            if ok
            else (
                f"ξ1 (decay rate χ1, not χ2) {where}"
                if undecided
                else "not ξ1 everywhere (see claims)"
            )
        )
    allrow = ev[ev.claim_id == BOUNDARY_ALL]
    if allrow.empty:
        return "no overall boundary claim"
    r = allrow.iloc[0]
    v = values(r)
    errs = f"fit errors: min(12ξ1, 12ξ2) {v['err_min_12xi1_12xi2']:.3f}, 6ξ2 {v['err_6xi2']:.3f}"
    if r.verdict == "pass":
        return f"min(12ξ1, 12ξ2) ({errs})"
    if r.verdict == "fail":
        return f"6ξ2 fits better ({errs})"
    return f"neither fits better ({errs})"


def table1(claims: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``{"table1": the depth-scale table, "fit_errors": one row per Fig. 7 panel}``."""
    rows = {k: list(v) for k, v in PAPER_ROWS.items()}
    measured, evidence = [], []
    for col in COLUMNS:
        ev = _evidence(claims, col)
        measured.append(_measured(col, _evidence(claims, col, pooled=True)))
        evidence.append(
            "; ".join(f"{r.study}:{r.claim_id} {r.verdict}" for r in ev.itertuples())
            if not ev.empty
            else ""
        )
    rows["measured (sigprop)"] = measured
    rows["verdicts"] = [_count(_evidence(claims, c)) for c in COLUMNS]
    rows["claims"] = evidence
    main = pd.DataFrame.from_dict(rows, orient="index", columns=COLUMNS)
    main.index.name = "condition"
    fits = []
    for r in _evidence(claims, "trainable depth").itertuples():
        v = values(pd.Series(r._asdict()))
        fits.append(
            {
                "panel": r.claim_id.split("[", 1)[1].rstrip("]"),
                "err_min_12xi1_12xi2": v.get("err_min_12xi1_12xi2", np.nan),
                "err_6xi2": v.get("err_6xi2", np.nan),
                "cells": v.get("cells", np.nan),
                "verdict": r.verdict,
            }
        )
    fit = pd.DataFrame(
        fits, columns=["panel", "err_min_12xi1_12xi2", "err_6xi2", "cells", "verdict"]
    )
    return {"table1": main.reset_index(), "fit_errors": fit}
