"""Committed evidence is bound to what made it: a claims table, its provenance, a rung, a trend
table or a GPU evidence file that was edited, re-saved, swapped or moved is refused by the checks
(``sigprop evidence check``, ``sigprop ladder check``) and by every reader (the paper's summary
and front page, the report's scales page, docs/papers.md), each naming the file.

Every test works on a copy of the committed evidence under ``docs/evidence/``."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPO

from sigprop import tables
from sigprop.claims import doc_tables
from sigprop.claims.trend import read_trend
from sigprop.publish import evidence as E
from sigprop.publish import ladder as L
from sigprop.steps import analysis

PAPER = REPO / "docs/evidence/paper-scale"
LADDER = REPO / "docs/evidence/ladder"
GPU = REPO / "docs/evidence/gpu"
CONFIG = REPO / "config/config.yaml"
FLIP = "eq12_predicts_g_aa[linear, rho=0.8]"  # inconclusive in the committed table


@pytest.fixture
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)  # studies_dir in the config is relative to the repository


@pytest.fixture
def paper(tmp_path):
    dest = tmp_path / "paper-scale"
    shutil.copytree(PAPER, dest)
    return dest


@pytest.fixture
def ladder(tmp_path):
    """Two studies' ladders (the check recomputes each rung's runs from the config)."""
    dest = tmp_path / "ladder"
    for s in ("training_speed", "width_batch"):
        shutil.copytree(LADDER / s, dest / s)
    return dest


def _readers_refuse(folder, match):
    """Every reader of a committed paper-scale table refuses it, naming its file or folder."""
    study = folder.name
    with pytest.raises(ValueError, match=match):
        analysis.committed_claims(
            [str(folder / "claims.parquet")], [str(folder / "provenance.json")], {study: {}}
        )
    with pytest.raises(ValueError, match=match):
        doc_tables.committed_for([study], folder.parent)
    with pytest.raises(ValueError, match=match):
        doc_tables.runs_block(folder.parent)


def _check_refuses(folder, match):
    """``sigprop evidence check`` on an evidence folder that holds only ``folder``."""
    alone = folder.parent.parent / "alone"
    shutil.copytree(folder, alone / folder.name)
    problems = E.check(alone, CONFIG, gpu=None)
    assert any(__import__("re").search(match, p) for p in problems), problems


def _resave_keeping_metadata(path, df):
    """Write ``df`` over ``path`` with the file's own schema metadata (its stamp) kept."""
    meta = pq.read_schema(path).metadata
    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table.replace_schema_metadata(meta), path)


def test_every_committed_table_is_stamped(in_repo):
    """The checks themselves run on the committed evidence in test_evidence.py and
    test_ladder.py."""
    for d in (p for p in PAPER.iterdir() if p.is_dir()):
        assert tables.stamp_of(d / "claims.parquet")["scale"] == "paper"
    for t in LADDER.glob("*/trend.parquet"):
        assert tables.stamp_of(t)["kind"] == "trend"


def test_a_verdict_flipped_and_resaved_by_pandas_is_refused(in_repo, paper):
    d = paper / "gradient_metrics"
    df = pd.read_parquet(d / "claims.parquet")
    assert (df.loc[df.claim_id == FLIP, "verdict"] == "inconclusive").all()
    df.loc[df.claim_id == FLIP, "verdict"] = "pass"
    df.to_parquet(d / "claims.parquet")
    _readers_refuse(d, "gradient_metrics/claims.parquet: carries no stamp")
    _check_refuses(d, "gradient_metrics/claims.parquet: carries no stamp")


def test_a_verdict_flipped_with_the_metadata_kept_is_refused(in_repo, paper):
    d = paper / "gradient_metrics"
    df = pd.read_parquet(d / "claims.parquet")
    df.loc[df.claim_id == FLIP, "verdict"] = "pass"
    _resave_keeping_metadata(d / "claims.parquet", df)
    _readers_refuse(d, "gradient_metrics/claims.parquet: changed after it was written")
    _check_refuses(d, "changed after it was written")


