"""The real workflow on tiny configs: outputs, caching, partial reruns, kill and resume.

These run Snakemake in a subprocess (as users do) in a temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import run_snakemake, snakemake_cmd, tiny_study, write_config

from sigprop.config import build_study

pytestmark = pytest.mark.slow


def _jobs(output: str, rule: str) -> int:
    """Count of `rule` in Snakemake's 'Job stats' table (0 when absent)."""
    m = re.search(rf"^{rule}\s+(\d+)\s*$", output, re.M)
    return int(m.group(1)) if m else 0


def _study(workdir, study, shard_size=64):
    return build_study(
        "trainable_depth", workdir / "studies" / "trainable_depth.yaml", study, "quick", shard_size
    )


def test_default_pipeline_outputs_then_nothing_to_do(workdir):
    cfg = write_config(workdir)
    run_snakemake(workdir, cfg)
    res = workdir / "results" / "trainable_depth"
    for f in (
        "figures/trainable_depth.png",
        "figures/trainable_depth.pdf",
        "claims.parquet",
        "claims.html",
        "metrics.parquet",
        "theory.parquet",
    ):
        assert (res / f).stat().st_size > 0, f
    runs = pd.read_parquet(res / "metrics.parquet")
    assert runs.run_id.nunique() == 8
    assert not runs.duplicated(["run_id", "step", "metric"]).any()
    claims = pd.read_parquet(res / "claims.parquet")
    assert set(claims.verdict) <= {"pass", "fail", "inconclusive"}
    assert {"claim", "source", "measured", "expected", "tolerance", "verdict"} <= set(
        claims.columns
    )
    # the paper level: all claims of paper 000 and its Table 1, built from the claims
    paper = workdir / "results" / "papers" / "000"
    assert len(pd.read_parquet(paper / "claims.parquet")) == len(claims)
    assert "| measured (sigprop) |" in (paper / "table1.md").read_text()
    assert pd.read_csv(paper / "table1.csv").shape[0] == 5
    # the init weights are temporary: consumed by training, then removed
    assert not list((res / "init").glob("*.pt")) if (res / "init").exists() else True

    again = run_snakemake(workdir, cfg)
    assert "Nothing to be done" in again.stdout + again.stderr

    rep = run_snakemake(workdir, cfg, "--report", str(workdir / "report.html"))
    html = (workdir / "report.html").read_text(errors="ignore")
    assert "trainable_depth" in html and len(html) > 10_000, rep.stderr[-2000:]
    assert "000 Huang et al." in html  # figures and tables are filed under their paper
    assert "ERROR/" not in rep.stderr, rep.stderr[-2000:]  # captions are valid RST
    # the front page opens on the paper's counts (scale, coverage), then its verdict matrix with
    # the ladder column, built from this run
    from test_front_page import outline

    desc = json.loads(re.search(r"var workflow_desc = (\".*\");", html).group(1))
    o = outline(desc)
    tags = [t for t, _ in o.tags]
    assert ("div", {"class": "sigprop-front", "id": "paper-000"}) in o.tags
    assert tags.index("img") < tags.index("table")
    before = re.sub(r"<[^>]+>", "", desc[: desc.index('<table class="sigprop-verdicts"')])
    assert "quick scale (1 of " in before and " claims: " in before  # the counts come first
    assert "ladder trend (committed rungs)" in desc
    claim_ids = set(claims[claims.kind == "claim"].claim_id)
    assert all(f"<code>{c}" in desc for c in claim_ids)
    assert any("trainable_depth/claims.html" in link for c in o.cells for link in c["links"])
    assert (paper / "verdicts.png").stat().st_size > 0
    assert (paper / "summary.md").read_text().splitlines()[0].count("scale") >= 2


