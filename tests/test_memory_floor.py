"""The memory floor of a shard (sigprop.sizing, sigprop.tools.plan.shard_floor_mb) and what the shard
jobs ask for with it (sigprop.config.shard_request): parameter counts against the families'
own parameters, the refusal message, and requests on a scheduler and in a local run. The
workflow's refusal before any job starts is tested in tests/test_faults.py."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from conftest import run_snakemake, tiny_study, write_config

from sigprop import sizing
from sigprop.config import DEFAULT_SHARD_RESOURCES, shard_request
from sigprop.nets import families
from sigprop.runs import RunSpec
from sigprop.tools import plan as P

SHAPES = [
    ("fc", dict(width=7, depth=1), (64,), 10),
    ("fc", dict(width=5, depth=4), (3, 4, 4), 2),
    ("resnet_fc", dict(width=6, depth=3), (9,), 1),
    ("resnet_fc", dict(width=4, depth=2, branch_depth=3), (5,), 3),
    ("stable_resnet_fc", dict(width=3, depth=5, branch_depth=2), (2, 2), 1),
    ("densenet_fc", dict(width=5, depth=1), (8,), 1),
    ("densenet_fc", dict(width=4, depth=6), (3,), 2),
]


@pytest.mark.parametrize("arch,fields,in_shape,n_out", SHAPES)
def test_parameter_count_equals_the_familys_own_parameters(arch, fields, in_shape, n_out):
    """Counted from the shapes without building anything, equal to what the family's init
    builds (two models, so a per-model count cannot hide in a stacked axis)."""
    run = RunSpec(arch=arch, **fields)
    keys = torch.arange(2, dtype=torch.int64)
    params, buffers = families.get(arch).init(
        (run, run), keys, in_shape, n_out, torch.device("cpu"), torch.float32
    )
    built = sum(p[0].numel() for p in params) + sum(b[0].numel() for b in buffers)
    assert sizing.param_count(run, in_shape, n_out) == built


def test_families_whose_shapes_need_building_have_no_floor():
    run = RunSpec(arch="resnet32", dataset="cifar10")
    assert sizing.param_count(run, (3, 32, 32), 10) is None
    assert sizing.shard_floor_bytes((run,), (3, 32, 32), 10, 100) is None


def test_floor_counts_parameters_and_gradients_of_every_model_and_the_data():
    run = RunSpec(arch="fc", width=10, depth=2)
    per_model = sizing.param_count(run, (4,), 3)
    assert per_model == (4 * 10 + 10) + (10 * 10 + 10) + (10 * 3 + 3)
    assert sizing.shard_floor_bytes((run,) * 5, (4,), 3, 0) == 5 * 2 * 4 * per_model
    wide = dataclasses.replace(run, precision="float64")
    assert sizing.shard_floor_bytes((wide,) * 5, (4,), 3, 7) == 5 * 2 * 8 * per_model + 4 * 7 * 4


def test_plan_floor_of_a_configured_shard(tmp_path):
    cfg = write_config(tmp_path, tiny_study(fixed={"width": 300}, grid={"depth": [4]}))
    config, studies = P.load(cfg)
    st = studies["trainable_depth"]
    shard = st.shards[0]
    n = len(shard.runs)
    params = 64 * 300 + 300 + 3 * (300 * 300 + 300) + 300 * 10 + 10
    data = (1347 + 450) * 64 * 4  # digits' training and test splits (test_fraction 0.25)
    got = P.shard_floor_mb(st, shard, config["data"]["options"])
    assert got == pytest.approx((n * 2 * 4 * params + data) / 2**20)


ROWS = [
    ("studies/a.yaml", "big block", "s000000000001", 8, 30_000.0),
    ("studies/a.yaml", "big block", "s000000000002", 8, 29_000.0),
    ("studies/b.yaml", "one model", "s000000000003", 1, 50_000.0),
    ("studies/b.yaml", "small", "s000000000004", 64, 100.0),
]


def test_refusal_names_each_block_its_file_and_estimate_and_says_what_to_do():
    msg = sizing.too_big(ROWS, 24_000, "this machine's memory")
    assert msg.startswith("3 shard(s) in 2 block(s) need more memory than the 24,000 MB")
    assert (
        "studies/b.yaml: block 'one model', shard s000000000003: at least 50,000 MB for "
        "its one model's parameters" in msg
    )
    assert (
        "studies/a.yaml: block 'big block', shard s000000000001: at least 30,000 MB for "
        "its 8 models' parameters and gradients (and 1 more shards)" in msg
    )
    assert "small" not in msg
    assert "shard_size" in msg and "--resources mem_mb" in msg
    assert sizing.too_big(ROWS, 60_000, "x") is None
    assert sizing.too_big([], 1, "x") is None


class _Res(dict):
    """Snakemake's global resources: ``name in r`` and ``r[name].value``."""

    def __getitem__(self, k):
        return type("R", (), {"value": dict.__getitem__(self, k)})()


