"""``sigprop gpu-check`` (:mod:`sigprop.tools.gpu_check`) without a GPU: the CPU-against-device
comparison with the CPU on both sides (every family agrees exactly; a perturbed side fails),
the tolerance arithmetic, the timed paper-scale shard and its projection against
:mod:`sigprop.tools.plan`, the JSON writer, and the command's no-GPU path (exit 1, one clear line).
"""

from __future__ import annotations

import json
import math
import types

import pytest
import torch

from sigprop import cli
from sigprop.nets import families
from sigprop.tools import bench
from sigprop.tools import gpu_check as G
from sigprop.tools import plan as P


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def test_every_family_has_a_case_and_a_tolerance():
    assert set(G.FAMILY_CASES) == set(families.FAMILIES)
    assert {c[2] for c in G.FAMILY_CASES.values()} <= set(G.TOLERANCES)
    for tol in G.TOLERANCES.values():
        assert tol.loss_rtol < 1e-2 and tol.param_rtol <= 1e-2  # tighter than TF32 drift


@pytest.mark.parametrize("arch", sorted(G.FAMILY_CASES))
def test_cpu_against_cpu_agrees_for_every_family(arch):
    r = G.compare_family(arch, "cpu", "cpu")
    assert r["passed"], r
    assert r["failures"] == []
    assert r["losses"]["n"] > 0 and r["parameters"]["tensors"] > 0
    assert r["losses"]["max_abs"] == 0.0 and r["parameters"]["max_abs"] == 0.0
    assert all(c["max_abs"] == 0.0 for c in r["accuracies"].values())
    tol = G.TOLERANCES[G.FAMILY_CASES[arch][2]]
    assert r["tolerance"]["loss_rtol"] == tol.loss_rtol  # the tolerance is reported
    assert r["tolerance"]["precision"] == tol.precision


def _perturb_second_side(monkeypatch, offset: float):
    """The second training of a comparison starts from weights shifted by ``offset`` (as a
    device with a wrong kernel or a lost update would give)."""
    calls = []
    train = G._train

    def shifted(shard, data, params, buffers, device):
        calls.append(device)
        if len(calls) == 2:
            params = [p + offset for p in params]
        return train(shard, data, params, buffers, device)

    monkeypatch.setattr(G, "_train", shifted)
    return calls


@pytest.mark.parametrize("arch", ["fc", "resnet32", "vgg16x3"])
def test_a_perturbed_side_fails(monkeypatch, arch):
    calls = _perturb_second_side(monkeypatch, 1e-3)
    r = G.compare_family(arch, "cpu", "cpu")
    assert len(calls) == 2
    assert not r["passed"]
    assert "parameters" in r["failures"] and "losses" in r["failures"]
    assert r["parameters"]["worst"] > 1 and r["losses"]["worst"] > 1


def test_an_offset_well_inside_the_tolerance_passes(monkeypatch):
    """The check is not a bitwise one: a difference a tenth of the tolerance passes."""
    tol = G.TOLERANCES["shallow"]
    _perturb_second_side(monkeypatch, 0.1 * tol.param_rtol * G.PARAM_FLOOR)
    r = G.compare_family("fc", "cpu", "cpu")
    assert r["passed"], r
    assert 0 < r["parameters"]["worst"] < 1


def test_a_different_seed_fails():
    """Other data (another seed) on one side: the tables disagree."""
    shard, in_shape, tol = G.family_shard("fc")
    dtype = torch.float32
    from sigprop.train.engine import initial_state

    params, buffers = initial_state(shard, in_shape, G.N_OUT, G.CPU, dtype)
    df_a, _, _ = G._train(shard, G.tiny_data(in_shape, dtype, seed=0), params, buffers, G.CPU)
    df_b, _, _ = G._train(shard, G.tiny_data(in_shape, dtype, seed=1), params, buffers, G.CPU)
    t = G.compare_tables(df_b, df_a, tol)
    assert t["rows_match"] and t["losses"]["worst"] > 1


