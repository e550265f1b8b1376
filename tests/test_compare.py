"""``sigprop compare``: two results folders' claims and tables, value by value."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sigprop.claims import frame, row
from sigprop.cli import main
from sigprop.compare import compare


def _claims(root, measured=0.5, verdict="pass", extra=False):
    rows = [row("s", "a[x]", "c", "src", measured, ">= 0.4", 0.1, verdict, "d"),
            row("s", "b", "c", "src", np.nan, "", 0.0, "inconclusive", "")]
    if extra:
        rows.append(row("s", "c", "c", "src", 1.0, "", 0.0, "pass", ""))
    (root / "s").mkdir(parents=True, exist_ok=True)
    frame(rows).to_parquet(root / "s" / "claims.parquet")


def test_identical_folders_have_no_difference(tmp_path, capsys):
    _claims(tmp_path / "a")
    _claims(tmp_path / "b")
    assert compare(tmp_path / "a", tmp_path / "b") == {}
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "0 of 1 files differ" in capsys.readouterr().out


def test_every_kind_of_difference_is_reported(tmp_path, capsys):
    _claims(tmp_path / "a")
    _claims(tmp_path / "b", measured=0.5 + 1e-12, verdict="fail", extra=True)
    d = compare(tmp_path / "a", tmp_path / "b")["s/claims.parquet"]
    assert "('s', 'a[x]'): measured: 0.5 -> 0.500000000001" in d
    assert "('s', 'a[x]'): verdict: 'pass' -> 'fail'" in d
    assert "only after: ('s', 'c')" in d
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    # a relative tolerance forgives the rounding, not the verdict
    d = compare(tmp_path / "a", tmp_path / "b", rtol=1e-9)["s/claims.parquet"]
    assert not any("measured" in x for x in d) and any("verdict" in x for x in d)
    pd.DataFrame({"x": [1.0]}).to_csv(tmp_path / "a" / "t.csv")
    (tmp_path / "a" / "papers" / "000").mkdir(parents=True)
    pd.DataFrame({"x": [1.0]}).to_csv(tmp_path / "a" / "papers" / "000" / "table1.csv")
    assert compare(tmp_path / "a", tmp_path / "b")["papers/000/table1.csv"] == ["only in before"]
