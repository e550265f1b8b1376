"""Budget ladders (sigprop.config.ladder, sigprop.publish.ladder): the study file's rungs checked
when the DAG is built, a rung's parameters built on the quick scale's, and the committed rungs
kept honest against the config as the paper-scale evidence is."""

from __future__ import annotations

import copy
import json
import shutil

import pandas as pd
import pytest
from conftest import REPO, commit_claims

from sigprop.claims import design_changes, row
from sigprop.claims.trend import read_trend
from sigprop.config import ConfigError, build_study, load_yaml
from sigprop.config.ladder import base_scales, is_rung, ladder_of
from sigprop.publish import ladder as L
from sigprop.tools.gpu_check import TRAINING_STUDIES

COMMITTED = REPO / "docs/evidence/ladder"
CONFIG = REPO / "config/config.yaml"
TRAINING = TRAINING_STUDIES  # the studies that train, named once (sigprop.tools.gpu_check)


@pytest.fixture
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)  # studies_dir in the config is relative to the repository


def _cfg(name="dropout_training"):
    return load_yaml(REPO / f"config/studies/{name}.yaml")


def test_rung_names_and_their_base_scales():
    assert is_rung("ladder2") and is_rung("ladder13") and not is_rung("quick")
    assert not is_rung("paper") and not is_rung("ladder")
    assert base_scales("ladder3") == ("quick", "ladder3") and base_scales("paper") == ("paper",)


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda lad: lad["rungs"].pop(), "at least 3"),
        (lambda lad: lad["rungs"][0].update(scale="ladder2"), r"rungs\[0\]\.scale"),
        (lambda lad: lad["rungs"][2].update(budget=100), "grow rung by rung"),
        (lambda lad: lad.update(paper_budget=10), "paper_budget"),
        (lambda lad: lad["rungs"][2].update(scale="ladder9"), "no scale 'ladder9'"),
    ],
)
def test_a_bad_ladder_is_refused_naming_its_key(edit, match):
    cfg = copy.deepcopy(_cfg())
    edit(cfg["ladder"])
    with pytest.raises(ConfigError, match=match) as e:
        build_study("dropout_training", "x.yaml", cfg, "quick", 64)
    assert "x.yaml: key '" in str(e.value)


def test_a_rung_scale_the_ladder_does_not_list_is_refused():
    cfg = copy.deepcopy(_cfg())
    cfg["scales"]["ladder7"] = cfg["scales"]["ladder2"]
    with pytest.raises(ConfigError, match="scales.ladder7"):
        ladder_of(cfg, "x.yaml")


def test_a_rung_runs_the_quick_claims_with_its_own_grid():
    cfg = _cfg()
    quick = build_study("dropout_training", "d.yaml", cfg, "quick", 64)
    rung = build_study("dropout_training", "d.yaml", cfg, "ladder2", 64)
    # the quick scale's claims section (success_acc 0.85, not the paper's 0.97) carries over
    assert (
        cfg["scales"]["quick"]["claims"]["success_acc"]
        != cfg["scales"]["paper"]["claims"]["success_acc"]
    )
    assert rung.params.claims == quick.params.claims
    # the rung's own Monte Carlo sizes are merged over the quick scale's
    assert rung.params.measure.mc_samples == cfg["scales"]["ladder2"]["measure"]["mc_samples"]
    assert rung.params.measure.n_inputs == quick.params.measure.n_inputs
    assert {r.width for r in rung.runs} != {r.width for r in quick.runs}
    assert {r.seed for r in rung.runs} == {r.seed for r in quick.runs}
    # the quick scale's design changes and the rung's own apply to a rung, others do not
    changes = design_changes(cfg["design"], "ladder2")
    quick_changes = design_changes(cfg["design"], "quick")
    assert all(c in changes for c in quick_changes)
    assert {c["scale"] for c in changes} <= {"quick", "both", "ladder2"}
    assert [c for c in changes if c not in quick_changes]  # its own redesign


