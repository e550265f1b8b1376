"""Paper-level outputs: merged claims and 000 Table 1 built from them."""

import pandas as pd
import pytest

from sigprop import papers, tables
from sigprop.claims import frame, row
from sigprop.claims.depth_scales import table1
from sigprop.claims.render import to_markdown, write_table


def _claims(boundary_verdict="fail", g_ab_verdict="pass", with_gradients=True):
    rows = [
        row("meanfield_maps", "c_map_matches_simulation[relu]", "c", "s", 1.0, "", 0.05, "pass")
    ]
    if with_gradients:
        rows += [
            row(
                "gradient_metrics",
                "g_aa_decays_at_chi1[tanh, rho=1]",
                "c",
                "s",
                1.0,
                "",
                0.1,
                "pass",
            ),
            row(
                "gradient_metrics",
                "g_ab_follows_chi1[linear, rho=0.9]",
                "c",
                "s",
                0.6,
                "",
                0.1,
                g_ab_verdict,
            ),
        ]
    errs = {"pass": (0.05, 0.2), "fail": (0.15, 0.075), "inconclusive": (0.1, 0.11)}[
        boundary_verdict
    ]
    for panel, (e_min, e_6) in (("all", errs), ("(a)", (0.061, 0.0)), ("(e)", (0.1, 0.3))):
        verdict = boundary_verdict if panel == "all" else ("pass" if e_6 - e_min > 0.02 else "fail")
        rows.append(
            row(
                "trainable_depth",
                f"boundary_min12xi_vs_6xi2[{panel}]",
                "c",
                "s",
                e_6 - e_min,
                "> 0",
                0.02,
                verdict,
                values={"err_min_12xi1_12xi2": e_min, "err_6xi2": e_6, "cells": 36},
            )
        )
    return frame(rows)


def test_table1_reports_what_the_claims_support():
    t = table1(_claims("fail"))
    main = t["table1"].set_index("condition")
    assert list(main.index[:2]) == ["realistic condition (000)", "independent assumption ([6])"]
    assert main.loc["independent assumption ([6])", "g_ab"] == "ξ2"
    m = main.loc["measured (sigprop)"]
    assert m["g_ab"].startswith("ξ1") and m["g_aa"] == "ξ1"
    assert m["trainable depth"].startswith("6ξ2 fits better")
    assert "0.150" in m["trainable depth"] and "0.075" in m["trainable depth"]
    assert main.loc["verdicts", "trainable depth"] == "1 pass, 2 fail"
    fit = t["fit_errors"].set_index("panel")
    assert list(fit.index) == ["all", "(a)", "(e)"]
    assert fit.loc["(e)", "err_6xi2"] == pytest.approx(0.3) and fit.loc["(e)", "verdict"] == "pass"
    # the paper's side wins when the claims say so; missing studies are said, not guessed
    t = table1(_claims("pass", g_ab_verdict="fail", with_gradients=False))
    m = t["table1"].set_index("condition").loc["measured (sigprop)"]
    assert m["trainable depth"].startswith("min(12ξ1, 12ξ2)")
    assert m["g_ab"].startswith("not run")


def test_concat_claims_and_markdown(tmp_path):
    c = _claims()
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    tables.write_atomic(c[c.study == "trainable_depth"], a)
    tables.write_atomic(c[c.study != "trainable_depth"], b)
    merged = tables.concat_claims([b, a])
    assert len(merged) == len(c) and list(merged.columns) == tables.CLAIM_COLUMNS
    with pytest.raises(tables.TableError, match="appears twice"):
        tables.concat_claims([a, a])
    md = to_markdown(pd.DataFrame({"x": ["a|b", "c"], "y": [0.123456, float("nan")]}))
    assert md.splitlines() == ["| x | y |", "|---|---|", "| a\\|b | 0.1235 |", "| c | – |"]
    parts = table1(merged)
    write_table(parts, tmp_path / "t.md", tmp_path / "t.csv", "T")
    assert (tmp_path / "t.md").read_text().count("\n## ") == 2
    assert pd.read_csv(tmp_path / "t.csv").condition.iloc[2] == "measured (sigprop)"


def test_paper_registry():
    assert papers.table_function("000", "table1") is table1
    with pytest.raises(KeyError, match="no table"):
        papers.table_function("000", "table9")
    assert papers.title("000").startswith("000 Huang")


def test_table7_from_the_pruning_theory_claims():
    from sigprop.claims.critical_sparsity import table7

    rows = []
    for g, (ours, paper_emp, paper_b, printed, sq) in {
        5.0: (0.91, 0.79, 0.81, 0.598, 0.936),
        2.0: (0.99, 1.0, 5.77, 0.961, 0.996),
    }.items():
        rows.append(
            row(
                "pruning_theory",
                f"table7_empirical[gamma={g:g}]",
                "c",
                "s",
                ours,
                f"{paper_emp:g}",
                0.05,
                "pass" if abs(ours - paper_emp) <= 0.05 else "fail",
                values={
                    "gamma": g,
                    "se": 0.002,
                    "seeds": 5,
                    "paper_empirical": paper_emp,
                    "paper_bound": paper_b,
                    "bound_printed": printed,
                    "bound_sqrt_gamma": sq,
                },
            )
        )
        rows.append(
            row(
                "pruning_theory",
                f"prop4_bound_holds[printed, gamma={g:g}]",
                "c",
                "s",
                ours,
                "",
                0.0,
                "pass" if ours <= printed else "fail",
            )
        )
    t = table7(frame(rows))["table7"]
    assert t.gamma.tolist() == [2.0, 5.0]
    r5 = t.set_index("gamma").loc[5.0]
    assert (r5.paper_empirical, r5.s_cr_mean, r5.verdict_empirical) == (0.79, 0.91, "fail")
    assert r5.verdict_printed_bound == "fail" and r5.verdict_sqrt_gamma_bound == ""
    assert table7(frame([]))["table7"].empty


def test_the_papers_summary_is_a_target_of_its_own(tmp_path):
    """``results/papers/<paper>/summary.md`` (a documented output) plans the paper's claims job:
    the paper-table rule's ``{table}.md`` matches only the names of sigprop.papers.TABLES."""
    from conftest import run_snakemake, tiny_study, write_config

    cfg = write_config(tmp_path, tiny_study())
    p = run_snakemake(tmp_path, cfg, "-n", "results/papers/000/summary.md", check=False)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    assert "paper_claims" in p.stdout and "AmbiguousRuleException" not in p.stderr
    p = run_snakemake(tmp_path, cfg, "-n", "results/papers/000/table1.md")
    assert "paper_table" in p.stdout
