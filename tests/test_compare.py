"""``sigprop compare``: two results folders' claims and tables, value by value."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sigprop.claims import frame, row
from sigprop.cli import main
from sigprop.tools.compare import TIMING_METRICS, compare


def _claims(root, measured=0.5, verdict="pass", extra=False):
    rows = [
        row("s", "a[x]", "c", "src", measured, ">= 0.4", 0.1, verdict, "d"),
        row("s", "b", "c", "src", np.nan, "", 0.0, "inconclusive", ""),
    ]
    if extra:
        rows.append(row("s", "c", "c", "src", 1.0, "", 0.0, "pass", ""))
    (root / "s").mkdir(parents=True, exist_ok=True)
    frame(rows).to_parquet(root / "s" / "claims.parquet")


def test_identical_folders_have_no_difference(tmp_path, capsys):
    _claims(tmp_path / "a")
    _claims(tmp_path / "b")
    assert compare(tmp_path / "a", tmp_path / "b") == {}
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "0 of 1 files differ" in out and "compared 1 claims" in out


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


def _run(root, scale=1.0, theory=1.0, summary="**000** quick scale: 1 claims\n"):
    """A results folder with every kind of output compare reads."""
    s = root / "s"
    (s / "runs").mkdir(parents=True, exist_ok=True)
    (root / "papers" / "000").mkdir(parents=True, exist_ok=True)
    runs = pd.DataFrame(
        {
            "study": "s",
            "shard_id": "sa",
            "run_id": ["r1", "r1", "r2"],
            "step": [0, 10, 0],
            "metric": "loss",
            "value": np.array([1.0, 0.5, 2.0]) * scale,
        }
    )
    runs.to_parquet(s / "runs" / "sa.parquet")
    runs.assign(block="b").to_parquet(s / "metrics.parquet")
    pd.DataFrame(
        {"study": "s", "quantity": ["q", "q"], "depth": [1, 2], "value": [0.5 * theory, 0.7]}
    ).to_parquet(s / "theory.parquet")
    _claims(root)
    (s / "claims.html").write_text("<html>claims</html>\n")
    (root / "papers" / "000" / "summary.md").write_text(summary)


def test_every_table_and_text_output_is_compared(tmp_path, capsys):
    """A merged table scaled by 1.5, a changed theory table, shard table or summary: each is a
    difference (before, only claims tables were read: '0 of 27 files differ')."""
    _run(tmp_path / "a")
    _run(tmp_path / "b")
    assert compare(tmp_path / "a", tmp_path / "b") == {}
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert (
        "compared 1 claims, 1 merged run tables, 1 theory tables, 1 shard tables, 2 text outputs"
    ) in out
    _run(tmp_path / "c", scale=1.5)
    d = compare(tmp_path / "a", tmp_path / "c")
    assert set(d) == {"s/metrics.parquet", "s/runs/sa.parquet"}
    assert "('r1', 10, 'loss'): value: 0.5 -> 0.75" in d["s/metrics.parquet"]
    _run(tmp_path / "d", theory=2.0)
    assert (
        "('s', 'q', 1): value: 0.5 -> 1.0"
        in compare(tmp_path / "a", tmp_path / "d")["s/theory.parquet"]
    )
    _run(tmp_path / "e", summary="**000** quick scale: 2 claims\n")
    assert compare(tmp_path / "a", tmp_path / "e")["papers/000/summary.md"][0].startswith("line 1:")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "e")]) == 1


def test_a_missing_or_empty_folder_is_an_error_not_a_match(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    _run(tmp_path / "a")
    assert main(["compare", str(tmp_path / "nope"), str(tmp_path / "nothing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "empty")]) == 2
    assert "holds no outputs" in capsys.readouterr().err


def _seeded(root, measured, se, verdict):
    (root / "s").mkdir(parents=True, exist_ok=True)
    frame(
        [
            row("s", "moved", "c", "src", measured, "> 0", 0.0, verdict, "", se=se),
            row("s", "still", "c", "src", 2.0, "> 0", 0.0, "pass", "", se=0.5),
            row("s", "rank", "c", "src", 0.6, "> 0", 0.0, "pass", ""),
        ]
    ).to_parquet(root / "s" / "claims.parquet")


def test_claim_shifts_are_stated_in_units_of_the_rows_own_se(tmp_path, capsys):
    from sigprop.tools.compare import claim_shifts

    _seeded(tmp_path / "a", 1.0, 0.2, "inconclusive")
    _seeded(tmp_path / "b", 1.5, 0.4, "pass")
    sh = claim_shifts(tmp_path / "a", tmp_path / "b").set_index("claim_id")
    # the before run's SE: (1.5 - 1.0) / 0.2
    assert sh.loc["moved", "shift"] == 0.5 and sh.loc["moved", "shift_se"] == 2.5
    assert sh.loc["still", "shift_se"] == 0.0 and sh.loc["rank", "shift_se"] == 0.0
    csv = tmp_path / "shifts.csv"
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--shifts", str(csv)]) == 1
    out = capsys.readouterr().out
    assert "claim rows: 3 on both sides, 1 moved, largest |shift| 2.50 SE" in out
    assert "s moved (claim): 1 -> 1.5 (+2.50 SE); verdict inconclusive -> pass" in out
    assert "verdicts changed: 1\n  s moved: inconclusive -> pass" in out
    assert len(pd.read_csv(csv)) == 3


def test_a_row_that_moves_without_an_se_says_so(tmp_path, capsys):
    from sigprop.tools.compare import claim_shifts

    _seeded(tmp_path / "a", 1.0, float("nan"), "pass")
    _seeded(tmp_path / "b", 1.1, float("nan"), "pass")
    sh = claim_shifts(tmp_path / "a", tmp_path / "b").set_index("claim_id")
    assert np.isnan(sh.loc["moved", "shift_se"]) and np.isclose(sh.loc["moved", "shift"], 0.1)
    main(["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    out = capsys.readouterr().out
    assert "1 moved without an SE" in out and "(no SE); verdict pass" in out
    assert "verdicts changed: 0" in out


def test_a_table_written_before_the_se_column_uses_the_other_runs_se(tmp_path):
    from sigprop.tools.compare import claim_shifts

    _seeded(tmp_path / "a", 1.0, 0.2, "pass")
    _seeded(tmp_path / "b", 1.6, 0.3, "pass")
    old = pd.read_parquet(tmp_path / "a" / "s" / "claims.parquet").drop(columns=["se"])
    old.to_parquet(tmp_path / "a" / "s" / "claims.parquet")
    sh = claim_shifts(tmp_path / "a", tmp_path / "b").set_index("claim_id")
    assert np.isclose(sh.loc["moved", "shift_se"], 2.0)  # (1.6 - 1.0) / 0.3


def test_a_column_whose_dtype_changed_is_a_difference(tmp_path, capsys):
    """A float column written as text, or an integer one as floats, reads the same value by
    value; the change of dtype is reported, naming the column and both dtypes."""
    _run(tmp_path / "a")
    _run(tmp_path / "b")
    after = tmp_path / "b" / "s"
    merged, theory = after / "metrics.parquet", after / "theory.parquet"
    runs = pd.read_parquet(merged)
    runs.assign(value=runs["value"].astype(str)).to_parquet(merged)
    th = pd.read_parquet(theory)
    th.assign(depth=th["depth"].astype(float)).to_parquet(theory)
    d = compare(tmp_path / "a", tmp_path / "b")
    value = str(pd.read_parquet(merged)["value"].dtype)
    assert d["s/metrics.parquet"] == [f"value: dtype float64 -> {value}"]
    assert d["s/theory.parquet"] == ["depth: dtype int64 -> float64"]
    assert set(d) == {"s/metrics.parquet", "s/theory.parquet"}
    for side, col in (("a", 1), ("b", 1.0)):
        (tmp_path / side / "papers" / "000" / "table1.csv").write_text(f"x,y\n{col},z\n")
    assert compare(tmp_path / "a", tmp_path / "b")["papers/000/table1.csv"] == [
        "x: dtype int64 -> float64"
    ]
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    assert "value: dtype float64 -> " in capsys.readouterr().out


def test_ignore_timing_leaves_out_only_the_metrics_that_time_the_run(tmp_path, capsys):
    """Two runs whose wall seconds differ differ; with --ignore-timing they do not, and a
    changed loss is still found."""
    for root, secs, loss in (("a", 1.0, 0.5), ("b", 2.0, 0.5), ("c", 2.0, 0.6)):
        s = tmp_path / root / "s"
        s.mkdir(parents=True)
        pd.DataFrame(
            {
                "run_id": "r1",
                "step": 0,
                "metric": ["loss", "train_seconds", "values_per_second"],
                "value": [loss, secs, 1 / secs],
            }
        ).to_parquet(s / "metrics.parquet")
    a, b, c = (str(tmp_path / x) for x in "abc")
    assert "s/metrics.parquet" in compare(a, b)
    assert compare(a, b, ignore=TIMING_METRICS) == {}
    assert main(["compare", a, b, "--ignore-timing"]) == 0
    assert (
        "left out of the run tables: the metrics *seconds, *per_second, *gflops"
        in capsys.readouterr().out
    )
    assert list(compare(a, c, ignore=TIMING_METRICS)) == ["s/metrics.parquet"]
