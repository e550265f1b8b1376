"""What an edit of each shared layer reruns, measured with Snakemake's own dry run.

In a temporary copy of the repository (the package, the workflow, its rules, scripts, config and
committed evidence) with a finished run's ``results/`` and ``.snakemake/`` (copied: Snakemake writes its
metadata there), :func:`measure`

1. brings the copy's metadata to the copy's code without running a job (``snakemake --touch``),
   so that a dry run plans nothing;
2. for each :data:`PROBES` entry edits one file of the copy (a statement that changes nothing,
   ``_rerun_probe = None``; or only a comment, a docstring, a caption), runs ``snakemake -n``,
   reads the jobs it plans per rule, and puts the file back;
3. returns the table (:func:`markdown` writes it as docs/design.md shows it).

Run from the repository after a complete default run::

    sigprop bench reruns > rerun-table.md

Nothing in the repository is written; the copy is removed at the end (``--keep`` keeps it).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

PARTS = ("sigprop", "workflow", "rules", "scripts", "config", "docs/evidence")
"""What a run reads of the repository (the committed evidence: the scales and ladder jobs)."""
STATEMENT = "\n_rerun_probe = None\n"


def _statement(text: str) -> str:
    return text + STATEMENT


def _comment(text: str) -> str:
    return text.replace("\n\n\n", "\n\n# a comment\n\n", 1) + "# the end\n"


def _docstring(text: str) -> str:
    return re.sub(
        r'(\n    """)', r"\1An edited docstring. ", text.replace('"""', '"""Edited. ', 1), count=1
    )


def _caption(text: str) -> str:
    return re.sub(r'(Figure\(\s*"\w+",\s*\(?\s*")', r"\1An edited caption. ", text, count=1)


def _source(text: str) -> str:
    return text.replace('SOURCE = "', 'SOURCE = "Edited ', 1)


# (what is edited, file, edit): a statement appended to one module of each shared layer and of a
# study, then edits that change only text
PROBES: list[tuple[str, str, Callable[[str], str]]] = [
    *[
        (f"`{f}`", f, _statement)
        for f in (
            "sigprop/theory/meanfield.py",
            "sigprop/tables.py",
            "sigprop/runs.py",
            "sigprop/params.py",
            "sigprop/contract.py",
            "sigprop/data/prepare.py",
            "sigprop/nets/fc.py",
            "sigprop/train/engine.py",
            "sigprop/prune/magnitude.py",
            "sigprop/studies/jacobian_moments/jacobians.py",
            "sigprop/claims/__init__.py",
            "sigprop/claims/render.py",
            "sigprop/claims/depth_scales.py",
            "sigprop/figures/style.py",
            "sigprop/papers.py",
            "sigprop/steps/shards.py",
            "sigprop/steps/analysis.py",
            "sigprop/studies/trainable_depth/claims.py",
            "sigprop/studies/trainable_depth/figures.py",
            "sigprop/studies/trainable_depth/theory.py",
            "sigprop/studies/meanfield_maps/measure.py",
        )
    ],
    (
        "a study's `SOURCE` (trainable_depth)",
        "sigprop/studies/trainable_depth/__init__.py",
        _source,
    ),
    ("a caption (trainable_depth)", "sigprop/studies/trainable_depth/__init__.py", _caption),
    ("a comment (`sigprop/theory/meanfield.py`)", "sigprop/theory/meanfield.py", _comment),
    ("docstrings (`sigprop/tables.py`)", "sigprop/tables.py", _docstring),
    ("a comment (`sigprop/claims/render.py`)", "sigprop/claims/render.py", _comment),
]


def planned(out: str) -> dict[str, int]:
    """The jobs a dry run plans, per rule (its "Job stats" table, without ``all``)."""
    from sigprop.tools.bench import job_counts

    if "Nothing to be done" in out or "Job stats:" not in out:
        return {}
    return {r: n for r, n in job_counts(out).items() if r not in ("all", "total")}


def copy_repo(repo: Path, dest: Path) -> Path:
    """The parts of ``repo`` a run needs, with its results and Snakemake's metadata, in ``dest``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "locks", "incomplete")
    for part in PARTS + ("results", ".snakemake"):
        if (repo / part).exists():
            shutil.copytree(repo / part, dest / part, ignore=ignore, symlinks=True)
    return dest


def snakemake(root: Path, *args: str, cores: int = 2) -> str:
    """Snakemake on the copy ``root`` (its package first on ``PYTHONPATH``); its output."""
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONUNBUFFERED="1")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            str(root / "workflow" / "Snakefile"),
            "--directory",
            str(root),
            "--cores",
            str(cores),
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=3600,
    )
    out = p.stdout + p.stderr
    if p.returncode != 0:
        raise RuntimeError(f"snakemake {' '.join(args)} failed:\n{out[-4000:]}")
    return out


def measure(
    repo: Path, root: Path, probes=PROBES, cores: int = 2, progress=lambda label, plan: None
) -> list[tuple[str, dict[str, int]]]:
    """Copy ``repo`` to ``root``, align its metadata with its code, then one dry run per probe."""
    copy_repo(repo, root)
    snakemake(root, "--touch", cores=cores)
    base = planned(snakemake(root, "-n", cores=cores))
    if base:
        raise RuntimeError(
            f"after --touch a dry run still plans {base}: is the run in "
            f"{repo / 'results'} complete?"
        )
    rows = []
    for label, rel, edit in probes:
        f = root / rel
        original = f.read_text()
        edited = edit(original)
        if edited == original:
            raise ValueError(f"{rel}: the edit for {label!r} changes nothing")
        f.write_text(edited)
        try:
            plan = planned(snakemake(root, "-n", cores=cores))
        finally:
            f.write_text(original)
        progress(label, plan)
        rows.append((label, plan))
    return rows


def markdown(rows: list[tuple[str, dict[str, int]]]) -> str:
    """The table: what was edited, the jobs a dry run plans per rule, their total."""
    out = ["| edited | jobs rerun, per rule | total |", "|---|---|---|"]
    for label, plan in rows:
        per_rule = ", ".join(
            f"{r} {n}" for r, n in sorted(plan.items(), key=lambda x: (-x[1], x[0]))
        )
        out.append(f"| {label} | {per_rule or 'nothing'} | {sum(plan.values())} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sigprop bench reruns", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=".", help="the repository, with a finished run (default .)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy")
    args = ap.parse_args(argv)
    repo = Path(args.repo).resolve()
    if not (repo / ".snakemake").is_dir() or not (repo / "results").is_dir():
        print(
            f"sigprop bench reruns: {repo}: no results/ and .snakemake/ of a finished run",
            file=sys.stderr,
        )
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="sigprop-rerun-table-"))
    try:
        rows = measure(
            repo,
            tmp / "repo",
            cores=args.cores,
            progress=lambda label, plan: print(
                f"{label}: {sum(plan.values())} jobs", file=sys.stderr
            ),
        )
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.write(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
