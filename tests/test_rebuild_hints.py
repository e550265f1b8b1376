"""Every "rebuild it with ..." the package prints is one command, from one function
(``sigprop.tables.rebuild_hint``), and a dry run of it plans exactly the one job that writes
that file: not the whole workflow (``--forcerun RULE PATH`` would force every job of RULE in
the default target and delete their outputs as they start)."""

from __future__ import annotations

import re
import shlex

import pytest
from conftest import REPO, run_snakemake, tiny_study, write_config

from sigprop.tables import rebuild_hint


def test_every_hint_in_the_package_comes_from_one_function():
    """No module writes its own rebuild command: a new hint goes through rebuild_hint, which
    the dry runs below check."""
    found = []
    for p in sorted((REPO / "sigprop").rglob("*.py")):
        for i, line in enumerate(p.read_text().splitlines(), 1):
            if re.search(r"snakemake --force|--forcerun", line) and p.name != "tables.py":
                found.append(f"{p.relative_to(REPO)}:{i}: {line.strip()}")
    assert not found, found
    assert (
        rebuild_hint("results/x/claims.parquet")
        == "rebuild it with `snakemake --force results/x/claims.parquet`"
    )


def _planned(out: str) -> dict[str, int]:
    """The job stats of a dry run: rule -> jobs."""
    stats = out.split("Job stats:", 1)[1] if "Job stats:" in out else ""
    return {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", stats, re.M)
        if m.group(1) != "total"
    }


@pytest.mark.slow
def test_every_kind_of_hint_plans_one_job(workdir):
    """After a complete run of a small pruned study, the hint for each kind of file the
    readers check (data set, initial weights, masks and their layer report, shard table,
    merged table, theory, claims, the paper's claims and front page, a figure) plans the one
    job that writes the file; a shard's masks and table also plan the shard's own initial
    weights, a temporary file removed once the shard has trained (and its masks, made again
    from them bit for bit), and nothing of another shard or study."""
    study = tiny_study(
        fixed={"pruner": "magnitude", "sparsity": 0.5},
        grid={"keep_rate": [1.0], "depth": [2, 3], "sigma_w2": [1.0]},
    )
    cfg = write_config(workdir, study)
    run_snakemake(workdir, cfg)
    res = workdir / "results"
    shard = next((res / "trainable_depth/runs").glob("*.parquet")).stem
    files = [
        "results/data/digits.npz",
        f"results/trainable_depth/init/{shard}.pt",  # temporary: already removed
        f"results/trainable_depth/masks/{shard}.pt",
        f"results/trainable_depth/masks/{shard}_layers.parquet",
        f"results/trainable_depth/runs/{shard}.parquet",
        "results/trainable_depth/metrics.parquet",
        "results/trainable_depth/theory.parquet",
        "results/trainable_depth/claims.parquet",
        "results/trainable_depth/figures/trainable_depth.png",
        "results/papers/000/claims.parquet",
        "results/papers/000/front.html",
    ]
    for f in files:
        cmd = re.search(r"`(snakemake [^`]+)`", rebuild_hint(f)).group(1)
        args = shlex.split(cmd)[1:]
        p = run_snakemake(workdir, cfg, "-n", *args)
        out = p.stdout + p.stderr
        jobs = _planned(out)
        chain = {
            "/masks/": {"init_shard", "prune_shard"},
            "/runs/": {"init_shard", "prune_shard", "train_shard"},
        }
        want = next((v for k, v in chain.items() if k in f), None)
        if want is None:
            assert sum(jobs.values()) == 1, (f, jobs)
        else:
            assert set(jobs) == want and all(n == 1 for n in jobs.values()), (f, jobs)
            assert set(re.findall(r"shard=(s[0-9a-f]{12})", out)) == {shard}, (f, out[-1500:])