def test_changing_one_grid_value_reruns_only_its_shards(workdir):
    study = tiny_study()
    cfg = write_config(workdir, study, shard_size=2)
    target = "results/trainable_depth/metrics.parquet"  # the shards and their merge
    run_snakemake(workdir, cfg, target)
    before = {
        p.name: p.stat().st_mtime_ns
        for p in (workdir / "results/trainable_depth/runs").glob("*.parquet")
    }
    old = {s.shard_id for s in _study(workdir, study, 2).shards}
    assert len(old) == 4  # 2 depths x (2 keep rates x 2 sigma_w2) / shard_size 2

    study["scales"]["quick"]["blocks"][0]["grid"]["keep_rate"] = [1.0, 0.8]  # edit one value
    write_config(workdir, study, shard_size=2)
    new = {s.shard_id for s in _study(workdir, study, 2).shards}
    changed = new - old
    assert len(changed) == 2  # one chunk per depth holds the keep_rate 0.8 runs

    p = run_snakemake(workdir, cfg, target)
    out = p.stdout + p.stderr
    assert _jobs(out, "train_shard") == 2, out[-3000:]
    assert _jobs(out, "init_shard") == 2
    after = {
        q.name: q.stat().st_mtime_ns
        for q in (workdir / "results/trainable_depth/runs").glob("*.parquet")
    }
    for sid in new & old:  # untouched shards keep their files
        assert after[f"{sid}.parquet"] == before[f"{sid}.parquet"]
    merged = pd.read_parquet(workdir / "results/trainable_depth/metrics.parquet")
    assert set(merged.shard_id) == new
    assert sorted(merged.keep_rate.unique()) == [0.8, 1.0]


def test_kill_mid_shard_then_rerun_resumes_without_lost_or_duplicated_rows(workdir):
    study = tiny_study(
        fixed={"steps": 6000, "eval_every": 500},
        grid={"depth": [2], "keep_rate": [1.0, 0.9], "sigma_w2": [1.0, 2.0]},
    )
    cfg = write_config(workdir, study, checkpoint_every=200)
    ckpt_dir = workdir / "results/trainable_depth/checkpoints"
    proc = subprocess.Popen(
        snakemake_cmd(workdir, cfg),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    t0 = time.time()
    try:
        while not list(ckpt_dir.glob("*.pt")):
            assert proc.poll() is None, "workflow ended before the first checkpoint"
            assert time.time() - t0 < 300, "no checkpoint within 300 s"
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole run: Snakemake and its job
        proc.wait()
    runs_dir = workdir / "results/trainable_depth/runs"
    assert not list(runs_dir.glob("*.parquet")), "the shard finished before the kill; raise steps"

    run_snakemake(workdir, cfg, "--unlock")
    run_snakemake(workdir, cfg)
    log = next((workdir / "results/logs/trainable_depth/train").glob("*.log")).read_text()
    m = re.search(r"resumed from checkpoint at step (\d+)", log)
    assert m and 0 < int(m.group(1)) < 6000, log[-2000:]
    assert not list(ckpt_dir.glob("*.pt")), "checkpoint left behind after success"

    got = pd.read_parquet(workdir / "results/trainable_depth/metrics.parquet")
    assert not got.duplicated(["run_id", "step", "metric"]).any()
    # the same shard trained without interruption, in this process, single-threaded like the job
    from sigprop.data.prepare import load
    from sigprop.train import engine

    st = _study(workdir, study)
    shard = st.shards[0]
    torch.set_num_threads(1)
    data = engine.to_data(
        load(workdir / "results/data/digits.npz"), torch.device("cpu"), torch.float32
    )
    params, _ = engine.initial_state(shard, (64,), 10, torch.device("cpu"), torch.float32)
    ref = engine.ShardTrainer(shard, data, params, torch.device("cpu")).run()
    key = ["run_id", "step", "metric"]
    a = got.sort_values(key).reset_index(drop=True)
    b = ref.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a[key], b[key])
    np.testing.assert_allclose(
        a.value.to_numpy(), b.value.to_numpy(), rtol=1e-6, atol=1e-9, equal_nan=True
    )


