"""Claims declared once (sigprop.contract.Claim) and filled with a study's statistics
(sigprop.claims.declared): texts filled from the row's fields, the row rules applied, and an
undeclared claim or an unfilled slot refused by name."""

from __future__ import annotations

import ast
import importlib
import math
import re
from pathlib import Path

import pytest

from sigprop import registry
from sigprop.claims import check_table
from sigprop.claims.declared import build, result
from sigprop.contract import Claim

DECLARED = {
    "rate_matches": Claim(
        statement="The rate matches Eq. 9",
        expected="|rate - theory| <= {k:g} SE",
        test="z test over {n} seeds; equivalence margin {m:g}",
        detail="rate {rate:.3f}",
    ),
    "identity": Claim(
        statement="Output equals input at depth 0", test="exact", kind="sanity", source="000 §2"
    ),
    "wider": Claim(statement="Wider is better", test="sign of the slope", kind="beyond"),
}


def _rows(**over):
    r = dict(measured=0.1, tolerance=0.3, verdict="pass", detectable=0.05, margin=0.1)
    r.update(over)
    return [
        result("rate_matches", "tanh", k=3, n=5, m=0.1, rate=0.1234, **r),
        result("identity", measured=0.0, tolerance=0.0, verdict="pass"),
        result("wider", measured=1.0, tolerance=0.0, verdict="pass", detectable=0.5),
    ]


def test_declared_texts_are_filled_with_the_rows_fields():
    df = build("s", DECLARED, _rows(), source="000 Eq. 9")
    r = df.set_index("claim_id")
    assert list(r.index) == ["rate_matches[tanh]", "identity", "wider"]
    assert r.loc["rate_matches[tanh]", "expected"] == "|rate - theory| <= 3 SE"
    assert r.loc["rate_matches[tanh]", "test"].startswith("z test over 5 seeds; equivalence")
    assert r.loc["rate_matches[tanh]", "detail"] == "rate 0.123"
    assert r.loc["rate_matches[tanh]", "source"] == "000 Eq. 9"
    assert (r.loc["identity", "kind"], r.loc["identity", "source"]) == ("sanity", "000 §2")
    assert r.loc["wider", "kind"] == "beyond" and r.loc["wider", "source"].startswith("beyond")
    check_table(df, "study s", paper="000")


def test_the_row_rules_still_apply_to_declared_claims():
    """An equivalence claim whose test cannot resolve its margin does not pass."""
    df = build("s", DECLARED, _rows(detectable=0.5), source="000 Eq. 9")
    assert df.verdict.iloc[0] == "inconclusive" and math.isclose(df.margin.iloc[0], 0.1)


def test_an_undeclared_claim_or_an_unfilled_slot_is_refused_by_name():
    with pytest.raises(KeyError, match="claim 'other' is not declared in CLAIMS"):
        build("s", DECLARED, [result("other", measured=1, tolerance=0, verdict="pass")])
    with pytest.raises(KeyError, match=r"rate_matches\[tanh\]: its declared test has the slot"):
        build(
            "s",
            DECLARED,
            [
                result(
                    "rate_matches", "tanh", measured=1, tolerance=0, verdict="pass", k=3, rate=1.0
                )
            ],
        )
    with pytest.raises(ValueError, match="claim kind must be one of"):
        Claim(statement="x", test="y", kind="opinion")


def _result_claims(source: str) -> set[str]:
    """The claim names given as a literal first argument of ``result(...)`` in a module."""
    return {
        n.args[0].value
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call)
        and getattr(n.func, "id", getattr(n.func, "attr", "")) == "result"
        and n.args
        and isinstance(n.args[0], ast.Constant)
    }


@pytest.mark.parametrize("kind", registry.kinds())
def test_every_study_declares_its_claims_and_builds_its_rows_from_them(kind):
    """A study's claims code returns statistics only: it builds no row itself (no row builder
    of sigprop.claims imported), every claim it fills is declared in ``CLAIMS``, every declared
    claim is filled somewhere, and each claim pattern a figure shows names a declared claim."""
    module = importlib.import_module(registry.module_of(kind))
    declared = getattr(module, "CLAIMS", None)
    assert declared and all(isinstance(c, Claim) for c in declared.values()), kind
    code = "\n".join(
        p.read_text() for p in Path(module.__file__).parent.glob("*.py") if p.name != "__init__.py"
    )
    builders = {"row", "sanity", "control", "beyond", "pooled"}
    for n in ast.walk(ast.parse(code)):
        if isinstance(n, ast.ImportFrom) and (n.module or "").endswith("claims"):
            assert not builders & {a.name for a in n.names}, f"{kind} builds rows itself"
    filled = _result_claims(code)
    assert filled <= set(declared), f"{kind}: filled but not declared: {filled - set(declared)}"
    assert set(declared) <= filled | _dynamic(code), f"{kind}: declared, never filled"
    for fig in registry.spec(kind).figures.values():
        for pat in fig.claims:
            stem = re.split(r"[\[*?]", pat)[0]
            assert any(c.startswith(stem) for c in declared), f"{kind}: {pat} names no claim"


def _dynamic(code: str) -> set[str]:
    """Claim names that reach ``result`` through a variable: every string constant of the
    code (a declared claim must at least be named in it)."""
    return {
        n.value
        for n in ast.walk(ast.parse(code))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_a_row_may_differ_from_its_declaration_in_kind_source_and_texts():
    """The paper's statement tested on a setting it does not cover is a ``beyond`` row of the
    same claim; a row with nothing to test replaces the declared ``expected``."""
    rows = [
        result(
            "rate_matches",
            "relu",
            kind="beyond",
            source="000 Eq. 9 extended to relu",
            measured=0.1,
            tolerance=0.3,
            verdict="inconclusive",
            texts={"expected": "data for {what}"},
            k=3,
            n=5,
            m=0.1,
            rate=0.1,
            what="relu",
        )
    ]
    r = build("s", DECLARED, rows, source="000 Eq. 9").iloc[0]
    assert (r.kind, r.source) == ("beyond", "beyond the paper: 000 Eq. 9 extended to relu")
    assert r.expected == "data for relu" and r.claim == "The rate matches Eq. 9"
    assert build("s", DECLARED, rows).equals(build("s", DECLARED, rows)), "build is pure"
    with pytest.raises(KeyError, match="texts may replace"):
        result("rate_matches", measured=1, tolerance=0, verdict="pass", texts={"claim": "x"})
    with pytest.raises(ValueError, match="kind must be one of"):
        result("rate_matches", measured=1, tolerance=0, verdict="pass", kind="aside")