def test_the_quick_scale_table_copied_over_the_paper_scale_one_is_refused(in_repo, paper):
    """As the claims job of a quick run stamps it (scale quick, the quick runs)."""
    d = paper / "meanfield_maps"
    df = pd.read_parquet(d / "claims.parquet")
    tables.write_atomic(
        df,
        d / "claims.parquet",
        {
            "kind": "claims",
            "study": "meanfield_maps",
            "scale": "quick",
            "runs": "0123456789ab",
            "smoke": False,
        },
    )
    _readers_refuse(d, "stamped with scale 'quick'")
    _check_refuses(d, "meanfield_maps/claims.parquet: stamped with scale 'quick'")


def test_a_table_moved_to_another_studys_folder_is_refused(in_repo, paper):
    shutil.copyfile(
        paper / "jacobian_moments/claims.parquet", paper / "meanfield_maps/claims.parquet"
    )
    _readers_refuse(paper / "meanfield_maps", "stamped with study 'jacobian_moments'")


@pytest.mark.parametrize(
    "key, value",
    [("commit", "0" * 40), ("wall_s", 1.0), ("machine", {"cpu": "a GPU box", "cores": 64})],
)
def test_an_edited_provenance_is_refused(in_repo, paper, key, value):
    pp = paper / "residual_ntk/provenance.json"
    prov = json.loads(pp.read_text())
    prov[key] = value
    pp.write_text(json.dumps(prov, indent=2))
    _readers_refuse(paper / "residual_ntk", "was edited after publishing")
    _check_refuses(paper / "residual_ntk", "residual_ntk/claims.parquet: stamped with provenance")


@pytest.mark.parametrize("key", ["runs_sha256", "claim_ids", "commit"])
def test_a_provenance_without_a_key_names_its_file_and_the_key(in_repo, paper, key):
    pp = paper / "dropout_ensemble/provenance.json"
    prov = json.loads(pp.read_text())
    del prov[key]
    pp.write_text(json.dumps(prov))
    _readers_refuse(
        paper / "dropout_ensemble", f"dropout_ensemble/provenance.json: key '{key}' is missing"
    )
    pp.write_text("{not json")
    _check_refuses(pp.parent, "dropout_ensemble/provenance.json: not readable JSON")


def test_swapped_rungs_are_refused_and_no_trend_is_written_from_them(in_repo, ladder):
    d = ladder / "training_speed"
    trend_before = (d / "trend.parquet").read_bytes()
    (d / "ladder2").rename(d / "tmp")
    (d / "ladder3").rename(d / "ladder2")
    (d / "tmp").rename(d / "ladder3")
    problems = L.check(ladder, CONFIG)
    assert any(
        "training_speed/ladder2/provenance.json: key 'study'" in p
        or "training_speed/ladder2/provenance.json: key 'scale' is 'ladder3'" in p
        for p in problems
    ), problems
    assert not any("sigprop ladder trend" in p for p in problems)  # never advised here
    with pytest.raises(ValueError, match="ladder2/provenance.json: key 'scale' is 'ladder3'"):
        L.write_trend("training_speed", ladder, CONFIG)
    assert (d / "trend.parquet").read_bytes() == trend_before
    assert L.check(ladder, CONFIG)  # still refused
    with pytest.raises(ValueError, match="key 'scale' is 'ladder3'"):
        read_trend(d / "trend.parquet")  # every reader of the trend


def _edit_trend(path):
    t = pd.read_parquet(path)
    i = t.index[t.claim_id == "collapse_eta[rho=0.99]"][0]
    t.loc[i, "slope"], t.loc[i, "top_verdict"], t.loc[i, "trend"] = -2.0, "pass", "toward"
    return t


def test_an_edited_trend_table_is_refused_by_its_readers_and_the_check(in_repo, ladder):
    tp = ladder / "training_speed/trend.parquet"
    edited = _edit_trend(tp)
    _resave_keeping_metadata(tp, edited)
    with pytest.raises(ValueError, match="trend.parquet: changed after it was written"):
        read_trend(tp)
    with pytest.raises(ValueError, match="changed after it was written"):
        doc_tables.trends_for(["training_speed"], ladder)
    assert any("changed after it was written" in p for p in L.check(ladder, CONFIG))
    edited.to_parquet(tp)  # re-saved by pandas
    with pytest.raises(ValueError, match="trend.parquet: carries no stamp"):
        read_trend(tp)


