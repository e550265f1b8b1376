"""sigprop plan (issue 19): FLOPs counted on the meta device agree with the analytic count,
a shard's memory and time follow from them, and the plan covers every shard of the config."""

from __future__ import annotations

import json

import pytest
from conftest import tiny_study, write_config

from sigprop import plan as P
from sigprop.bench import fc_step_flops
from sigprop.runs import RunSpec


def test_eval_examples_match_the_engine():
    from sigprop.train import shard
    assert P.EVAL_TRAIN_MAX == shard.EVAL_TRAIN_MAX


@pytest.mark.parametrize("width, depth, batch", [(32, 3, 8), (100, 5, 64)])
def test_meta_flop_count_equals_the_analytic_count(width, depth, batch):
    run = RunSpec(arch="fc", width=width, depth=depth, batch_size=batch, keep_rate=0.9)
    c = P.shape_cost(run, (20,), 10, batch)
    assert c.step_flops == pytest.approx(fc_step_flops(20, width, depth, 10, batch))
    assert c.fwd_flops_per_example == pytest.approx(2 * (20 * width + (depth - 1) * width ** 2
                                                         + width * 10))
    assert c.params == 20 * width + (depth - 1) * width ** 2 + width * 10 + depth * width + 10
    # at least pre-activations and activations of every hidden layer are saved
    assert c.act_bytes >= 4 * batch * 2 * width * depth


def test_plan_covers_every_shard_and_projects_gpu_time(tmp_path):
    cfg = write_config(tmp_path, tiny_study(), shard_size=3)
    p = P.plan(cfg, calibrate_cpu=True, efficiency=0.5)
    (block,) = p["blocks"]
    _, studies = P.load(cfg)
    assert block["runs"] == 8 == len(studies["trainable_depth"].runs)
    assert block["shards"] == len(studies["trainable_depth"].shards) >= 3
    t = p["studies"]["trainable_depth"]
    for g, spec in P.GPUS.items():
        assert t[f"{g}_h_total"] * 3600 == pytest.approx(t["flops_total"] / (spec["float32"] * 1e12 * 0.5))
    assert p["cpu_rates"]["fc"]["gflops"] > 0 and block["cpu_h_total"] > 0
    json.dumps(p, default=str)
    text = P.table(p)
    assert f"| trainable_depth | quick | {block['block']} | 8 | {block['shards']} |" in text


def test_plan_overrides_like_snakemake_config(tmp_path):
    cfg = write_config(tmp_path, tiny_study())
    p = P.plan(cfg, ["scale=paper"], calibrate_cpu=False)
    assert p["studies"]["trainable_depth"]["scale"] == "paper"


def test_cli_rejects_an_efficiency_outside_0_1(capsys):
    from sigprop.cli import main
    assert main(["plan", "--efficiency", "1.5", "--no-calibrate"]) == 2
    assert "--efficiency 1.5" in capsys.readouterr().err