@pytest.mark.parametrize(
    "name", ["dropout_training", "pruning_eoc", "width_batch", "training_speed", "trainable_depth"]
)
def test_declared_ladders_grow_from_the_quick_design(name):
    cfg = _cfg(name)
    lad = ladder_of(cfg, name)
    assert lad.scales[0] == "quick" and len(lad.rungs) >= 3
    assert lad.fixed and lad.paper_budget >= lad.rungs[-1].budget  # a top rung may be the paper's
    seeds = [{r.seed for r in build_study(name, "s.yaml", cfg, s, 64).runs} for s in lad.scales]
    # every rung runs the quick scale's seeds (an upper rung may add more), at least 3
    assert all(s >= seeds[0] and len(s) >= 3 for s in seeds)
    assert [len(s) for s in seeds] == [r.seeds for r in lad.rungs]  # the SEs' declared seeds


def _rung_results(tmp_path, study, scale, runs):
    """A results folder as a run of ``study`` at ``scale`` leaves it: the claims table stamped
    by the claims job, the merged table's run ids."""
    from sigprop import tables
    from sigprop.runs import runs_digest

    res = tmp_path / "results"
    (res / study).mkdir(parents=True, exist_ok=True)
    tables.write_atomic(
        pd.DataFrame(
            [
                row(
                    study,
                    "c",
                    "a claim",
                    "src",
                    1.0,
                    1.0,
                    0.1,
                    "pass",
                    test="z",
                    detectable=0.1,
                    se=0.005,
                )
            ]
        ),
        res / study / "claims.parquet",
        {
            "kind": "claims",
            "study": study,
            "scale": scale,
            "runs": runs_digest(r.run_id for r in runs),
            "smoke": False,
        },
    )
    pd.DataFrame({"run_id": [r.run_id for r in runs]}).to_parquet(res / study / "metrics.parquet")
    return res


def test_publish_refuses_results_that_are_not_the_rungs_runs(in_repo, tmp_path):
    res = _rung_results(tmp_path, "dropout_training", "ladder2", [])
    with pytest.raises(ValueError, match="not a ladder2-scale run of this config"):
        L.publish_rung("dropout_training", "ladder2", res, tmp_path / "ev", CONFIG)
    with pytest.raises(KeyError, match="not a rung"):
        L.publish_rung("dropout_training", "paper", res, tmp_path / "ev", CONFIG)
    with pytest.raises(KeyError, match="declares no ladder"):
        L.publish_rung("meanfield_maps", "quick", res, tmp_path / "ev", CONFIG)
    assert not (tmp_path / "ev").exists()


def test_published_rungs_pass_the_check_until_the_config_moves(in_repo, tmp_path):
    ev = tmp_path / "ev"
    study = "dropout_training"
    lad = L.ladder_for(CONFIG, study)
    for r in lad.rungs:
        runs = L.studies_at(CONFIG, [study], r.scale)[study].runs
        res = _rung_results(tmp_path / r.scale, study, r.scale, runs)
        L.publish_rung(study, r.scale, res, ev, CONFIG, wall_s=1.0)
    L.write_trend(study, ev, CONFIG)
    assert L.check(ev, CONFIG) == []
    t = read_trend(ev / study / "trend.parquet")
    assert t.rungs.iloc[0] == lad.scales and t.direction.iloc[0] == 0  # 1.0 at every rung,
    assert t.trend.iloc[0] == "inconclusive"  # on its value: no slope is needed to reach it
    prov = json.loads((ev / study / "ladder2/provenance.json").read_text())
    assert prov["scale"] == "ladder2" and prov["budget"] == lad.rungs[1].budget
    assert prov["machine"]["gpu"] is None
    assert "stopped_job_s" not in prov
    # a run resumed from a stopped attempt's checkpoints counts that attempt's job time too
    runs2 = L.studies_at(CONFIG, [study], "ladder2")[study].runs
    res2 = _rung_results(tmp_path / "again", study, "ladder2", runs2)
    again = L.publish_rung(study, "ladder2", res2, tmp_path / "ev2", CONFIG, stopped_job_s=60.0)
    prov2 = json.loads((again / "provenance.json").read_text())
    assert prov2["stopped_job_s"] == 60.0 and prov2["job_s"] == pytest.approx(prov["job_s"] + 60)
    assert "1.0 of them in a stopped attempt" in (again / "claims.md").read_text()
    with pytest.raises(ValueError, match="stopped attempt"):
        L.publish_rung(study, "ladder2", res2, tmp_path / "ev3", CONFIG, stopped_job_s=-1.0)
    # a rung published, consistently, from runs the config no longer gives
    rung2 = pd.read_parquet(ev / study / "ladder2/claims.parquet")
    shutil.rmtree(ev / study / "ladder2")
    commit_claims(
        ev / study / "ladder2", rung2, "ladder2", runs=["other", "runs"], budget=lad.rungs[1].budget
    )
    problems = L.check(ev, CONFIG)
    assert any("are not those the committed verdicts came from" in p for p in problems)
    assert not any("sigprop ladder trend" in p for p in problems)  # never advised on bad rungs
    shutil.rmtree(ev / study / "ladder3")
    with pytest.raises(FileNotFoundError, match="ladder3"):
        L.write_trend(study, ev, CONFIG)