def test_local_memory_is_the_users_resources_else_the_machines(monkeypatch):
    assert sizing.local_memory(_Res(mem_mb=1234)) == (1234, "--resources mem_mb")
    monkeypatch.setattr(sizing, "physical_memory_mb", lambda: 8000)
    mb, source = sizing.local_memory(_Res(_cores=2))
    assert mb == 8000 and "machine" in source
    monkeypatch.setattr(sizing, "physical_memory_mb", lambda: None)
    assert sizing.local_memory(_Res()) is None


def test_a_given_mem_mb_of_zero_or_less_is_an_error_not_the_machines_memory(monkeypatch):
    """Snakemake's global resources hold mem_mb only when --resources gives it (mem= converted
    to it): not given means this machine's memory; a given 0 or less leaves no job any memory
    and is refused, naming the option and the value."""
    from snakemake.resources import Resources

    monkeypatch.setattr(sizing, "physical_memory_mb", lambda: 8000)
    for given, shown in (
        (["mem_mb=0"], "mem_mb=0"),
        (["mem=0"], "mem_mb=0"),
        (["mem_mb=0", "gpu=1"], "mem_mb=0"),
    ):
        with pytest.raises(ValueError) as e:
            sizing.local_memory(Resources.parse(given, allow_expressions=False))
        assert str(e.value).startswith(
            f"--resources {shown}: the memory this run's jobs may "
            "use together must be more than 0 MB"
        )
        assert "this machine's memory (8,000 MB)" in str(e.value)
    with pytest.raises(ValueError, match=r"^--resources mem_mb=-5: "):
        sizing.local_memory(_Res(mem_mb=-5))  # through Snakemake's API, not its CLI
    assert sizing.local_memory(Resources.parse([], allow_expressions=False))[0] == 8000
    assert sizing.local_memory(Resources.parse(["gpu=1"], allow_expressions=False))[0] == 8000
    assert sizing.local_memory(Resources.parse(["mem_mb=7"], allow_expressions=False)) == (
        7,
        "--resources mem_mb",
    )


def test_a_dry_run_with_mem_mb_zero_stops_naming_the_option(tmp_path):
    """The workflow passes Snakemake's own global resources: an explicit 0 stops the run while
    the Snakefile is read; without --resources the dry run plans the jobs."""
    cfg = write_config(tmp_path, tiny_study())
    p = run_snakemake(tmp_path, cfg, "-n", "--resources", "mem_mb=0", check=False)
    out = p.stdout + p.stderr
    assert (
        p.returncode != 0
        and "--resources mem_mb=0: the memory this run's jobs may use "
        "together must be more than 0 MB"
        in out
    ), out[-3000:]
    p = run_snakemake(tmp_path, cfg, "-n")
    assert "train_shard" in p.stdout + p.stderr


def test_physical_memory_is_this_machines():
    with open("/proc/meminfo") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
    assert sizing.physical_memory_mb() == kb // 1024


def test_requests_never_below_the_floor_on_a_scheduler_and_the_floor_itself_locally():
    default = DEFAULT_SHARD_RESOURCES["train"]["mem_mb"]
    assert shard_request({}, "s", "x", "train", "mem_mb", 1, floor_mb=10.0) == default
    big = 3 * default + 0.5
    assert shard_request({}, "s", "x", "train", "mem_mb", 2, floor_mb=big) == 2 * (
        3 * default + 1 + sizing.HOST_BASE_MB
    )
    plan = {"s": {"x": {"mem_mb": 50_000, "runtime": 7}}}
    assert shard_request(plan, "s", "x", "train", "mem_mb", 1, floor_mb=big) == 50_000
    assert shard_request({}, "s", "x", "train", "mem_mb", 1, floor_mb=None) == default
    assert shard_request({}, "s", "x", "train", "mem_mb", 1, floor_mb=1234.2, local=True) == 1235
    assert shard_request({}, "s", "x", "init", "mem_mb", 3, floor_mb=0.3, local=True) == 3
    assert shard_request({}, "s", "x", "init", "mem_mb", 1, floor_mb=None, local=True) == 1
    assert shard_request(plan, "s", "x", "train", "runtime", 1, floor_mb=big, local=True) == 7


def test_light_jobs_ask_for_memory_by_their_inputs_size_never_above_the_runs():
    assert sizing.light_job_mb(0) == sizing.LIGHT_BASE_MB
    assert sizing.light_job_mb(10) == sizing.LIGHT_BASE_MB + 10 * sizing.LIGHT_MB_PER_INPUT_MB
    assert sizing.light_job_mb(100, limit_mb=3500) == 3500  # runs alone rather than never


def test_a_run_whose_memory_is_below_a_light_jobs_request_still_runs_it(tmp_path):
    """With --resources mem_mb below what the merge would ask for by its inputs, the merge asks
    for the run's memory, runs alone and the run finishes."""
    from conftest import run_snakemake

    cfg = write_config(
        tmp_path, tiny_study(grid={"depth": [2], "keep_rate": [1.0], "sigma_w2": [1.0, 2.0]})
    )
    out = run_snakemake(
        tmp_path, cfg, "results/trainable_depth/claims.parquet", "--resources", "mem_mb=301"
    )
    text = out.stdout + out.stderr
    assert (tmp_path / "results/trainable_depth/claims.parquet").exists()
    merge = text[text.index("rule merge_metrics:") :]
    assert "mem_mb=301" in merge[: merge.index("Shell command")]