def test_close_and_compare_states_arithmetic():
    c = G.close([1.0, 2.0, math.nan], [1.0, 2.002, math.nan], rtol=1e-3, atol=0.0)
    assert c["n"] == 3 and c["max_abs"] == pytest.approx(0.002)
    assert c["max_rel"] == pytest.approx(0.002 / 2.002)
    assert c["worst"] == pytest.approx(0.002 / (1e-3 * 2.002))  # just under 1
    assert c["worst"] < 1
    assert G.close([math.nan], [1.0], 1e-3, 1e-6)["worst"] == math.inf  # NaN on one side
    a = [torch.tensor([1.0, -3.0]), torch.tensor([0.0])]
    b = [torch.tensor([1.0, -3.03]), torch.tensor([0.001])]
    s = G.compare_states(a, b, rtol=1e-2)
    assert s["max_abs"] == pytest.approx(0.03)
    # 0.03 against the tensor's scale 3.03; 0.001 against the floor 1e-2
    assert s["max_rel"] == pytest.approx(max(0.03 / 3.03, 0.001 / G.PARAM_FLOOR))
    assert s["worst"] == pytest.approx(s["max_rel"] / 1e-2)
    # the initial tensors widen the scale of a tensor that was bigger before training
    s0 = G.compare_states(a, b, rtol=1e-2, initial=[torch.tensor([10.0, 0.0]), None])
    assert s0["max_rel"] == pytest.approx(0.001 / G.PARAM_FLOOR)


def test_gpu_names_map_to_the_plan():
    assert G.gpu_key("NVIDIA H100 80GB HBM3") == "H100-SXM-80GB"
    assert G.gpu_key("NVIDIA A100-SXM4-80GB") == "A100-80GB"
    assert G.gpu_key("Tesla V100-SXM2-32GB") == "V100-32GB"
    assert G.gpu_key("NVIDIA GeForce RTX 4090") is None
    assert G.gpu_key(None) is None
    assert {G.gpu_key(k) for k in P.GPUS} == set(P.GPUS)


def test_projection_is_the_plans():
    key = "A100-80GB"
    out = G.projection(4e12, 2.0, key, "float32", efficiency=0.25)
    peak = P.GPUS[key]["float32"] * 1e12
    assert out["projected_s"] == pytest.approx(4e12 / (peak * 0.25))
    assert out["measured_over_projected"] == pytest.approx(2.0 / out["projected_s"])
    assert out["implied_efficiency"] == pytest.approx(2e12 / peak)
    assert out["gflops"] == pytest.approx(2000.0)
    none = G.projection(4e12, 2.0, None)
    assert none["efficiency_assumed"] == P.DEFAULT_EFFICIENCY
    assert "projected_s" not in none and none["gflops"] == pytest.approx(2000.0)


TIMED = dict(steps=2, models=2, batch=16, warmup=1, repeats=1, matmul_n=64)


def test_timed_shard_on_the_cpu_against_the_plan():
    out = G.timed_shard("cpu", **TIMED)
    shard, st, options = G.paper_shard()
    r0 = shard.runs[0]
    assert (out["study"], out["arch"], out["width"], out["depth"]) == (
        "trainable_depth",
        "fc",
        r0.width,
        r0.depth,
    )
    assert st.scale == "paper" and out["block"] == st.labels[r0.run_id]
    in_shape, n_out, _, _ = P.dataset_dims(r0.dataset, options)
    assert out["in_shape"] == list(in_shape) and out["models_in_shard"] == len(shard.runs)
    cost = P.shape_cost(r0, in_shape, n_out, 16)
    assert out["step_flops_per_model"] == pytest.approx(cost.step_flops)
    assert out["flops"] == pytest.approx(2 * 2 * cost.step_flops)
    assert out["gflops"] == pytest.approx(out["flops"] / out["seconds"] / 1e9)
    assert out["gpu_key"] is None and "projected_s" not in out  # the CPU is no plan GPU
    one = types.SimpleNamespace(
        shards=[shard], labels=st.labels, task=st.task, eval_splits=st.eval_splits, kind=st.kind
    )
    full = P.shard_costs(one, options)[0]  # the plan's costs of that one shard
    assert out["full_shard"]["flops"] == pytest.approx(full["flops"])
    for g, spec in P.GPUS.items():
        assert out["full_shard"]["projected_s"][g] == pytest.approx(
            full["flops"] / (spec["float32"] * 1e12 * P.DEFAULT_EFFICIENCY)
        )
    assert out["fraction_of_matmul"] > 0
    named = G.timed_shard("cpu", gpu_name="NVIDIA H100 80GB HBM3", efficiency=0.5, **TIMED)
    assert named["gpu_key"] == "H100-SXM-80GB"
    assert named["projected_s"] == pytest.approx(
        named["flops"] / (P.GPUS["H100-SXM-80GB"]["float32"] * 1e12 * 0.5)
    )


