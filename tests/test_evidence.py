"""Paper-scale evidence (sigprop.publish.evidence): the committed tables still belong to the paper-scale
config, the checks can fail, and the quick-vs-paper table flags changed verdicts."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from conftest import REPO, commit_claims

from sigprop.claims import row, sanity
from sigprop.claims.committed import declared_regime, read_claims
from sigprop.publish import evidence as E

COMMITTED = REPO / "docs/evidence/paper-scale"
CONFIG = REPO / "config/config.yaml"


@pytest.fixture
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)  # studies_dir in the config is relative to the repository


def _claims(study, verdicts):
    """A claims table whose claims' tolerances admit none beyond sampling error (``exact``), so
    a fail in the paper's regime contradicts the paper."""
    return pd.DataFrame(
        [
            row(
                study,
                cid,
                "a claim",
                "src",
                m,
                1.0,
                0.1,
                v,
                test="z",
                detectable=0.1,
                tolerance_source="exact: an equality",
            )
            for cid, (v, m) in verdicts.items()
        ]
        + [sanity(study, "identity", "an identity", "src", 1.0, 1.0, 0.1, "pass")]
    )


def test_committed_paper_scale_tables_match_todays_paper_scale_config(in_repo):
    """Every committed study's run ids are those its paper-scale config generates today."""
    dirs = sorted(p.name for p in COMMITTED.iterdir() if p.is_dir())
    assert {
        "meanfield_maps",
        "dropout_ensemble",
        "residual_ntk",
        "gradient_universality",
        "jacobian_moments",
        "diversity_linear",
        "gradient_metrics",
    } <= set(dirs), dirs
    assert E.check(COMMITTED, CONFIG) == []
    for d in dirs:
        prov = json.loads((COMMITTED / d / "provenance.json").read_text())
        assert prov["scale"] == "paper" and prov["commit"] and prov["wall_s"] > 0
        assert prov["machine"]["gpu"] is None  # no GPU figure anywhere
        assert (COMMITTED / d / "claims.md").read_text().startswith(f"# {d}: paper-scale claims")


def test_check_notices_a_config_that_no_longer_gives_the_committed_runs(in_repo, tmp_path):
    """A table published, consistently, from other runs than the config gives today."""
    src = COMMITTED / "meanfield_maps"
    claims = pd.read_parquet(src / "claims.parquet")
    commit_claims(tmp_path / "meanfield_maps", claims, runs=["not", "these", "runs"])
    problems = E.check(tmp_path, CONFIG, gpu=None)
    assert len(problems) == 1 and "are not those the committed verdicts came from" in problems[0]
    shutil.rmtree(tmp_path / "meanfield_maps")
    shutil.copytree(src, tmp_path / "meanfield_maps")
    assert E.check(tmp_path, CONFIG, gpu=None) == []


def test_publish_refuses_results_that_are_not_the_paper_scale_runs(in_repo, tmp_path):
    res = tmp_path / "results" / "meanfield_maps"
    res.mkdir(parents=True)
    _claims("meanfield_maps", {"a": ("pass", 1.0)}).to_parquet(res / "claims.parquet")
    pd.DataFrame({"run_id": ["r000000000000"]}).to_parquet(res / "metrics.parquet")
    with pytest.raises(ValueError, match="not a paper-scale run of this config"):
        E.publish("meanfield_maps", tmp_path / "results", tmp_path / "ev", CONFIG)
    assert not (tmp_path / "ev").exists()
    with pytest.raises(FileNotFoundError, match="run the study at paper scale first"):
        E.publish("meanfield_maps", tmp_path / "nothing", tmp_path / "ev", CONFIG)


def test_matrix_flags_changed_verdicts_and_claims_of_one_scale_only():
    from sigprop.claims.matrix import changed, verdict_matrix

    q = _claims("s", {"a": ("pass", 1.0), "b": ("fail", 2.0), "only_quick": ("pass", 0.5)})
    p = _claims("s", {"a": ("pass", 1.1), "b": ("inconclusive", 1.5), "only_paper": ("fail", 3.0)})
    m = verdict_matrix(q, p).set_index("claim_id")
    flags = changed(m.reset_index()).set_axis(m.index)
    assert not flags["a"] and flags["b"] and not flags["only_quick"]
    assert (m.loc["b", "run_verdict"], m.loc["b", "paper_verdict"]) == ("fail", "inconclusive")
    assert m.loc["only_quick", "paper_verdict"] == "-" and m.loc["only_paper", "run_verdict"] == "-"
    assert m.loc["a", "paper_measured"] == pytest.approx(1.1)
    assert "identity" not in m.index  # sanity rows are not in the matrix


def test_matrix_shows_an_id_that_is_a_sanity_check_at_one_scale_and_a_claim_at_the_other():
    """gradient_universality's width N = 100 is Fig. 4's width at quick scale (an identity) and
    a Fig. 5 width of its own at paper scale (a claim): the row is a claim, its quick cell says
    it is a sanity check there, and it is no verdict change of a claim."""
    from sigprop.claims.matrix import changed, verdict_matrix

    q = _claims("s", {"a": ("pass", 1.0)})
    p = _claims("s", {"a": ("pass", 1.0)})
    p.loc[p.claim_id == "identity", ["kind", "verdict"]] = ["claim", "fail"]
    m = verdict_matrix(q, p)
    r = m.set_index("claim_id").loc["identity"]
    assert (r.kind, r.run_kind, r.run_reading, r.paper_kind) == (
        "claim",
        "sanity",
        "sanity: pass",
        "claim",
    )
    assert not changed(m).any()


