"""The smoke run (sigprop.config.smoke): the reduction of a study, its verdicts, and the whole
paper-scale smoke run on stand-in raw files (slow: the real workflow, every study)."""

from __future__ import annotations

import dataclasses
import shutil
import time

import pandas as pd
import pytest
import yaml
from conftest import REPO, run_snakemake

from sigprop.claims import check_table, row, sanity, tally
from sigprop.config import build_study, load_yaml, smoke
from sigprop.runs import RunSpec
from sigprop.train import host_memory

SMOKE_MEM_MB = 3500
"""The memory the smoke run's jobs may ask for at once (their declared floors, rules/common.smk)."""


def _pairs():
    a = [
        (RunSpec(depth=d, seed=s, steps=300, eval_every=100), "(a)") for d in (2, 3) for s in (0, 1)
    ]
    b = [
        (RunSpec(depth=4, batch_size=64, micro_batch=8, steps=1000, eval_every=500), "(b)"),
        (RunSpec(depth=4, steps=1, eval_every=1), "(b)"),
        (RunSpec(depth=5, steps=1), "(b)"),
    ]
    return a + b


def test_smoke_keeps_the_first_runs_of_every_block_with_few_steps():
    out = smoke.smoke_pairs(_pairs())
    assert [lab for _, lab in out] == ["(a)", "(a)", "(b)", "(b)"]
    (r1, _), (r2, _), (r3, _), (r4, _) = out
    assert (r1.depth, r1.seed, r2.depth, r2.seed) == (2, 0, 2, 1)  # grid order kept
    assert (r1.steps, r1.eval_every) == (smoke.STEPS, smoke.STEPS)
    assert (r1.batch_size, r1.eval_max) == (smoke.BATCH, smoke.EVAL)
    # a micro-batched run keeps micro-steps: batch_size / micro_batch of them per optimizer step
    assert (r3.batch_size, r3.micro_batch) == (smoke.BATCH, smoke.BATCH // 2)
    assert (r3.steps, r3.eval_every) == (smoke.STEPS * 2, smoke.STEPS * 2)
    assert r4.steps == 1 and r4.depth == 4
    assert r1.run_id != _pairs()[0][0].run_id
    # runs that differ only in what the caps remove are one run: the next distinct one is kept
    sweep = [(RunSpec(batch_size=b, seed=0), "(c)") for b in (16, 32, 64)] + [
        (RunSpec(batch_size=16, seed=1), "(c)")
    ]
    kept = [r for r, _ in smoke.smoke_pairs(sweep)]
    assert [(r.batch_size, r.seed) for r in kept] == [(smoke.BATCH, 0), (smoke.BATCH, 1)]


def test_a_block_of_very_wide_models_keeps_one_run():
    wide = RunSpec(arch="fc", dataset="mnist", width=1000, depth=200, precision="float64")
    assert smoke.models_for(wide) == 1 and smoke.models_for(RunSpec()) == smoke.MODELS
    pairs = [(dataclasses.replace(wide, seed=k), "(w)") for k in range(3)] + [
        (RunSpec(seed=k), "(n)") for k in range(3)
    ]
    assert [lab for _, lab in smoke.smoke_pairs(pairs)] == ["(w)", "(n)", "(n)"]


def test_the_capped_evaluation_scores_at_most_eval_max_examples():
    """eval_max caps each split an evaluation scores (the smoke run's EVAL): on 20 examples per
    split it scores what it scores on the first 5 alone."""
    import torch

    from sigprop.runs import Shard
    from sigprop.train.engine import Data, ShardTrainer, initial_state

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(40, 6, generator=g), torch.randint(0, 3, (40,), generator=g)
    run = RunSpec(depth=2, width=8, batch_size=4, steps=1, eval_every=1, eval_max=5)
    scores = []
    for data in (
        Data(x[:20], y[:20], x[20:], y[20:], 3),
        Data(x[:5], y[:5], x[20:25], y[20:25], 3),
    ):
        shard = Shard("t", (run,))
        params, buffers = initial_state(shard, (6,), 3, torch.device("cpu"), torch.float32)
        tr = ShardTrainer(shard, data, params, torch.device("cpu"), buffers=buffers)
        tr.evaluate()
        scores.append(pd.DataFrame(tr.rows, columns=["model", "step", "metric", "value"]))
    a, b = (s.set_index("metric").value for s in scores)
    assert set(a.index) >= {"train_loss", "test_loss", "train_acc", "test_acc"}
    for m in ("train_loss", "test_loss", "train_acc", "test_acc"):
        assert float(a[m]) == float(b[m])


def test_smoke_study_is_built_from_the_paper_scale_file():
    path = REPO / "config/studies/trainable_depth.yaml"
    full = build_study("trainable_depth", path, load_yaml(path), "paper", 64)
    small = build_study("trainable_depth", path, load_yaml(path), "paper", 64, smoke=True)
    assert set(small.labels.values()) == set(full.labels.values())  # every block
    assert len(small.runs) == smoke.MODELS * len(set(full.labels.values()))
    shapes = {(r.arch, r.dataset, r.width, r.depth, r.precision) for r in small.runs}
    assert shapes <= {(r.arch, r.dataset, r.width, r.depth, r.precision) for r in full.runs}
    assert max(r.steps for r in small.runs) <= smoke.STEPS
    assert max(r.batch_size for r in small.runs) <= smoke.BATCH
    assert {r.eval_max for r in small.runs} == {smoke.EVAL}
    assert '"smoke": true' in small.design() and '"smoke"' not in full.design()


def test_a_scales_smoke_sections_apply_to_the_smoke_run_alone():
    path = REPO / "config/studies/dropout_training.yaml"
    cfg = load_yaml(path)
    full = build_study("dropout_training", path, cfg, "paper", 64)
    small = build_study("dropout_training", path, cfg, "paper", 64, smoke=True)
    assert full.params.measure.mc_samples == cfg["scales"]["paper"]["measure"]["mc_samples"]
    assert (
        small.params.measure.mc_samples == cfg["scales"]["paper"]["smoke"]["measure"]["mc_samples"]
    )
    assert small.params.measure.input_keep == full.params.measure.input_keep  # the rest kept
    bad = {
        **cfg,
        "scales": {
            **cfg["scales"],
            "paper": {**cfg["scales"]["paper"], "smoke": {"measure": {"mc_samples": "many"}}},
        },
    }
    with pytest.raises(Exception, match=r"scales\.paper\.smoke\.measure\.mc_samples"):
        build_study("dropout_training", path, bad, "paper", 64, smoke=True)


def test_smoke_verdicts_decide_nothing():
    df = pd.DataFrame(
        [
            row("s", "c1", "a claim", "src", 1.0, 1.0, 0.1, "pass", test="z", detectable=0.1),
            row("s", "c2", "a claim", "src", 3.0, 1.0, 0.1, "fail", test="z", detectable=0.1),
            sanity("s", "c3", "an identity", "src", 1.0, 1.0, 0.1, "pass"),
        ]
    )
    out = smoke.smoke_verdicts(df)
    assert set(out.verdict) == {"smoke"} and out.measured.tolist() == df.measured.tolist()
    check_table(out, "smoke test")
    t = tally(out)
    assert t.get("smoke") == 2 and not t.get("pass") and not t.get("fail")


@pytest.mark.slow
def test_paper_scale_smoke_run_of_every_study(tmp_path):
    """Every study at paper scale, 2 runs per block and 2 steps, on stand-in raw files written
    in the real formats and pinned by checksum: data, init, prune, train or measure, merge,
    theory, figures, claims (all 'smoke'), paper tables and the report."""
    from sigprop.data.stand_ins import sizes_for, write_stand_ins
    from sigprop.tools import plan

    t0 = time.time()
    shutil.copytree(REPO / "config", tmp_path / "config")  # the studies and paper numbers
    cfg = load_yaml(REPO / "config/config.yaml")
    cfg.update(
        scale="paper",
        smoke=True,
        device="cpu",
        checkpoint_every=0,
        studies_dir=str(tmp_path / "config/studies"),
    )
    path = tmp_path / "smoke.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    _, studies = plan.load(path)
    fragment = write_stand_ins(
        tmp_path / "stand-ins", sizes=sizes_for(r for s in studies.values() for r in s.runs)
    )
    cfg["data"].update(fragment["data"])
    path = tmp_path / "smoke.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    # Every job runs in its own worker process (sigprop.steps.workers), so the run's memory is
    # what its running jobs hold at once; the jobs give freed memory back (glibc's defaults), so
    # a worker holds no more than its job's live tensors.  The widest models stay (000 at width
    # 1000, depth 200, float64, one model a shard: about 3 GB asked for); Snakemake's memory
    # resource runs such jobs, and the light jobs of large tables, one at a time, which keeps
    # the test command under 8 GB
    run_snakemake(
        tmp_path,
        path,
        "--resources",
        f"mem_mb={SMOKE_MEM_MB}",
        timeout=1800,
        env={host_memory.ENV: "0"},
    )
    res = tmp_path / "results"
    for name in cfg["studies"]:
        claims = pd.read_parquet(res / name / "claims.parquet")
        assert len(claims) and set(claims.verdict) == {"smoke"}, name
        assert list((res / name / "figures").glob("*.png")), name
    for paper in ("000", "001", "002", "003", "004"):
        assert "smoke" in (res / "papers" / paper / "summary.md").read_text()
    again = run_snakemake(tmp_path, path)
    assert "Nothing to be done" in again.stdout + again.stderr
    rep = run_snakemake(tmp_path, path, "--report", str(tmp_path / "report.html"))
    assert "ERROR/" not in rep.stderr, rep.stderr[-2000:]
    print(f"paper-scale smoke run, every study: {time.time() - t0:.0f} s")


def test_the_heavy_group_names_tests_that_exist():
    """tests/conftest.py keeps the heaviest tests out of each other's way by name; a renamed
    test would silently leave the group."""
    from conftest import HEAVY

    sources = "".join(p.read_text() for p in (REPO / "tests").glob("test_*.py"))
    assert all(f"def {name}(" in sources for name in HEAVY), HEAVY
