"""A study kept outside this repository (sigprop.registry, sigprop.tools.new_study): written by
``sigprop new-study``, installed as its own distribution, found by its entry point or on
``SIGPROP_STUDIES_PATH``, run by the repository's workflow and filed in the report under the
paper it declares, with no file of the repository edited."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SNAKEFILE

from sigprop.tools import new_study

KIND = "toy_sixth"
PAPER = "905"
CITATION = "Doe, Roe (2025), arXiv:2501.00001"
TITLE = "Doe & Roe, A sixth paper"


def _small(study_yaml: Path) -> None:
    """The study's quick grid made seconds-long (an edit of the study's own file)."""
    study = yaml.safe_load(study_yaml.read_text())
    block = study["scales"]["quick"]["blocks"][0]
    block["fixed"].update(width=32, depth=4)
    block["grid"] = {"sigma_w2": [1.5, 3.0], "seed": list(range(6))}
    study_yaml.write_text(yaml.safe_dump(study, sort_keys=False))


def _python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        timeout=120,
    )


def test_new_study_writes_an_installable_skeleton(tmp_path):
    root = new_study.write_study(KIND, PAPER, tmp_path, CITATION, TITLE)
    pkg = root / KIND
    assert sorted(p.name for p in pkg.iterdir()) == [
        "__init__.py",
        "analysis.py",
        "claims.py",
        "figures.py",
        "measure.py",
        "study.yaml",
        "theory.py",
    ]
    text = "\n".join(p.read_text() for p in pkg.glob("*.py"))
    assert "from ..." not in text and "from sigprop.contract import" in text
    assert (
        f'[project.entry-points."sigprop.studies"]\n{KIND} = "{KIND}"'
        in (root / "pyproject.toml").read_text()
    )
    # what the user must replace is marked, and nothing of paper 000 is passed off as theirs
    init = (pkg / "__init__.py").read_text()
    assert f'SOURCE = "{PAPER} TODO:' in init and f'"id": "{PAPER}"' in init
    assert "TODO" in (pkg / "study.yaml").read_text()
    assert "exact: 000" not in (pkg / "study.yaml").read_text()
    study = yaml.safe_load((pkg / "study.yaml").read_text())
    assert (study["name"], study["paper"]) == (KIND, PAPER) and "kind" not in study
    with pytest.raises(FileExistsError):
        new_study.write_study(KIND, PAPER, tmp_path)
    with pytest.raises(ValueError, match="study name"):
        new_study.write_study("Bad-Name", PAPER, tmp_path)
    with pytest.raises(ValueError, match="paper id"):
        new_study.write_study("ok_name", "9", tmp_path)


def test_a_study_on_the_studies_path_is_found_with_its_paper_and_file(tmp_path):
    root = new_study.write_study(KIND, PAPER, tmp_path, CITATION, TITLE)
    code = (
        f"from sigprop import registry, papers\n"
        f"from sigprop.config import study_path\n"
        f"print(registry.module_of({KIND!r}), registry.is_external({KIND!r}))\n"
        f"print(registry.spec({KIND!r}).task)\n"
        f"print(papers.title({PAPER!r}, registry.declared_papers()))\n"
        f"print(study_path('no/such/dir', {KIND!r}).name)\n"
        f"print(len(registry.step_code('claims', {KIND!r})))\n"
    )
    p = _python(code, {"SIGPROP_STUDIES_PATH": str(root)})
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split("\n")[:5] == [
        f"{KIND} True",
        "measure",
        f"{PAPER} {TITLE}",
        "study.yaml",
        "16",
    ]


def test_a_kind_declared_twice_is_refused_naming_both_places(tmp_path):
    root = new_study.write_study("template", PAPER, tmp_path)
    p = _python(
        "from sigprop import registry; registry.kinds()", {"SIGPROP_STUDIES_PATH": str(root)}
    )
    assert p.returncode != 0
    assert "study kind 'template' is declared twice: sigprop/studies" in p.stderr
    assert str(root) in p.stderr


def test_a_paper_declared_against_the_packages_own_is_refused():
    from sigprop import papers

    with pytest.raises(ValueError, match="paper 000 is declared by a study package"):
        papers.known({"000": {"citation": "x", "title": "y"}})
    assert papers.title("905", {"905": {"citation": CITATION, "title": TITLE}}) == f"905 {TITLE}"
    assert papers.title("906") == "paper 906"


def _tracked_state() -> str:
    """The repository's working-tree changes as git sees them ('' for a clean tree)."""
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.mark.slow
def test_an_installed_study_of_a_new_paper_runs_and_is_in_the_report(tmp_path):
    """The new user's path: ``sigprop new-study``, install the distribution (here into a
    folder on PYTHONPATH, as ``pip install --target`` does), list the study in a config of
    one's own, ``snakemake`` and ``snakemake --report``; no file of the repository changes."""
    before = _tracked_state()
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "sigprop.cli",
            "new-study",
            KIND,
            "--paper",
            PAPER,
            "--dest",
            str(tmp_path / "dist"),
            "--citation",
            CITATION,
            "--title",
            TITLE,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr[-3000:]
    site = tmp_path / "site"
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(tmp_path / "dist" / KIND),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    assert (site / f"{KIND}-0.1.0.dist-info" / "entry_points.txt").is_file()
    _small(site / KIND / "study.yaml")
    work = tmp_path / "work"
    work.mkdir()
    cfg = work / "config.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "studies": [KIND],
                "device": "cpu",
                "checkpoint_every": 0,
                "studies_dir": str(REPO / "config" / "studies"),
                "data": {"options": {"gaussian": {"d": 32}}},
            }
        )
    )
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONUNBUFFERED="1")
    base = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(SNAKEFILE),
        "--directory",
        str(work),
        "--configfile",
        str(cfg),
        "--cores",
        "2",
    ]
    for extra in ([], ["--report", str(work / "report.html")]):
        p = subprocess.run(
            base + extra, capture_output=True, text=True, env=env, timeout=600, cwd=work
        )
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    import pandas as pd

    claims = pd.read_parquet(work / "results" / KIND / "claims.parquet")
    assert len(claims) == 2 and set(claims.verdict) <= {"pass", "fail", "inconclusive"}
    assert claims.source.str.startswith(f"{PAPER} ").all()
    assert (work / "results" / "papers" / PAPER / "front.html").is_file()
    report = (work / "report.html").read_text(errors="replace")
    assert f"{PAPER} {TITLE}" in report
    assert _tracked_state() == before
