"""sigprop plan: FLOPs counted on the meta device agree with the analytic count,
a shard's memory and time follow from them, and the plan covers every shard of the config."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import tiny_study, write_config

from sigprop.runs import RunSpec
from sigprop.tools import plan as P
from sigprop.tools.bench import fc_step_flops


def test_eval_examples_match_the_engine():
    from sigprop.train import engine as shard

    assert P.EVAL_TRAIN_MAX == shard.EVAL_TRAIN_MAX


@pytest.mark.parametrize("width, depth, batch", [(32, 3, 8), (100, 5, 64)])
def test_meta_flop_count_equals_the_analytic_count(width, depth, batch):
    run = RunSpec(arch="fc", width=width, depth=depth, batch_size=batch, keep_rate=0.9)
    c = P.shape_cost(run, (20,), 10, batch)
    assert c.step_flops == pytest.approx(fc_step_flops(20, width, depth, 10, batch))
    assert c.fwd_flops_per_example == pytest.approx(
        2 * (20 * width + (depth - 1) * width**2 + width * 10)
    )
    assert c.params == 20 * width + (depth - 1) * width**2 + width * 10 + depth * width + 10
    # at least pre-activations and activations of every hidden layer are saved
    assert c.act_bytes >= 4 * batch * 2 * width * depth


def test_plan_covers_every_shard_and_projects_gpu_time(tmp_path):
    cfg = write_config(tmp_path, tiny_study(), shard_size=3)
    p = P.plan(cfg, calibrate_cpu=True, efficiency=0.5, rates_file=tmp_path / "rates.json")
    (block,) = p["blocks"]
    _, studies = P.load(cfg)
    assert block["runs"] == 8 == len(studies["trainable_depth"].runs)
    assert block["shards"] == len(studies["trainable_depth"].shards) >= 3
    t = p["studies"]["trainable_depth"]
    for g, spec in P.GPUS.items():
        assert t[f"{g}_h_total"] * 3600 == pytest.approx(
            t["flops_total"] / (spec["float32"] * 1e12 * 0.5)
        )
    assert p["cpu_rates"]["fc"]["gflops"] > 0 and block["cpu_h_total"] > 0
    # a shard's CPU time is its FLOPs at the rate plus its init stage, per parameter and byte
    rate = p["cpu_rates"]["fc"]
    assert rate["init_s_per_param"] > 0 and rate["io_s_per_byte"] > 0
    rows = {r["shard"]: r for r in P.shard_costs(studies["trainable_depth"], {})}
    assert set(p["step_times"]) == {r["step_class"] for r in rows.values()}
    for s in p["shards"]:
        r = rows[s["shard"]]
        assert r["param_bytes"] == 4 * r["params"] > 0  # float32 runs
        # each shard's steps and evaluations at its own step class's timed rates
        t = p["step_times"][r["step_class"]]
        assert t["step_s"] > 0 and t["eval_s"] > 0
        work = r["steps"] * t["step_s"] + r["evals"] * t["eval_s"]
        init_s = r["params"] * rate["init_s_per_param"] + r["param_bytes"] * rate["io_s_per_byte"]
        assert s["cpu_s"] == pytest.approx(work + init_s) and init_s > 0
        assert r["evals"] == 20 // 10 + 1
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


def test_resources_come_from_the_plan_with_the_stated_safety_factors(tmp_path):
    cfg = write_config(tmp_path, tiny_study())
    p = P.plan(cfg, calibrate_cpu=False)
    res = P.resources(p, "A100-80GB")
    for r in p["shards"]:
        got = res["shards"]["trainable_depth"][r["shard"]]
        assert got["mem_mb"] == -(-(P.SAFETY_MEM * r["peak_bytes"] / 2**20 + P.HOST_BASE_MB) // 1)
        assert got["runtime"] == max(
            P.MIN_RUNTIME_MIN, -(-(P.SAFETY_TIME * r["A100-80GB_s"] / 60) // 1)
        )
        assert got["gpu_mem_mb"] < got["mem_mb"]
    with pytest.raises(ValueError, match="no cpu projection"):
        P.resources(p, "cpu")  # not calibrated


def test_rules_read_the_plan_and_stop_on_one_made_for_another_config(tmp_path):
    from sigprop.config import DEFAULT_SHARD_RESOURCES, ConfigError, load_resources, shard_request

    cfg = write_config(tmp_path, tiny_study())
    _, studies = P.load(cfg)
    res = P.resources(P.plan(cfg, calibrate_cpu=False), "A100-80GB")
    path = tmp_path / "res.json"
    path.write_text(json.dumps(res))
    plan = load_resources(path, studies)
    shard = studies["trainable_depth"].shards[0].shard_id
    want = res["shards"]["trainable_depth"][shard]
    assert (
        shard_request(plan, "trainable_depth", shard, "train", "runtime", 2) == 2 * want["runtime"]
    )
    assert shard_request(plan, "trainable_depth", shard, "init", "mem_mb", 1) == want["mem_mb"]
    assert (
        shard_request(plan, "trainable_depth", shard, "init", "runtime", 3)
        == 3 * DEFAULT_SHARD_RESOURCES["init"]["runtime"]
    )
    assert (
        shard_request({}, "trainable_depth", shard, "train", "mem_mb", 1)
        == DEFAULT_SHARD_RESOURCES["train"]["mem_mb"]
    )
    other = write_config(tmp_path / "other", tiny_study(grid={"depth": [4, 5]}))
    _, others = P.load(other)
    with pytest.raises(ConfigError, match=r"resources_plan: .*res.json: plans no requests"):
        load_resources(path, others)
    with pytest.raises(ConfigError, match="file not found"):
        load_resources(tmp_path / "none.json", studies)
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(ConfigError, match="not a resources plan"):
        load_resources(tmp_path / "bad.json", studies)


def test_the_plan_uses_measured_efficiencies_where_it_has_them(tmp_path):
    cfg = write_config(tmp_path, tiny_study(), shard_size=3)
    measured = {
        "H100-SXM-80GB": {
            "device": "NVIDIA H100 80GB HBM3",
            "date": "2026-11-26",
            "commit": "abc1234",
            "by_family": {"fc": 0.1},
        }
    }
    p = P.plan(cfg, calibrate_cpu=False, measured=measured)
    peak_h = P.GPUS["H100-SXM-80GB"]["float32"] * 1e12
    peak_a = P.GPUS["A100-80GB"]["float32"] * 1e12
    for r in p["shards"]:
        assert r["H100-SXM-80GB_s"] == pytest.approx(r["flops"] / (peak_h * 0.1))
        assert r["A100-80GB_s"] == pytest.approx(r["flops"] / (peak_a * P.DEFAULT_EFFICIENCY))
    line = P.efficiency_line(p, "H100-SXM-80GB")
    assert "measured by sigprop gpu-check" in line and "trainable_depth 0.100" in line
    assert "2026-11-26" in line and "abc1234" in line
    assert "(assumed)" in P.efficiency_line(p, "A100-80GB")
    forced = P.plan(cfg, calibrate_cpu=False, efficiency=0.5, measured=measured)
    assert forced["shards"][0]["H100-SXM-80GB_s"] == pytest.approx(
        forced["shards"][0]["flops"] / (peak_h * 0.5)
    )
    assert "--efficiency" in P.efficiency_line(forced, "H100-SXM-80GB")


def test_the_plan_and_the_snakefile_share_one_config_loader(tmp_path, monkeypatch):
    """Both build the run with sigprop.config.load_run: every check the DAG makes, the plan
    makes (a schema default of a study file is filled for both, a bad value refused by both)."""
    from sigprop import config as C

    calls = []
    real = C.load_run
    monkeypatch.setattr(C, "load_run", lambda *a, **k: calls.append(a) or real(*a, **k))
    cfg = write_config(tmp_path, tiny_study(), shard_size=3)
    _, studies = P.load(cfg)
    assert len(calls) == 1 and "trainable_depth" in studies
    snakefile = (Path(__file__).resolve().parents[1] / "workflow" / "Snakefile").read_text()
    assert re.search(
        r"STUDIES = load_run\(\s*config,\s*_SOURCES,\s*snakemake_validator\(", snakefile
    )


def test_cpu_rates_are_stored_per_machine_and_reused(tmp_path, monkeypatch):
    """The calibration runs once per machine, torch version and shape: a second plan reuses the
    stored rates (and says when they were measured), another machine or --recalibrate measures
    again."""
    calls = []
    real = P.calibrate
    monkeypatch.setattr(
        P,
        "calibrate",
        lambda shapes, *a, **k: calls.append(set(shapes)) or real(shapes, seconds=0.05),
    )
    cfg = write_config(tmp_path, tiny_study(), shard_size=3)
    rates = tmp_path / "plan" / "cpu_rates.json"
    first = P.plan(cfg, efficiency=0.5, rates_file=rates)
    assert calls == [{"fc"}] and rates.exists()
    second = P.plan(cfg, efficiency=0.5, rates_file=rates)
    assert len(calls) == 1 and second["cpu_rates"] == first["cpu_rates"]
    assert second["cpu_rates_source"]["reused"] == ["fc"]
    assert "reused for fc" in P.table(second) and "measured 20" in P.table(second)
    P.plan(cfg, efficiency=0.5, rates_file=rates, recalibrate=True)
    assert len(calls) == 2
    data = json.loads(rates.read_text())
    data["machine"]["cpu"] = "another processor"
    rates.write_text(json.dumps(data))
    P.plan(cfg, efficiency=0.5, rates_file=rates)
    assert len(calls) == 3 and json.loads(rates.read_text())["machine"] == P.machine()
    # a grid with another costliest shape is calibrated for that shape
    P.plan(
        write_config(tmp_path / "wide", tiny_study(fixed={"width": 64}), shard_size=3),
        efficiency=0.5,
        rates_file=rates,
    )
    assert len(calls) == 4


@pytest.mark.parametrize(
    "run, in_shape, n_out",
    [
        (RunSpec(arch="fc", width=40, depth=4), (20,), 10),
        (RunSpec(arch="resnet18", width=8, dataset="cifar10"), (3, 32, 32), 10),
        (RunSpec(arch="densenet_fc", width=16, depth=3), (20,), 10),
    ],
)
def test_costs_extrapolated_in_the_batch_equal_direct_traces(run, in_shape, n_out):
    """A shape met at three or more batches is traced at batches 2 and 3 and extrapolated: the
    FLOPs and saved bytes equal those traced at each batch."""
    costs = P.StepCosts({(P.step_shape(run), in_shape, n_out): {8, 32, 100}})
    for batch in (8, 32, 100):
        assert costs.get(run, in_shape, n_out, batch) == P.shape_cost(run, in_shape, n_out, batch)
    assert len(costs.cache) == 5  # batches 2 and 3 traced, three derived


def test_step_classes_separate_what_sets_a_steps_time(tmp_path):
    """Shards that differ in depth, dropout or models are timed apart; a stored class is reused,
    and a shard whose class was not timed falls back to the family's FLOP rate."""
    from sigprop.tools import step_times

    cfg = write_config(tmp_path, tiny_study(), shard_size=3)
    _, studies = P.load(cfg)
    st = studies["trainable_depth"]
    rows = P.shard_costs(st, {})
    keys = {json.loads(r["step_class"])[3][2]: r for r in rows}  # by depth
    assert set(keys) == {2, 3}
    by = {(r.depth, r.keep_rate < 1) for sh in st.shards for r in sh.runs[:1]}
    assert len({r["step_class"] for r in rows}) >= len(by)
    calls = []
    real = step_times.time_class
    step_times_file = tmp_path / "rates.json"

    def timed(*a, **k):
        calls.append(a[1].shard_id)
        return real(*a[:5], seconds=0.01)

    import unittest.mock as mock

    with mock.patch.object(step_times, "time_class", timed):
        P.plan(cfg, efficiency=0.5, rates_file=step_times_file)
        n = len(calls)
        again = P.plan(cfg, efficiency=0.5, rates_file=step_times_file)
    assert n == len({r["step_class"] for r in rows}) and len(calls) == n
    assert sorted(again["step_times_reused"]) == sorted({r["step_class"] for r in rows})
    r = dict(rows[0], step_class="not timed")
    rate = again["cpu_rates"]["fc"]
    assert P.cpu_seconds(r, again["cpu_rates"], again["step_times"]) == pytest.approx(
        r["flops"] / (rate["gflops"] * 1e9)
        + r["params"] * rate["init_s_per_param"]
        + r["param_bytes"] * rate["io_s_per_byte"]
    )


