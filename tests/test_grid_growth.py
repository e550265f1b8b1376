"""A longer grid list reruns only the shards of its new runs: the shards already computed under
``results/`` are kept (``sigprop.runs.make_shards``, ``sigprop.tables.computed_shards``)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from conftest import run_snakemake, tiny_study, write_config

pytestmark = pytest.mark.slow


def _planned(out: str) -> dict:
    if "Nothing to be done" in out:
        return {}
    rows = re.findall(r"^(\w+)\s+(\d+)$", out[out.index("Job stats:") :], re.M)
    return {r: int(n) for r, n in rows if r not in ("all", "total")}


def _shards(work) -> set[str]:
    return {p.stem for p in (work / "results/trainable_depth/runs").glob("s*.parquet")}


@pytest.mark.parametrize(
    "axis, before, after",
    [("seed", [0, 1, 2], [0, 1, 2, 3, 4]), ("sigma_w2", [1.0, 2.0], [1.0, 1.5, 2.0])],
)
def test_a_longer_list_reruns_only_the_shards_of_new_runs(tmp_path, axis, before, after):
    """Two depths (two shape groups), shards of 2 runs; the new runs are listed between or after
    the old ones, so cutting the longer grid in its order would move most old runs."""
    grid = {"keep_rate": [1.0], "depth": [2, 3], "sigma_w2": [1.0, 2.0], "seed": [0, 1, 2]}

    def per_depth(g):
        return len(g["sigma_w2"]) * len(g["seed"])

    work = tmp_path / "work"
    small, large = {**grid, axis: before}, {**grid, axis: after}
    cfg = write_config(work, tiny_study(grid=small), shard_size=2)
    target = "results/trainable_depth/metrics.parquet"  # the shards and their merge
    run_snakemake(work, cfg, target)
    old = _shards(work)
    assert len(old) == 2 * -(-per_depth(small) // 2)

    cfg = write_config(work, tiny_study(grid=large), shard_size=2)
    out = run_snakemake(work, cfg, "-n", target)
    planned = _planned(out.stdout + out.stderr)
    new_runs = per_depth(large) - per_depth(small)
    assert planned["init_shard"] == planned["train_shard"] == 2 * -(-new_runs // 2)
    assert planned["merge_metrics"] == 1

    run_snakemake(work, cfg, target)
    assert old <= _shards(work)  # every computed shard kept its id
    metrics = pd.read_parquet(work / "results/trainable_depth/metrics.parquet")
    assert metrics.run_id.nunique() == 2 * per_depth(large)
    again = run_snakemake(work, cfg, "-n", target)
    assert _planned(again.stdout + again.stderr) == {}