def test_committed_tables_read_against_the_study_files_paper_regime(in_repo):
    """A committed table without the newer columns reads with margin NaN, scale paper and the
    declared paper-scale regime along each claim's axes."""
    d = COMMITTED / "gradient_universality"
    df = read_claims(
        d / "claims.parquet", {"depth": "L = 100; the paper's 200"}, {"power2*": ["depth"]}
    )
    c = df[df.kind == "claim"]
    assert set(df.scale) == {"paper"} and (c.regime == "depth: L = 100; the paper's 200").all()
    plain = read_claims(d / "claims.parquet")
    assert (plain.regime == "").all()


def test_docs_show_every_committed_claim_with_its_paper_scale_reading(in_repo):
    """docs/papers.md's per-paper blocks are generated from the quick run and the committed
    paper-scale tables; only the paper side is committed, so this checks that every committed
    claim appears with the reading its committed verdict gives."""
    import yaml

    from sigprop.claims.reading import readings

    text = (REPO / "docs/papers.md").read_text()
    for d in (p for p in COMMITTED.iterdir() if p.is_dir()):
        cfg = yaml.safe_load((REPO / "config/studies" / f"{d.name}.yaml").read_text())
        paper = read_claims(d / "claims.parquet", *declared_regime(cfg))
        paper = paper.assign(reading=readings(paper))
        block = text.split(f"<!-- claims:{cfg['paper']}:quick:start -->")[1].split("<!-- claims:")[
            0
        ]
        for r in paper[paper.kind.isin(["claim", "beyond"])].itertuples():
            line = next(
                (ln for ln in block.splitlines() if ln.startswith(f"| {d.name} | {r.claim_id} |")),
                None,
            )
            assert line is not None, (d.name, r.claim_id)
            cells = [c.strip() for c in line.split(" | ")]
            assert cells[5].startswith(r.reading.split(" at ")[0]), (d.name, r.claim_id, cells)


def test_report_page_puts_this_run_beside_the_committed_paper_scale(tmp_path):
    from sigprop import tables
    from sigprop.steps import analysis as analysis_steps

    q = _claims("s", {"a": ("pass", 1.0), "b": ("fail", 2.0)})
    p = _claims("s", {"a": ("pass", 1.25), "b": ("pass", 0.5)})
    tables.write_atomic(q, tmp_path / "q.parquet")
    commit_claims(tmp_path / "s", p, runs=[f"r{i}" for i in range(7)], wall_s=120.0)
    t = analysis_steps.scales(
        "s",
        "quick",
        str(tmp_path / "q.parquet"),
        str(tmp_path / "s" / "claims.parquet"),
        str(tmp_path / "s" / "provenance.json"),
        str(tmp_path / "scales.html"),
        json.dumps({"paper_regime": {}, "depends_on": {}}),
    )
    page = (tmp_path / "scales.html").read_text()
    assert "Claims at both scales whose verdict differs: 1." in page
    assert "quick scale (this run)" in page and "contradicts the paper" in page
    assert "<td>1.25</td>" in page and "7 runs, 2.0 min wall" in page
    assert t.set_index("claim")["paper scale (committed)"]["b"] == "supported"


def test_committed_gradient_universality_counts_one_claim_per_group_of_nets(in_repo):
    """The study file's corroborations apply to the committed paper-scale table as it is read:
    each group of nets (activation and keep rate, or width) has one counted claim, its g_aa
    power; the g_ab and g~_ab powers of the same nets are summary rows; its fails depart from
    the paper by more than our tolerance, none contradicts it (000 gives no tolerance)."""
    import yaml

    from sigprop.claims import tally
    from sigprop.claims.committed import declared_regime, read_committed

    cfg = yaml.safe_load((REPO / "config/studies/gradient_universality.yaml").read_text())
    df, _ = read_committed(COMMITTED / "gradient_universality", *declared_regime(cfg))
    c = df[df.kind == "claim"]
    assert len(c) and c.claim_id.str.contains("[g_aa, ", regex=False).all()
    groups = c.claim_id.str.replace(r"\[g_aa, ", "[", regex=True)
    assert groups.is_unique
    fits = df[df.claim_id.str.match(r"power2(_width)?\[g_ab")]
    assert set(fits.kind) <= {"summary", "sanity"} and (fits.kind == "summary").any()
    t = tally(df)
    assert t["fail_contradicts"] == 0 and t["fail_departs"] == t["fail"] > 0
    assert (c.tolerance_source.str.startswith("ours:")).all()


def test_the_check_commands_pass_on_the_committed_evidence_and_say_so(capsys):
    """`sigprop evidence check` and `sigprop ladder check` exit 0 on the committed folders and
    say what they checked (a silent exit 0 is no answer to "does the evidence hold?")."""
    from sigprop.cli import main

    assert main(["evidence", "check"]) == 0
    out = capsys.readouterr().out
    assert "studies' claims tables and provenance bound" in out
    assert main(["ladder", "check"]) == 0
    assert "rungs and" in capsys.readouterr().out