def _trend_table():
    from sigprop.claims.trend import trend_rows

    rungs = [
        (
            f"r{i}",
            b,
            pd.DataFrame(
                [row("s", "c", "a claim", "src", m, 1.0, 0.1, v, test="z", detectable=0.1, se=0.01)]
            ),
        )
        for i, (b, m, v) in enumerate([(1, 0.2, "fail"), (4, 0.5, "fail"), (16, 0.8, "pass")])
    ]
    return trend_rows(rungs, 100.0, seeds=3)


def test_referee_summary_and_papers_doc_show_the_trend_beside_the_verdicts():
    from sigprop.claims.doc_tables import block
    from sigprop.claims.summary import referee_summary

    claims = pd.DataFrame(
        [
            row(
                "s", "c", "a claim", "src", 0.2, 1.0, 0.1, "fail", test="z", detectable=0.1, se=0.01
            ),
            row("s", "d", "another", "src", 0.2, 1.0, 0.1, "fail", test="z", detectable=0.1),
        ]
    )
    info = {"s": {"scale": "quick", "datasets": ["digits"]}}
    trends = _trend_table()
    text = referee_summary("T", "cite", claims, info, trends=trends)
    line = next(ln for ln in text.splitlines() if "`c`" in ln)
    assert "ladder ``r0``→``r2``: trend toward" in line and "top rung: supported at r2" in line
    assert "trend" not in next(ln for ln in text.splitlines() if "`d`" in ln)
    assert "A trend is not a verdict on the paper's statement" in text
    assert "trend" not in referee_summary("T", "cite", claims, info).split("**Measured on")[0]
    doc = block("000", "quick", claims, "x", info=info, trends=trends)
    cells = {ln.split("|")[2].strip(): ln for ln in doc.splitlines() if ln.startswith("| s ")}
    assert "toward (supported at r2)" in cells["c"] and "toward" not in cells["d"]


def test_a_claim_is_decided_by_its_trend_or_its_top_rung_and_only_claims_count():
    from sigprop.claims.trend import decided

    t = pd.DataFrame(
        {
            "kind": ["claim", "claim", "claim", "claim", "summary", "beyond"],
            "trend": ["flat", "inconclusive", "inconclusive", "away", "toward", "toward"],
            "top_verdict": ["inconclusive", "fail", "inconclusive", "pass", "pass", "pass"],
        }
    )
    assert decided(t) == (3, 4)
    assert decided(_trend_table()) == (1, 1)


def test_ladder_figure_draws_one_panel_per_claim_with_its_reference_value():
    import matplotlib

    matplotlib.use("Agg")
    from sigprop.figures.ladder import ladder_figure

    t = _trend_table()
    fig = ladder_figure(t, "s")
    drawn = [ax for ax in fig.axes if ax.has_data()]
    assert len(drawn) == len(t) == 1
    ax = drawn[0]
    assert "toward" in ax.get_title() and ax.get_xscale() == "log"
    ys = [tuple(line.get_ydata()) for line in ax.get_lines()]
    assert (1.0, 1.0) in ys  # the reference: here the claim's expected value
    assert "claim's expected value" in ax.get_legend_handles_labels()[1]


