"""Scale: a big grid is submitted as shards (one job per shard, not per run), its DAG builds in
seconds (``sigprop bench dag`` times it; docs/faults.md has the numbers), and a long shard's
log shows its progress (steps done, rate).

The tests assert counts, never times.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import pytest
from conftest import snakemake_cmd, tiny_study, write_config

from sigprop.config import build_study
from sigprop.tools import bench

pytestmark = pytest.mark.slow


def test_dry_run_has_one_job_per_shard_not_per_run(workdir):
    """200 runs in two shape groups (depth 2, 3) of 100, shard_size 16: 7 + 7 shards, so the
    DAG has 14 init and 14 training jobs, as many as the study has shards."""
    study = tiny_study(
        grid={
            "depth": [2, 3],
            "keep_rate": [1.0],
            "sigma_w2": [1.0 + 0.1 * i for i in range(10)],
            "seed": list(range(10)),
        }
    )
    cfg = write_config(workdir, study, shard_size=16)
    st = build_study(
        "trainable_depth", workdir / "studies" / "trainable_depth.yaml", study, "quick", 16
    )
    assert len(st.runs) == 200 and len(st.shards) == 2 * math.ceil(100 / 16) == 14
    p = subprocess.run(
        snakemake_cmd(workdir, cfg, "-n"), capture_output=True, text=True, timeout=300, check=False
    )
    assert p.returncode == 0, p.stderr[-3000:]
    jobs = bench.job_counts(p.stdout + p.stderr)
    assert jobs["train_shard"] == jobs["init_shard"] == len(st.shards) == 14
    assert jobs["total"] < len(st.runs)
    assert not (workdir / "results").exists()  # a dry run runs nothing


def test_job_counts_parser_reads_the_table_and_refuses_other_text():
    text = (
        "Job stats:\njob            count\n-------------  -------\ninit_shard         3\n"
        "train_shard        3\nall                1\ntotal              7\n\nReasons:"
    )
    assert bench.job_counts(text) == {"init_shard": 3, "train_shard": 3, "all": 1, "total": 7}
    with pytest.raises(ValueError, match="Job stats"):
        bench.job_counts("Nothing to be done.")


def test_grid_study_has_the_requested_runs():
    for n in (1, 7, 250, 10_000):
        st = build_study("trainable_depth", "g.yaml", bench.grid_study(n), "quick", 64)
        assert len(st.runs) == n and len({r.run_id for r in st.runs}) == n


def test_ten_thousand_run_grid_is_157_shards_and_157_training_jobs(tmp_path):
    """``sigprop bench dag --runs 10000``: the grid expands into ceil(10000 / 64) = 157 shards
    and ``snakemake -n`` plans 157 training jobs (and 157 init jobs), not 10,000."""
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "sigprop.cli",
            "bench",
            "dag",
            "--runs",
            "10000",
            "--shard-size",
            "64",
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(p.stdout)
    assert res["runs"] == 10_000 and res["shards"] == math.ceil(10_000 / 64) == 157
    assert res["jobs"]["train_shard"] == res["jobs"]["init_shard"] == 157
    assert res["jobs"]["total"] == 2 * 157 + sum(
        v for k, v in res["jobs"].items() if k not in ("train_shard", "init_shard", "total")
    )
    assert res["expand_s"] > 0 and res["dry_run_s"] > 0  # measured, not asserted against a limit
    assert not (tmp_path / "results").exists()


def test_progress_interval_comes_from_the_environment(monkeypatch):
    from sigprop.train import engine

    monkeypatch.delenv("SIGPROP_PROGRESS_EVERY", raising=False)
    assert engine.progress_interval() == engine.PROGRESS_EVERY == 30.0
    monkeypatch.setenv("SIGPROP_PROGRESS_EVERY", "0.25")
    assert engine.progress_interval() == 0.25
    for bad in ("soon", "-1"):
        monkeypatch.setenv("SIGPROP_PROGRESS_EVERY", bad)
        with pytest.raises(ValueError, match="SIGPROP_PROGRESS_EVERY"):
            engine.progress_interval()


def test_long_shard_logs_progress_lines_with_steps_and_rate(workdir):
    """A shard that trains for longer than the progress interval (0.2 s here, through the
    environment as a cluster job would get it) logs 'step k/N, r steps/s' lines in its job log."""
    study = tiny_study(
        fixed={"steps": 3000, "eval_every": 1000},
        grid={"depth": [2], "keep_rate": [1.0], "sigma_w2": [1.0, 2.0]},
    )
    cfg = write_config(workdir, study)
    env = dict(os.environ, SIGPROP_PROGRESS_EVERY="0.2", PYTHONUNBUFFERED="1")
    p = subprocess.run(
        snakemake_cmd(workdir, cfg, "results/trainable_depth/metrics.parquet"),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    (log,) = (workdir / "results/logs/trainable_depth/train").glob("*.log")
    text = log.read_text()
    lines = re.findall(
        r"shard (s[0-9a-f]{12}): step (\d+)/(\d+), ([0-9.]+) steps/s, (\d+)/(\d+) "
        r"models training",
        text,
    )
    assert len(lines) >= 2, text[-2000:]
    steps = [int(m[1]) for m in lines]
    # the last line may fall on the last step itself (3000/3000) when its interval ends there
    assert steps == sorted(steps) and 0 < steps[0] < steps[-1] <= 3000
    assert all(int(m[2]) == 3000 and float(m[3]) > 0 and m[5] == "2" for m in lines)
    assert {m[0] for m in lines} == {log.stem}
