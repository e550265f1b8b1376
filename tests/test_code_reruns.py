"""Results follow the code: each job's params hold a digest of the code that makes its output
(``sigprop.registry.step_code``), so an edit reruns exactly the jobs that code feeds.

The workflow runs from a copy of the repository (its package first on ``PYTHONPATH``), whose
modules the tests edit; the repository itself is never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import REPO, tiny_study, write_config

from sigprop import registry


pytestmark = pytest.mark.slow


def _copy(tmp_path):
    root = tmp_path / "repo"
    for part in ("sigprop", "workflow", "rules", "scripts", "config"):
        shutil.copytree(REPO / part, root / part,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


def _snakemake(root, workdir, cfg, *args):
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONUNBUFFERED="1")
    probe = subprocess.run([sys.executable, "-c", "import sigprop; print(sigprop.__file__)"],
                           capture_output=True, text=True, env=env, cwd=workdir)
    assert probe.stdout.startswith(str(root)), probe.stdout + probe.stderr   # the copy runs
    p = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile",
                        str(root / "workflow" / "Snakefile"), "--directory", str(workdir),
                        "--configfile", str(cfg), "--cores", "2", *args],
                       capture_output=True, text=True, env=env, timeout=900,
                       cwd=workdir)    # not the repository: python puts its cwd first on sys.path
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    return p.stdout + p.stderr


def _planned(out: str) -> dict:
    """The dry run's job counts per rule (its "Job stats" table), without ``all``."""
    if "Nothing to be done" in out:
        return {}
    table = out[out.index("Job stats:"):]
    rows = re.findall(r"^(\w+)\s+(\d+)$", table, re.M)
    return {r: int(n) for r, n in rows if r not in ("all", "total")}


def test_a_code_edit_reruns_exactly_the_jobs_that_code_feeds(tmp_path):
    root = _copy(tmp_path)
    work = tmp_path / "work"
    cfg = write_config(work, tiny_study(), shard_size=4)
    _snakemake(root, work, cfg)
    assert _planned(_snakemake(root, work, cfg, "-n")) == {}

    claims = root / "sigprop/studies/trainable_depth/claims.py"
    original = claims.read_text()
    claims.write_text(original + "\n# an edit\n")
    assert _planned(_snakemake(root, work, cfg, "-n")) == {
        "claims": 1, "paper_claims": 1, "paper_front": 1, "paper_table": 1}

    claims.write_text(original)                    # back as it was: nothing to do
    assert _planned(_snakemake(root, work, cfg, "-n")) == {}

    trainer = root / "sigprop/train/shard.py"
    trainer.write_text(trainer.read_text() + "\n# an edit\n")
    planned = _planned(_snakemake(root, work, cfg, "-n"))
    assert planned["init_shard"] == planned["train_shard"] == 2
    assert "prepare_dataset" not in planned and "theory" not in planned


def test_step_code_follows_imports_and_only_them(tmp_path, monkeypatch):
    """The digest covers a step's modules and what they import; another study's code or an
    unrelated module leaves it alone."""
    claims = set(registry.module_closure("sigprop.studies.trainable_depth.claims"))
    assert {"sigprop.studies.trainable_depth", "sigprop.studies.trainable_depth.claims",
            "sigprop.claims"} <= claims
    assert not any(m.startswith("sigprop.studies.meanfield_maps") for m in claims)
    assert "sigprop.train.shard" in registry.module_closure("sigprop.steps.shards")
    # the shard jobs do not depend on the analysis steps (figures, claims, summaries, ladders)
    assert not any(m.startswith(("sigprop.steps.analysis", "sigprop.claims", "sigprop.figures"))
                   for m in registry.module_closure("sigprop.steps.shards"))
    a = registry.step_code("claims", "trainable_depth")
    assert a != registry.step_code("claims", "meanfield_maps")
    assert a == registry.step_code("claims", "trainable_depth")
    with pytest.raises(KeyError, match="unknown step 'nope'"):
        registry.step_code("nope", "trainable_depth")