def test_run_all_writes_one_json(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "matmul_peak", lambda dev, n=2048, repeats=5: 1e10)
    case = dict(width=8, depth=2, models=2, batch=8, steps=2, baselines=("loop",))
    out = tmp_path / "gpu_check.json"
    r = G.run_all(
        "cpu", out, bench_repeats=1, bench_cases=[case], archs=["fc", "vcnn"], timed=TIMED
    )
    assert r["passed"] and r["errors"] == {}
    d = json.loads(out.read_text())
    assert d["command"] == "sigprop gpu-check" and d["device"] == "cpu"
    assert {"date", "commit", "machine", "torch", "cuda", "precision", "tolerances"} <= set(d)
    assert d["precision"]["tf32_off"] is True
    assert d["bench"]["results"][0]["width"] == 8
    assert set(d["families"]) == {"fc", "vcnn"} and d["failed_families"] == []
    assert set(d["timed_shards"]) == {"trainable_depth"}
    assert d["timed_shards"]["trainable_depth"]["study"] == "trainable_depth"
    assert d["efficiency"] == {"by_study": {}, "by_family": {}}  # the CPU is no plan GPU
    assert "passed" in G.summary(r)


def test_run_all_records_a_failing_part(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("no such kernel")

    monkeypatch.setattr(bench, "run", boom)
    monkeypatch.setattr(G, "timed_shard", boom)
    r = G.run_all("cpu", tmp_path / "x.json", archs=["fc"])
    assert not r["passed"]
    assert r["errors"] == {
        "bench": "RuntimeError: no such kernel",
        "timed_shard[trainable_depth]": "RuntimeError: no such kernel",
    }
    assert r["families"]["fc"]["passed"]
    assert json.loads((tmp_path / "x.json").read_text())["passed"] is False


def test_jsonable_is_strict_json():
    import numpy as np

    x = G.jsonable(
        {
            "a": (1, np.float32(0.5)),
            "b": math.nan,
            "c": torch.tensor([1.0, math.inf]),
            "d": np.int64(3),
        }
    )
    assert x == {"a": [1, 0.5], "b": "nan", "c": [1.0, "inf"], "d": 3}
    json.dumps(x, allow_nan=False)


def test_the_command_without_cuda_says_so_and_exits_1(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["gpu-check", "--out", "x.json"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("sigprop gpu-check: no CUDA device")
    assert "srun --gpus=1 sigprop gpu-check" in err
    assert not (tmp_path / "x.json").exists()
    with pytest.raises(RuntimeError, match="no CUDA device"):
        G.run_all("cuda")


def test_timed_shard_times_the_named_shard():
    shard, st, _ = G.paper_shard(study="pruning_eoc")
    last = st.shards[-1]
    out = G.timed_shard("cpu", study="pruning_eoc", shard=last.shard_id, **TIMED)
    assert out["shard"] == last.shard_id and out["block"] == st.labels[last.runs[0].run_id]
    with pytest.raises(KeyError, match="no shard 'nope'"):
        G.paper_shard(study="pruning_eoc", shard="nope")


def test_costliest_shard_is_the_plans_costliest():
    """The ranking that needs no tracing keeps the shard the plan finds costliest."""
    import types

    st, options = G._paper(None, "dropout_training")
    rows = P.shard_costs(
        types.SimpleNamespace(
            shards=st.shards,
            labels=st.labels,
            task=st.task,
            eval_splits=st.eval_splits,
            kind=st.kind,
        ),
        options,
    )
    most = max(r["flops"] for r in rows)
    got = G.costliest_shard("dropout_training", candidates=1)
    assert got["flops"] == pytest.approx(most)
    assert got["shard"] in {r["shard"] for r in rows if r["flops"] == most}  # ties: any
    assert got["costed"] <= got["shards"] == len(st.shards)


def _fake_result(tmp_path):
    def t(study, arch, eff, flops):
        return {
            "study": study,
            "arch": arch,
            "implied_efficiency": eff,
            "full_shard": {"flops": flops},
        }

    return {
        "gpu_key": "H100-SXM-80GB",
        "device_name": "NVIDIA H100 80GB HBM3",
        "date": "2026-11-26 10:00:00",
        "commit": "abc1234",
        "torch": "2.11.0",
        "cuda": "13.0",
        "timed_shards": {
            "trainable_depth": t("trainable_depth", "fc", 0.2, 1e15),
            "dropout_training": t("dropout_training", "fc", 0.05, 1e12),
            "pruning_resnet": t("pruning_resnet", "resnet32", 0.4, 1e14),
            "width_batch": {"study": "width_batch", "arch": "fc"},
        },
    }


def test_measured_efficiency_per_study_and_family(tmp_path):
    eff = G.measured_efficiency(_fake_result(tmp_path))
    assert eff["by_study"] == {
        "trainable_depth": 0.2,
        "dropout_training": 0.05,
        "pruning_resnet": 0.4,
    }
    # a family's value is its costliest timed shard's
    assert eff["by_family"] == {"fc": 0.2, "resnet32": 0.4}


def test_a_gpu_the_plan_learned_of_later_gets_its_efficiency_from_the_measured_rate():
    """A check run on a GPU missing from the plan's table (no projection in the JSON) is
    recorded once the table has it: achieved FLOP/s over the dense float32 peak."""
    t = {
        "study": "pruning_eoc",
        "arch": "fc",
        "flops": 4.0e12,
        "seconds": 2.0,
        "precision": "float32",
        "full_shard": {"flops": 1e15},
    }
    result = {"gpu_key": None, "device_name": "NVIDIA H200", "timed_shards": {"pruning_eoc": t}}
    eff = G.measured_efficiency(result)["by_study"]["pruning_eoc"]
    assert eff == pytest.approx(2.0e12 / (P.GPUS["H200-SXM-141GB"]["float32"] * 1e12))
    assert G.measured_efficiency({**result, "device_name": "a CPU"})["by_study"] == {}


def test_record_writes_what_the_plan_reads(tmp_path):
    js = tmp_path / "gpu_check.json"
    js.write_text(json.dumps(_fake_result(tmp_path)))
    yml = tmp_path / "gpu_efficiency.yaml"
    entry = G.record(js, yml, source="docs/evidence/gpu/x.json")
    assert entry["device"] == "NVIDIA H100 80GB HBM3" and entry["date"] == "2026-11-26"
    got = P.measured_efficiencies(yml)
    assert got["H100-SXM-80GB"]["by_family"] == {"fc": 0.2, "resnet32": 0.4}
    assert got["H100-SXM-80GB"]["source"] == "docs/evidence/gpu/x.json"
    assert P.efficiency_for(got, "H100-SXM-80GB", "dropout_training", "fc") == (0.05, "study")
    assert P.efficiency_for(got, "H100-SXM-80GB", "training_speed", "fc") == (0.2, "family")
    assert P.efficiency_for(got, "H100-SXM-80GB", "x", "vgg16") == (P.DEFAULT_EFFICIENCY, "assumed")
    assert P.efficiency_for(got, "A100-80GB", "trainable_depth", "fc")[1] == "assumed"
    cpu = _fake_result(tmp_path) | {"gpu_key": None, "device_name": None}
    js.write_text(json.dumps(cpu))
    with pytest.raises(ValueError, match="gpu_check.json: device None is no GPU"):
        G.record(js, yml)


@pytest.mark.parametrize(
    "text, match",
    [
        ("H100-SXM-80GB:\n  by_family: {fc: 1.5}\n", "H100-SXM-80GB.by_family.fc: 1.5"),
        ("H100-SXM-80GB:\n  by_study: {x: lots}\n", "H100-SXM-80GB.by_study.x: 'lots'"),
        ("B200:\n  by_family: {fc: 0.5}\n", "'B200' is no GPU"),
    ],
)
def test_a_bad_efficiency_file_names_the_file_and_key(tmp_path, text, match):
    yml = tmp_path / "gpu_efficiency.yaml"
    yml.write_text(text)
    with pytest.raises(ValueError, match=match) as e:
        P.measured_efficiencies(yml)
    assert str(yml) in str(e.value)


def test_the_shards_option_names_training_studies():
    assert G.parse_shards("trainable_depth=s1, pruning_eoc=") == {
        "trainable_depth": "s1",
        "pruning_eoc": "",
    }
    with pytest.raises(ValueError, match="'meanfield_maps' is not a training study"):
        G.parse_shards("meanfield_maps=s1")


def test_the_committed_efficiencies_are_the_committed_measurement(tmp_path):
    """config/gpu_efficiency.yaml holds, for every GPU, what ``--record`` derives from the
    gpu-check JSON it names (committed under docs/evidence/gpu/), nothing typed by hand."""
    committed = P.measured_efficiencies()
    assert committed, "config/gpu_efficiency.yaml is missing or empty"
    for gpu, entry in committed.items():
        source = G.REPO / entry["source"]
        assert source.is_file(), f"{gpu}: its source {entry['source']} is not committed"
        again = G.record(source, tmp_path / f"{gpu}.yaml", source=entry["source"])
        assert again == entry
        result = json.loads(source.read_text())
        # a GPU added to the plan's table after its check ran has no key in the JSON
        assert (result["gpu_key"] or G.gpu_key(result["device_name"])) == gpu
        assert result["passed"] is True