def test_ladder_figure_names_a_pass_threshold_as_such_and_leaves_minor_ticks_unlabelled():
    """A trend whose reference is the claim's pass threshold is not drawn as the paper's value,
    and the legend gathers the references of every panel."""
    import matplotlib

    matplotlib.use("Agg")
    from sigprop.figures.ladder import ladder_figure

    t = _trend_table()
    two = pd.concat([t, t.assign(claim_id="other", reference="pass threshold")], ignore_index=True)
    fig = ladder_figure(two, "s")
    a, b = [ax for ax in fig.axes if ax.has_data()]
    assert b.get_legend_handles_labels()[1] == ["pass threshold", "paper's budget"]
    assert a.get_legend() is not None
    assert [x.get_text() for x in a.get_legend().get_texts()] == [
        "claim's expected value",
        "paper's budget",
        "pass threshold",
    ]
    assert all(lab.get_text() == "" for lab in a.xaxis.get_minorticklabels())
    matplotlib.pyplot.close(fig)


def test_committed_ladders_match_todays_config_and_give_every_claim_a_trend(in_repo):
    """At least four training studies have three or more committed rungs, each run of today's
    config, and a trend table that gives every claim and beyond row of the lowest rung a trend
    verdict with its slope and SE."""
    from sigprop.claims.trend import TREND_VERDICTS

    studies = sorted(p.name for p in COMMITTED.iterdir() if p.is_dir())
    full = [
        s
        for s in studies
        if len([r for r in (COMMITTED / s).iterdir() if r.is_dir()]) >= 3
        and (COMMITTED / s / "trend.parquet").exists()
    ]
    assert set(full) == set(TRAINING), studies
    assert L.check(COMMITTED, CONFIG) == []
    for s in full:
        quick = pd.read_parquet(COMMITTED / s / "quick/claims.parquet")
        t = read_trend(COMMITTED / s / "trend.parquet")
        claims = set(quick[quick.kind.isin(["claim", "beyond"])].claim_id)
        assert set(t.claim_id) == claims and set(t.trend) <= set(TREND_VERDICTS), s
        assert {"slope", "slope_se", "detectable_slope"} <= set(t.columns)
        for r in (p for p in (COMMITTED / s).iterdir() if p.is_dir()):
            prov = json.loads((r / "provenance.json").read_text())
            assert prov["machine"]["gpu"] is None and prov["wall_s"] > 0 and prov["commit"]
            assert (r / "claims.md").read_text().startswith(f"# {s}: ladder rung {r.name}")


def test_trend_page_names_the_seeds_a_rung_left_out_because_they_did_not_train():
    import pandas as pd

    from sigprop.publish.ladder import untrained_seeds

    rows = pd.DataFrame(
        {
            "test": [
                "mean over 1 trained seeds ...; 2 untrained seed(s) left out (seed 0, seed 2)",
                "mean over 3 seeds ...",
                "x; 2 untrained seed(s) left out (seed 0, seed 2)",
            ]
        }
    )
    assert untrained_seeds(rows) == "seed 0, seed 2 (2 rows)"
    assert untrained_seeds(rows.iloc[[1]]) == ""


def test_a_runs_provenance_names_the_commit_of_the_checkout_that_holds_its_results(tmp_path):
    """A rung run in another clone is published from this one: its provenance names the clone's
    commit, not this checkout's; results outside any git tree fall back to this checkout's."""
    import subprocess

    from sigprop.publish.evidence import git_output, run_record

    clone = tmp_path / "clone"
    (clone / "results" / "benchmarks" / "s").mkdir(parents=True)
    (clone / "f.txt").write_text("x\n")

    def git(*a):
        subprocess.run(
            ["git", "-c", "user.email=t@t", "-c", "user.name=t", *a],
            cwd=clone,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    git("add", "f.txt")
    git("commit", "-qm", "c")
    theirs = git_output("rev-parse", "HEAD", cwd=clone)
    ours = git_output("rev-parse", "HEAD", cwd=REPO)
    assert theirs and theirs != ours
    rec = run_record(clone / "results", "s", 1.0, "cmd", "")
    assert rec["commit"] == theirs and rec["uncommitted_changes"] is False
    (clone / "f.txt").write_text("y\n")
    assert run_record(clone / "results", "s", 1.0, "cmd", "")["uncommitted_changes"] is True
    plain = tmp_path / "plain" / "results"
    plain.mkdir(parents=True)
    assert run_record(plain, "s", 1.0, "cmd", "")["commit"] == git_output("rev-parse", "HEAD")