def test_a_trend_restamped_to_its_edited_content_differs_from_its_rungs(in_repo, ladder):
    """Only a recomputation sees this one: the ladder check recomputes the whole table."""
    tp = ladder / "training_speed/trend.parquet"
    stamp = tables.stamp_of(tp)
    t = pd.read_parquet(tp).set_index("claim_id")
    slope = float(t.loc["collapse_eta[rho=0.99]", "slope"])
    tables.write_atomic(_edit_trend(tp), tp, {k: stamp[k] for k in ("kind", "study", "rungs")})
    read_trend(tp)  # self-consistent
    problems = L.check(ladder, CONFIG)
    bad = [p for p in problems if "not the trend its committed rungs give today" in p]
    assert bad and f"collapse_eta[rho=0.99]: slope: -2.0 -> {slope!r}" in bad[0], problems
    assert "collapse_eta[rho=0.99]: top_verdict: 'pass' -> 'inconclusive'" in bad[0]


def test_a_trend_of_other_rungs_is_refused(in_repo, ladder):
    tp = ladder / "width_batch/trend.parquet"
    stamp = tables.stamp_of(tp)
    rungs = dict(stamp["rungs"], ladder3="0123456789abcdef")
    tables.write_atomic(
        pd.read_parquet(tp), tp, {"kind": "trend", "study": "width_batch", "rungs": rungs}
    )
    with pytest.raises(
        ValueError, match="computed from a ladder3 rung of content 0123456789abcdef"
    ):
        read_trend(tp)


def test_paper_claims_refuse_a_tampered_trend(in_repo, ladder, tmp_path):
    """The paper's claims job (the summary's reader) reads the trend through read_trend."""
    tp = ladder / "training_speed/trend.parquet"
    _resave_keeping_metadata(tp, _edit_trend(tp))
    q = tmp_path / "q" / "training_speed"
    q.mkdir(parents=True)
    from sigprop.claims import reading

    claims = reading.apply(
        pd.read_parquet(LADDER / "training_speed/quick/claims.parquet"),
        "quick",
        {},
        {},
        [["*", "ours: the rung's tolerances"]],
    )
    tables.write_atomic(
        claims,
        q / "claims.parquet",
        {
            "kind": "claims",
            "study": "training_speed",
            "scale": "quick",
            "runs": "x",
            "smoke": False,
        },
    )
    with pytest.raises(ValueError, match="changed after it was written"):
        analysis.paper_claims(
            "000",
            [str(q / "claims.parquet")],
            ["training_speed"],
            str(tmp_path / "c.parquet"),
            str(tmp_path / "c.html"),
            str(tmp_path / "summary.md"),
            json.dumps({"training_speed": {}}),
            trends=[str(tp)],
        )
    assert not (tmp_path / "summary.md").exists()


def test_gpu_evidence_that_differs_from_its_manifest_is_refused(tmp_path):
    src = next(p for p in GPU.iterdir() if p.is_dir())
    g = tmp_path / src.name
    shutil.copytree(src, g)
    assert E.check_gpu(src) == [] and E.check_gpu(g) == []
    log = g / "gpu_check.log"
    log.write_text(log.read_text() + "one more line\n")
    (g / "extra.json").write_text("{}")
    problems = E.check_gpu(g)
    assert any("gpu_check.log: differs from the SHA-256" in p for p in problems)
    assert any("extra.json: not in" in p for p in problems)
    (g / "provenance.json").unlink()
    assert "missing" in E.check_gpu(g)[0]


def test_an_efficiency_entry_that_is_not_its_sources_is_refused(tmp_path):
    """config/gpu_efficiency.yaml's numbers come from the committed gpu-check JSON they cite."""
    import yaml

    root = tmp_path / "repo"
    shutil.copytree(REPO / "docs/evidence/gpu", root / "docs/evidence/gpu")
    (root / "config").mkdir()
    data = yaml.safe_load((REPO / "config/gpu_efficiency.yaml").read_text())
    folder = root / data["H100-SXM-80GB"]["source"].rsplit("/", 1)[0]
    yml = root / "config/gpu_efficiency.yaml"
    yml.write_text(yaml.safe_dump(data))
    assert E.check_gpu(folder, yml) == []
    data["H100-SXM-80GB"]["by_study"]["pruning_eoc"] = 0.5
    yml.write_text(yaml.safe_dump(data))
    assert any("by_study is" in p for p in E.check_gpu(folder, yml))