def test_corrupt_raw_file_is_rejected_and_leaves_nothing(workdir):
    """A raw file whose sha256 differs from the catalog's stops the fetch rule; no partial file."""
    from sigprop.data import catalog

    local = workdir / "mirror"
    local.mkdir()
    for f in catalog.get("mnist").files:
        (local / f.filename).write_bytes(b"not the real file")
    study = tiny_study(fixed={"dataset": "mnist"})
    cfg = write_config(workdir, study, data={"local_dir": str(local)})
    p = run_snakemake(workdir, cfg, "results/data/mnist.npz", check=False)
    assert p.returncode != 0
    logs = "".join(x.read_text() for x in (workdir / "results/logs/fetch/mnist").glob("*.log"))
    assert "sha-256 mismatch" in (logs + p.stderr).lower()
    assert "train-images-idx3-ubyte.gz" in logs + p.stderr
    raw = workdir / "results/raw/mnist"
    assert not raw.exists() or not [x for x in raw.iterdir() if x.is_file()]
    assert not (workdir / "results/data/mnist.npz").exists()


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A small run of a study measured at initialization (000 Fig. 1): init -> measure ->
    theory, figure and claims, once for the tests below."""
    import yaml
    from conftest import REPO

    workdir = tmp_path_factory.mktemp("measured")
    study = yaml.safe_load((REPO / "config/studies/meanfield_maps.yaml").read_text())
    for block in study["scales"]["quick"]["blocks"]:
        block["fixed"]["width"] = 64
        block["grid"]["seed"] = [0, 1, 2]
    cfg = write_config(workdir, study, data={"options": {"gaussian": {"d": 32}}})
    run_snakemake(workdir, cfg)
    return workdir, cfg, study


def test_measurement_study_runs_end_to_end(measured):
    """A study whose task is 'measure' goes init -> measure -> figure and claims."""
    workdir, _, _ = measured
    res = workdir / "results" / "meanfield_maps"
    assert (res / "figures/meanfield_maps.png").stat().st_size > 0
    claims = pd.read_parquet(res / "claims.parquet")
    assert {"q_map_matches_simulation[tanh]", "c_map_matches_simulation[erf]"} <= set(
        claims.claim_id
    )
    rows = pd.read_parquet(res / "metrics.parquet")
    assert not rows.duplicated(["run_id", "metric", "probe", "layer"]).any()
    assert list((res / "measurements").glob("*.parquet")) and not (res / "runs").exists()
    # every row carries the label of the grid block that made its run
    assert sorted(rows.block.unique()) == ["(a) linear", "(b) tanh", "(c) relu", "(d) erf"]
    assert (rows.groupby("block").activation.nunique() == 1).all()


def _edit_and_dry_run(measured, edit) -> dict[str, int]:
    """Apply ``edit`` to a copy of the study, dry-run, restore: the jobs Snakemake would run."""
    import copy

    import yaml

    workdir, cfg, study = measured
    path = workdir / "studies" / "meanfield_maps.yaml"
    original = path.read_text()
    changed = copy.deepcopy(study)
    edit(changed)
    path.write_text(yaml.safe_dump(changed, sort_keys=False))
    try:
        out = run_snakemake(workdir, cfg, "-n").stdout
    finally:
        path.write_text(original)
    rules = (
        "init_shard",
        "measure_shard",
        "merge_metrics",
        "theory",
        "figure",
        "claims",
        "paper_claims",
        "paper_table",
    )
    return {r: _jobs(out, r) for r in rules if _jobs(out, r)}


def _set(section, key, value):
    def edit(study):
        study[section][key] = value

    return edit


def test_editing_a_claim_tolerance_reruns_only_the_claims(measured):
    jobs = _edit_and_dry_run(measured, _set("claims", "z_max", 2.5))
    assert jobs == {"claims": 1, "paper_claims": 1, "paper_table": 1}, jobs


def test_editing_a_theory_parameter_reruns_theory_figures_and_claims_not_shards(measured):
    jobs = _edit_and_dry_run(measured, _set("theory", "points", 150))
    assert jobs == {"theory": 1, "figure": 1, "claims": 1, "paper_claims": 1, "paper_table": 1}, (
        jobs
    )


def test_editing_the_paper_scale_leaves_quick_jobs_untouched(measured):
    def edit(study):
        study["scales"]["paper"]["blocks"][0]["fixed"]["width"] = 2000
        study["scales"]["paper"]["claims"] = {"z_max": 4.0}
        study["scales"]["paper"]["description"] = "edited"

    assert _edit_and_dry_run(measured, edit) == {}


def test_editing_a_measurement_parameter_reruns_the_measurement(measured):
    """The control of the three above: a parameter the shards read does rerun them."""
    jobs = _edit_and_dry_run(measured, _set("measure", "q_cap", 999.0))
    assert jobs.get("measure_shard") == 4 and jobs.get("claims") == 1, jobs


def test_shipped_config_dry_runs_at_paper_scale(workdir):
    """The default config's studies at paper scale: the DAG builds (one training or measurement
    job per shard, the paper tables at the end) without running anything."""
    from pathlib import Path

    import yaml

    from sigprop import registry

    root = Path(__file__).resolve().parents[1]
    cfg = root / "config" / "config.yaml"
    res = run_snakemake(
        workdir, cfg, "-n", "--config", "scale=paper", f"studies_dir={root / 'config' / 'studies'}"
    )
    names = yaml.safe_load(cfg.read_text())["studies"]
    want = {"train_shard": 0, "measure_shard": 0}
    for name in names:
        path = root / "config" / "studies" / f"{name}.yaml"
        st = build_study(name, path, yaml.safe_load(path.read_text()), "paper", 64)
        want["measure_shard" if registry.task(st.kind) == "measure" else "train_shard"] += len(
            st.shards
        )
    for rule, n in want.items():
        assert _jobs(res.stdout, rule) == n, (rule, res.stdout[-3000:])
    from sigprop.papers import TABLES

    papers = {
        str(yaml.safe_load((root / "config" / "studies" / f"{n}.yaml").read_text())["paper"])
        for n in names
    }
    assert _jobs(res.stdout, "paper_table") == sum(len(TABLES.get(p, {})) for p in papers)


def test_a_run_of_some_of_a_papers_studies_marks_its_outputs_partial(workdir):
    """The config file names two studies of paper 000; a run narrowed to one of them with
    --config studies=[...] writes the paper's claims, summary, Table 1 and front page marked
    partial (which studies they cover) instead of passing them off as the paper's; the full
    run that follows rebuilds them unmarked."""
    import yaml

    first = tiny_study()
    second = tiny_study(  # a second study file of one package names the package as its kind
        name="trainable_depth_b",
        kind="trainable_depth",
        grid={"keep_rate": [1.0], "depth": [2], "sigma_w2": [1.0]},
    )
    cfg = write_config(workdir, first)
    (workdir / "studies" / "trainable_depth_b.yaml").write_text(yaml.safe_dump(second))
    c = yaml.safe_load(cfg.read_text())
    c["studies"] = ["trainable_depth", "trainable_depth_b"]
    cfg.write_text(yaml.safe_dump(c))
    run_snakemake(workdir, cfg, "--config", "studies=[trainable_depth]")
    paper = workdir / "results/papers/000"
    note = "partial: this run covers trainable_depth, 1 of the 2 studies of this paper"
    assert note in (paper / "summary.md").read_text().splitlines()[0].replace("\\", "")
    for f in ("table1.md", "claims.html", "front.html"):
        assert note in (paper / f).read_text(), f
    run_snakemake(workdir, cfg)
    assert "partial" not in (paper / "summary.md").read_text().splitlines()[0]
    assert "partial" not in (paper / "table1.md").read_text()
