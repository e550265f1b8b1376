"""Paper claims as checks over Parquet tables: each returns rows of
``sigprop.tables.CLAIM_COLUMNS`` with a measured value, what the paper expects, a tolerance, a
verdict (pass / fail / inconclusive), the test used and the smallest effect it could detect.

Five kinds of row (:data:`KINDS`): a ``claim`` tests a paper's statement against measurement
and could come out either way; a ``beyond`` row tests a statement the paper does not make (its
``source`` says "beyond the paper"); a ``sanity`` row is an identity or a theorem that must hold
if the apparatus is right; a ``control`` checks that a test has power, e.g. that the test which
accepts the paper's value rejects a wrong one, and like a claim states its test and the effect
it can detect, so an underpowered control reads ``inconclusive`` ("could not resolve"), not as a
broken apparatus; a ``summary`` pools measurements that claim rows already test (e.g. all panels
at once, as a paper's plot does).  Only claims are counted in a paper's tally (:func:`tally`):
one measurement, one counted row.

An equivalence claim ("equals", "matches", "within") states a ``margin``: the largest deviation
the paper's statement tolerates, in the units of ``detectable``.  Failing to find a deviation
is evidence only when the test could have found one of that size, so such a claim passes only
when ``detectable <= margin`` (:func:`row` makes it ``inconclusive`` otherwise, and
:func:`check_table` refuses a table that breaks the rule).

Statistical helpers here state their power: :func:`z_within`, :func:`z_equivalent` and
:func:`z_above` (the deviation
that ``k`` standard errors can resolve), :func:`rank_claim` (Kendall's tau with its attainable
levels and its chance of passing under no association, ties included: :func:`tau_null_law`) and
:func:`max_abs_z_bootstrap` (one joint test over points that share initializations).


The helpers live by role: :mod:`~sigprop.claims.rows` (row builders and the tally),
:mod:`~sigprop.claims.statistics` (the tests and their power) and
:mod:`~sigprop.claims.checks` (the table's contract); this package exports them all, so a
study's ``claims.py`` imports what it needs from ``sigprop.claims``.
"""

from __future__ import annotations

from .checks import (
    check_sources,
    check_table,
    coarse,
    design_changes,
    mark_exploratory,
    threshold_mismatches,
    twin_pairs,
)
from .rows import (
    BEYOND,
    FALSE_PASS_MAX,
    KINDS,
    MIN_ORDERED_ITEMS,
    STATED,
    VERDICTS,
    beyond,
    claims_only,
    control,
    frame,
    pooled,
    row,
    sanity,
    tally,
    values,
)
from .statistics import (
    TAU_TOL,
    TIE_EXACT_MAX,
    TIE_SAMPLES,
    below_fraction,
    exceeds,
    false_pass_z,
    kendall_inversion_counts,
    kendall_law,
    kendall_levels,
    kendall_null_pass,
    kendall_tau,
    level_verdict,
    level_words,
    margin_verdict,
    max_abs_z_bootstrap,
    rank_claim,
    rank_verdict,
    significant_levels,
    tau_null_law,
    z_above,
    z_equivalent,
    z_within,
)

__all__ = [
    "BEYOND",
    "FALSE_PASS_MAX",
    "KINDS",
    "MIN_ORDERED_ITEMS",
    "STATED",
    "TAU_TOL",
    "TIE_EXACT_MAX",
    "TIE_SAMPLES",
    "VERDICTS",
    "below_fraction",
    "beyond",
    "check_sources",
    "check_table",
    "claims_only",
    "coarse",
    "control",
    "design_changes",
    "exceeds",
    "false_pass_z",
    "frame",
    "kendall_inversion_counts",
    "kendall_law",
    "kendall_levels",
    "kendall_null_pass",
    "kendall_tau",
    "level_verdict",
    "level_words",
    "margin_verdict",
    "mark_exploratory",
    "max_abs_z_bootstrap",
    "pooled",
    "rank_claim",
    "rank_verdict",
    "row",
    "sanity",
    "significant_levels",
    "tally",
    "tau_null_law",
    "threshold_mismatches",
    "twin_pairs",
    "values",
    "z_above",
    "z_equivalent",
    "z_within",
]
