"""Shared helpers: run the real workflow on tiny configs in a temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "workflow" / "Snakefile"


def tiny_study(**overrides) -> dict:
    """A trainable-depth study small enough for seconds-long jobs."""
    fixed = {
        "arch": "fc",
        "dataset": "digits",
        "width": 8,
        "activation": "tanh",
        "sigma_b2": 0.05,
        "init": "gaussian",
        "optimizer": "sgd",
        "lr": 0.05,
        "batch_size": 32,
        "steps": 20,
        "eval_every": 10,
    }
    fixed.update(overrides.pop("fixed", {}))
    grid = {"keep_rate": [1.0, 0.9], "depth": [2, 3], "sigma_w2": [1.0, 2.0]}
    grid.update(overrides.pop("grid", {}))
    study = {
        "name": "trainable_depth",
        "paper": "000",
        "title": "tiny",
        "design": {"fixed": "2026-11-21"},
        "tolerance_sources": {"*": "ours: a test study's tolerance"},
        "theory": {
            "activation": "tanh",
            "sigma_b2": 0.05,
            "sigma_w2_range": [1.0, 2.0],
            "points": 21,
        },
        "analysis": {"metric": "train_acc"},
        "scales": {
            "quick": {"blocks": [{"fixed": fixed, "grid": grid}]},
            "paper": {"blocks": [{"fixed": fixed, "grid": grid}]},
        },
    }
    study.update(overrides)
    return study


def write_config(workdir: Path, study: dict | None = None, **cfg) -> Path:
    """Write config.yaml and studies/<name>.yaml into ``workdir``; return the config path."""
    study = study if study is not None else tiny_study()
    sdir = workdir / "studies"
    sdir.mkdir(parents=True, exist_ok=True)
    (sdir / f"{study.get('name', 'trainable_depth')}.yaml").write_text(
        yaml.safe_dump(study, sort_keys=False)
    )
    config = {
        "studies": [study.get("name", "trainable_depth")],
        "studies_dir": str(sdir),
        "shard_size": 64,
        "checkpoint_every": 0,
        "device": "cpu",
    }
    config.update(cfg)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def snakemake_cmd(workdir: Path, configfile: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(SNAKEFILE),
        "--directory",
        str(workdir),
        "--configfile",
        str(configfile),
        "--cores",
        "2",
        *args,
    ]


def run_snakemake(
    workdir: Path,
    configfile: Path,
    *args: str,
    check: bool = True,
    timeout: float = 600,
    env: dict | None = None,
) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    p = subprocess.run(
        snakemake_cmd(workdir, configfile, *args),
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if check and p.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-6000:]}"
        )
    return p


@pytest.fixture
def workdir(tmp_path):
    return tmp_path


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tests run single-threaded: deterministic reductions, no oversubscription on 2 cores
    (the workflow tests' Snakemake jobs set their own threads)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


# The README's test command runs the tests in two processes (pytest-xdist, `-n 2 --dist
# loadgroup`). The heaviest tests share one group, so they run one after another in the same
# process and never beside each other: the paper-scale smoke run (its jobs hold up to 3.5 GB)
# and the two one-host clusters (their daemons). Every other test goes to whichever process is
# free.
HEAVY = (
    "test_paper_scale_smoke_run_of_every_study",
    "test_quick_study_through_slurm_profile_equals_local_run",
    "test_quick_study_through_sge_profile_equals_local_run",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.originalname in HEAVY:
            item.add_marker(pytest.mark.xdist_group("heavy"))


def commit_claims(
    folder: Path, claims, scale: str = "paper", runs=("r000000000000",), **prov
) -> Path:
    """Write a committed evidence folder as ``sigprop evidence publish`` (``scale="paper"``,
    ``folder`` = ``<evidence>/<study>``) or ``sigprop ladder publish`` (a rung, ``folder`` =
    ``<ladder>/<study>/<rung>``) writes it, for the claims table ``claims`` of runs ``runs``;
    ``prov`` overrides provenance keys."""
    from sigprop.publish.evidence import write_committed
    from sigprop.runs import runs_digest

    folder = Path(folder)
    study = folder.name if scale == "paper" else folder.parent.name
    base = {
        "study": study,
        "scale": scale,
        "commit": "abc" * 10,
        "date": "2026-11-24",
        "machine": {"cpu": "test CPU", "cores": 2, "gpu": None},
        "wall_s": 60.0,
        "job_s": 60.0,
        "command": "",
        "note": "",
    }
    if scale != "paper":
        base.update(budget=1.0, budget_unit="steps")
    stamp = {
        "kind": "claims",
        "study": study,
        "scale": scale,
        "runs": runs_digest(runs),
        "smoke": False,
    }
    return write_committed(claims, stamp, runs, {**base, **prov}, [], folder)
