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

import pandas as pd
import pytest
from conftest import REPO, tiny_study, write_config

from sigprop import registry

pytestmark = pytest.mark.slow


def _copy(tmp_path):
    root = tmp_path / "repo"
    for part in ("sigprop", "workflow", "rules", "scripts", "config"):
        shutil.copytree(
            REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    return root


def _snakemake(root, workdir, cfg, *args, inject=None, check=True):
    """Snakemake on the copy ``root`` of the repository; ``inject``: a folder put before it on
    ``PYTHONPATH`` (a ``sitecustomize.py`` there runs first in every interpreter)."""
    path = [str(inject)] if inject else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path + [str(root)]), PYTHONUNBUFFERED="1")
    probe = subprocess.run(
        [sys.executable, "-c", "import sigprop; print(sigprop.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=workdir,
    )
    assert probe.stdout.startswith(str(root)), probe.stdout + probe.stderr  # the copy runs
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            str(root / "workflow" / "Snakefile"),
            "--directory",
            str(workdir),
            "--configfile",
            str(cfg),
            "--cores",
            "2",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        cwd=workdir,
    )  # not the repository: python puts its cwd first on sys.path
    if check:
        assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    return p.stdout + p.stderr


def _planned(out: str) -> dict:
    """The dry run's job counts per rule (its "Job stats" table), without ``all``."""
    if "Nothing to be done" in out:
        return {}
    table = out[out.index("Job stats:") :]
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
    claims.write_text(original + "\n_an_edit = None\n")
    assert _planned(_snakemake(root, work, cfg, "-n")) == {
        "claims": 1,
        "paper_claims": 1,
        "paper_front": 1,
        "paper_table": 1,
    }

    claims.write_text(original)  # back as it was: nothing to do
    assert _planned(_snakemake(root, work, cfg, "-n")) == {}

    trainer = root / "sigprop/train/engine.py"
    trainer.write_text(trainer.read_text() + "\n_an_edit = None\n")
    planned = _planned(_snakemake(root, work, cfg, "-n"))
    assert planned["init_shard"] == planned["train_shard"] == 2
    assert "prepare_dataset" not in planned and "theory" not in planned


def test_text_edits_rerun_nothing_and_a_paper_table_follows_its_module(tmp_path):
    """A comment or a docstring in a shared module reruns nothing; a figure's caption reruns that
    figure (its param), no shard; an edit of the module a paper table is loaded from by name
    (sigprop.papers.TABLES) reruns that table."""
    root = _copy(tmp_path)
    work = tmp_path / "work"
    cfg = write_config(work, tiny_study(), shard_size=4)
    _snakemake(root, work, cfg)
    assert _planned(_snakemake(root, work, cfg, "-n")) == {}

    def edited(path, edit):
        f = root / path
        original = f.read_text()
        f.write_text(edit(original))
        assert f.read_text() != original
        try:
            return _planned(_snakemake(root, work, cfg, "-n"))
        finally:
            f.write_text(original)

    assert (
        edited(
            "sigprop/theory/meanfield.py",
            lambda s: s.replace('"""', '"""A docstring edit. ', 1) + "\n# a comment\n",
        )
        == {}
    )
    assert edited(
        "sigprop/studies/trainable_depth/__init__.py",
        lambda s: s.replace('"Accuracy after', '"An edited caption. Accuracy after'),
    ) == {"figure": 1}
    planned = edited("sigprop/claims/depth_scales.py", lambda s: s + "\n_rerun_probe = None\n")
    assert planned.get("paper_table") == 1, planned
    assert not {"prepare_dataset", "init_shard", "train_shard"} & set(planned), planned


STOP_AFTER_CHECKPOINT = """
import os
if os.environ.get("STOP_AFTER_CHECKPOINT"):
    # the job stops right after a shard's first checkpoint, as a kill leaves it (no hook in the
    # package)
    from sigprop.train import engine as _engine
    _save = _engine.ShardTrainer._save_checkpoint

    def _stop(self):
        _save(self)
        raise RuntimeError("killed after a checkpoint")
    _engine.ShardTrainer._save_checkpoint = _stop
"""


def test_a_checkpoint_of_code_before_an_edit_is_not_resumed(tmp_path, monkeypatch):
    """A shard stopped after its step-10 checkpoint, then an edit of sigprop/data/prepare.py (in
    the train step's code, outside sigprop/train and sigprop/nets; here one that changes the
    data): the rerun trains the shard from step 0, and its table equals a run from scratch."""
    root = _copy(tmp_path)
    work = tmp_path / "work"
    study = tiny_study(grid={"depth": [2], "keep_rate": [1.0], "sigma_w2": [1.0]})
    cfg = write_config(work, study, checkpoint_every=10)
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(STOP_AFTER_CHECKPOINT)
    monkeypatch.setenv("STOP_AFTER_CHECKPOINT", "1")
    out = _snakemake(
        root, work, cfg, "results/trainable_depth/metrics.parquet", inject=inject, check=False
    )
    monkeypatch.delenv("STOP_AFTER_CHECKPOINT")
    assert "killed after a checkpoint" in out, out[-3000:]
    (ckpt,) = (work / "results/trainable_depth/checkpoints").glob("*.pt")
    shard = ckpt.stem

    prepare = root / "sigprop/data/prepare.py"
    text = prepare.read_text()
    assert text.count("    return x_train, x_test, info\n") == 1
    prepare.write_text(
        text.replace(
            "    return x_train, x_test, info\n", "    return x_train * 0.5, x_test * 0.5, info\n"
        )
    )
    planned = _planned(_snakemake(root, work, cfg, "-n", "results/trainable_depth/metrics.parquet"))
    assert planned["prepare_dataset"] == planned["train_shard"] == 1, planned
    _snakemake(root, work, cfg, "results/trainable_depth/metrics.parquet")
    log = (work / f"results/logs/trainable_depth/train/{shard}.log").read_text()
    assert "resumed from checkpoint" not in log, log[-2000:]
    assert (
        f"ignoring checkpoint results/trainable_depth/checkpoints/{shard}.pt: made with "
        "another code"
        in log
        and "training the shard from step 0" in log
    ), log[-2000:]
    table = work / f"results/trainable_depth/runs/{shard}.parquet"
    after_edit = pd.read_parquet(table)
    _snakemake(root, work, cfg, "--force", f"results/trainable_depth/runs/{shard}.parquet")
    pd.testing.assert_frame_equal(after_edit, pd.read_parquet(table))  # a run from scratch


def test_step_code_follows_imports_and_only_them(tmp_path, monkeypatch):
    """The digest covers a step's modules and what they import; another study's code or an
    unrelated module leaves it alone."""
    claims = set(registry.module_closure("sigprop.studies.trainable_depth.claims"))
    assert {
        "sigprop.studies.trainable_depth",
        "sigprop.studies.trainable_depth.claims",
        "sigprop.claims",
    } <= claims
    assert not any(m.startswith("sigprop.studies.meanfield_maps") for m in claims)
    assert "sigprop.train.engine" in registry.module_closure("sigprop.steps.shards")
    # the shard jobs do not depend on the analysis steps (figures, claims, summaries, ladders)
    assert not any(
        m.startswith(("sigprop.steps.analysis", "sigprop.claims", "sigprop.figures"))
        for m in registry.module_closure("sigprop.steps.shards")
    )
    a = registry.step_code("claims", "trainable_depth")
    assert a != registry.step_code("claims", "meanfield_maps")
    assert a == registry.step_code("claims", "trainable_depth")
    with pytest.raises(KeyError, match="unknown step 'nope'"):
        registry.step_code("nope", "trainable_depth")