def test_a_step_class_is_timed_on_the_shards_own_runs_and_scaled_back_when_cut():
    """A class over the calibration's FLOPs is timed on fewer models and scaled back by the
    ratio; its evaluation is timed on the shard's evaluation sizes."""
    from sigprop.config import build_study
    from sigprop.tools import step_times

    st = build_study("trainable_depth", "f.yaml", tiny_study(), "quick", 8)
    shard = st.shards[0]
    m = len(shard.runs)
    assert m >= 2 and P.eval_sizes(shard.runs[0], 1347, 450, st.eval_splits) == (1347, 450)
    flops = P.shard_costs(st, {})[0]["step_flops"]
    full = step_times.time_class(st, shard, {}, flops, P.CALIBRATION_FLOPS, seconds=0.01)
    assert full["models_timed"] == m and full["step_s"] > 0 and full["eval_s"] > 0
    cut = step_times.time_class(st, shard, {}, flops, flops * 1.5, seconds=0.01)  # one model
    assert cut["models_timed"] == 1 and cut["batch_timed"] == full["batch_timed"]


def test_split_sizes_are_known_without_building_the_data():
    """Both splits of the embedded sets, from their generators' arguments and the config's
    options: digits keeps ceil(1797 x test_fraction) images for testing."""
    assert P.dataset_dims("digits", {})[2:] == (1347, 450)
    assert P.dataset_dims("digits", {"digits": {"test_fraction": 0.5}})[2:] == (898, 899)
    assert P.dataset_dims("gaussian", {"gaussian": {"n": 100, "n_test": 7}})[2:] == (100, 7)
    assert P.dataset_dims("mnist", {})[2:] == (60000, 10000)
