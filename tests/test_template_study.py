"""Adding a study, as docs/adding-a-study.md says: copy the template package and its study file
under a new name, list it in the config, run ``snakemake``; its figure and claims appear.

The copy is made in a copy of the repository (the package is installed in editable mode from
this checkout), and the workflow runs with that copy first on the Python path, so nothing here
depends on a hand-kept list of studies."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import REPO

pytestmark = pytest.mark.slow


def _copy_repo(dst):
    for d in ("sigprop", "workflow", "rules", "scripts", "config"):
        shutil.copytree(REPO / d, dst / d, ignore=shutil.ignore_patterns("__pycache__"))


def _copy_template(repo, kind: str, **study_keys):
    """The template package and study file copied under ``kind`` (a small grid), as the docs
    say; ``study_keys`` set further keys of the study file."""
    shutil.copytree(repo / "sigprop/studies/template", repo / f"sigprop/studies/{kind}")
    study = yaml.safe_load((repo / "sigprop/studies/template/study.yaml").read_text())
    study.update(name=kind, **study_keys)
    block = study["scales"]["quick"]["blocks"][0]
    block["fixed"]["width"], block["fixed"]["depth"] = 64, 4
    block["grid"] = {"sigma_w2": [1.5, 3.0], "seed": list(range(6))}
    (repo / f"config/studies/{kind}.yaml").write_text(yaml.safe_dump(study, sort_keys=False))


def _run(repo, tmp_path, kind: str):
    """``snakemake`` of a config listing only ``kind``, with the copy first on the path."""
    work = tmp_path / "work"
    work.mkdir()
    cfg = work / "config.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "studies": [kind],
                "studies_dir": str(repo / "config/studies"),
                "device": "cpu",
                "checkpoint_every": 0,
                "data": {"options": {"gaussian": {"d": 32}}},
            }
        )
    )
    env = dict(os.environ, PYTHONPATH=str(repo), PYTHONUNBUFFERED="1")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            str(repo / "workflow/Snakefile"),
            "--directory",
            str(work),
            "--configfile",
            str(cfg),
            "--cores",
            "2",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=work,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return work


def test_copied_template_runs_end_to_end_under_a_new_name(tmp_path):
    repo = tmp_path / "repo"
    _copy_repo(repo)
    # 1. copy the package and the study file under a new name; 2. list it; 3. run it
    _copy_template(repo, "length_probe", title="A new study")
    work = _run(repo, tmp_path, "length_probe")
    res = work / "results/length_probe"
    assert (res / "figures/template.png").stat().st_size > 10_000
    assert (res / "figures/template.pdf").stat().st_size > 0
    claims = pd.read_parquet(res / "claims.parquet")
    assert list(claims.claim_id) == [
        "length_follows_q_map[tanh, sigma_w2=1.5]",
        "length_follows_q_map[tanh, sigma_w2=3]",
    ]
    assert set(claims.study) == {"length_probe"}
    assert set(claims.verdict) <= {"pass", "fail"}
    runs = pd.read_parquet(res / "metrics.parquet")
    assert set(runs.block) == {"tanh"} and runs.run_id.nunique() == 12
    # the new study's jobs imported the copy, not this checkout
    log = (work / "results/logs/length_probe/claims.log").read_text()
    assert "length_follows_q_map" in log
    assert (work / "results/papers/000/claims.parquet").exists()


def test_a_study_of_a_new_paper_runs_by_the_docs_alone(tmp_path):
    """docs/adding-a-study.md, "A study of a new paper": one entry in sigprop/papers.py, the
    study file's paper id, the claims' source under that id; the paper's claims, front page and
    summary appear under results/papers/005/ with its title."""
    repo = tmp_path / "repo"
    _copy_repo(repo)
    _copy_template(repo, "schoenholz_probe", title="Depth scales", paper="005")
    init = repo / "sigprop/studies/schoenholz_probe/__init__.py"
    init.write_text(
        init.read_text().replace(
            'SOURCE = "000 Eq. 2 (keep rate 1)"', 'SOURCE = "005 Eq. 3 (the length map)"'
        )
    )
    papers = repo / "sigprop/papers.py"
    text = papers.read_text()
    entry = (
        '    "005": {"citation": "Schoenholz, Gilmer, Ganguli, Sohl-Dickstein (2017), '
        'arXiv:1611.01232",\n            "title": "Schoenholz et al., Deep information '
        'propagation"},\n}\nCITATIONS ='
    )
    assert text.count("}\nCITATIONS =") == 1
    papers.write_text(text.replace("}\nCITATIONS =", entry))
    work = _run(repo, tmp_path, "schoenholz_probe")
    paper = work / "results/papers/005"
    claims = pd.read_parquet(paper / "claims.parquet")
    assert set(claims.study) == {"schoenholz_probe"}
    assert all(s.startswith("005 ") for s in claims.source)
    summary = (paper / "summary.md").read_text()
    assert summary.startswith("**005 Schoenholz et al., Deep information propagation**")
    assert "arXiv:1611.01232" in summary
    assert (paper / "front.html").stat().st_size > 0
