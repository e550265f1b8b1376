"""The `sigprop` command: its registry of command modules, `sigprop theory ...` printing JSON for
every theory command, and the benches under `sigprop bench <what>`."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

import pytest
from conftest import REPO

from sigprop import cli
from sigprop.tools import theory_cli

COMMANDS = theory_cli.theory_commands()
TOP_LEVEL = (
    "theory",
    "bench",
    "params",
    "plan",
    "gpu-check",
    "claims-doc",
    "compare",
    "evidence",
    "ladder",
    "stand-ins",
)
"""Top-level commands there must be (a module added to ``cli.COMMAND_MODULES`` adds more)."""
BENCHES = ("shard", "threads", "profile", "dag", "alloc", "sweep", "reruns")


def _named() -> list[str]:
    """The commands the modules of ``cli.COMMAND_MODULES`` name, in order."""
    return [c for m in cli.COMMAND_MODULES for c in importlib.import_module(m).COMMANDS]


def _sigprop(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sigprop.cli", *argv], capture_output=True, text=True, timeout=120
    )


def test_help_lists_every_command_and_imports_no_torch():
    """``sigprop --help`` lists every top-level command; building the parser (every command
    module imported) loads no torch or matplotlib."""
    p = _sigprop("--help")
    assert p.returncode == 0, p.stderr
    listed = p.stdout.split("positional arguments:")[1]
    assert all(f"\n    {c} " in listed for c in _named()), p.stdout
    code = (
        "import sys\nfrom sigprop import cli\ncli.build_parser()\n"
        "print(sorted({'torch', 'matplotlib'} & set(sys.modules)))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "[]", p.stdout + p.stderr


@pytest.mark.parametrize("name", cli.COMMAND_MODULES)
def test_each_module_registers_exactly_the_commands_it_names(name):
    """``register`` adds the commands of the module's ``COMMANDS``, no other, each with a
    handler (``bench``'s are on its benches)."""
    module = importlib.import_module(name)
    assert getattr(module, "COMMANDS", None), f"{name}: name its commands in COMMANDS"
    sub = argparse.ArgumentParser().add_subparsers()
    module.register(sub)
    assert tuple(sub.choices) == tuple(module.COMMANDS)
    for command, parser in sub.choices.items():
        if command == "bench":
            continue
        assert callable(parser.get_default("func")), command


def test_the_modules_give_the_top_level_commands_once():
    named = _named()
    assert len(set(named)) == len(named) and set(TOP_LEVEL) <= set(named), named


def test_bench_help_lists_the_seven_benches_each_with_a_handler():
    p = _sigprop("bench", "--help")
    assert p.returncode == 0, p.stderr
    assert all(f"\n    {b} " in p.stdout for b in BENCHES), p.stdout
    parser = cli.build_parser()
    for b in BENCHES:
        args = parser.parse_args(
            ["bench", b] + (["width_batch"] if b in ("threads", "profile") else [])
        )
        assert callable(args.func) and args.prog == f"sigprop bench {b}", b


def test_cli_module_stays_a_small_registry():
    assert len((REPO / "sigprop/cli.py").read_text().splitlines()) < 200


@pytest.mark.parametrize(
    "old",
    ["bench-threads", "profile-shard", "bench-dag", "bench-alloc", "bench-sweep", "rerun-table"],
)
def test_the_old_bench_names_are_refused(old):
    """The benches are ``sigprop bench <what>``; their old top-level names get argparse's usual
    error (usage, invalid choice, exit status 2)."""
    p = _sigprop(old, "--help")
    assert p.returncode == 2 and p.stdout == "", p.stdout
    assert p.stderr.startswith("usage: sigprop ") and f"invalid choice: '{old}'" in p.stderr


def test_every_theory_module_declares_commands():
    modules = {c["module"] for c in COMMANDS.values()}
    assert modules == set(theory_cli.THEORY_MODULES)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_runs_with_defaults_and_prints_json(name, capsys):
    cmd = COMMANDS[name]
    missing = [
        p
        for p, s in cmd.get("params", {}).items()
        if s.get("default") is None and not s.get("optional", False)
    ]
    assert not missing, f"{name}: give every parameter a default so the command demonstrates itself"
    assert cli.main(["theory", name]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["command"] == name and out["result"]


def test_entry_point_help_and_a_command():
    help_ = subprocess.run(
        [sys.executable, "-m", "sigprop.cli", "theory", "--help"], capture_output=True, text=True
    )
    assert help_.returncode == 0 and "meanfield" in help_.stdout and "eoc" in help_.stdout
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "sigprop.cli",
            "theory",
            "eoc",
            "--act",
            "relu",
            "--rho",
            "1,0.5",
            "--sigma-b2",
            "0",
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)["result"]
    assert res["sigma_w2"] == [[pytest.approx(2.0)], [pytest.approx(1.0)]]  # relu EOC: 2 rho


def test_bad_values_give_a_clear_error():
    p = subprocess.run(
        [sys.executable, "-m", "sigprop.cli", "theory", "meanfield", "--sigma-b2", "x"],
        capture_output=True,
        text=True,
    )
    assert p.returncode != 0 and "--sigma_b2: expected float" in p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "sigprop.cli", "theory", "meanfield", "--act", "tahn"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and "tahn" in p.stderr


def test_bench_command_prints_both_timings():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "sigprop.cli",
            "bench",
            "shard",
            "--widths",
            "16",
            "--models",
            "3",
            "--depth",
            "2",
            "--steps",
            "2",
            "--batch",
            "8",
            "--device",
            "cpu",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    res = out["results"][0]
    assert res["models"] == 3 and res["shard_s"] > 0 and res["loop_s"] > 0
    assert res["speedup"] == pytest.approx(res["loop_s"] / res["shard_s"])
    # the peers a PyTorch user would pick, and the machine's peak measured on the spot
    assert res["func_best"] in ("func_vmap_optim", "func_vmap_grad") and res["minimal_s"] > 0
    assert res["speedup_vs_func"] == pytest.approx(res["func_s"] / res["shard_s"])
    assert res["fraction_of_minimal"] == pytest.approx(res["minimal_s"] / res["shard_s"])
    assert 0 < res["shard_peak_fraction"] < 1 and out["matmul_peak_gflops"] > 0
    assert res["shard_spread"] >= 0 and out["commit"] and out["date"]
    assert res["shard_page_faults_per_step"] >= 0 and isinstance(res["keep_freed_memory"], bool)


def test_bench_flops_are_counted_from_shapes_as_torch_counts_them():
    import torch

    from sigprop.tools.bench import _step_flops, fc_step_flops

    layers, d = [], 20
    for _ in range(3):
        layers += [torch.nn.Linear(d, 12), torch.nn.Tanh()]
        d = 12
    model = torch.nn.Sequential(*layers, torch.nn.Linear(12, 7))
    x, y = torch.randn(5, 20), torch.randint(0, 7, (5,))
    assert _step_flops(model, x, y) == fc_step_flops(20, 12, 3, 7, 5)


def test_bench_sweep_command_times_the_three_layouts():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "sigprop.cli",
            "bench",
            "sweep",
            "--batches",
            "8,32",
            "--models-per-batch",
            "2",
            "--epochs",
            "0.1",
            "--device",
            "cpu",
            "--repeats",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["models"] == 4 and res["per_batch_jobs"] == 2 and res["micro_batch"] == 8
    assert min(res["micro_s"], res["per_batch_s"], res["padded_s"]) > 0
    assert res["speedup_vs_per_batch"] == pytest.approx(res["per_batch_s"] / res["micro_s"])


def test_profile_shard_names_where_a_training_step_goes(tmp_path):
    from sigprop.data.prepare import prepare
    from sigprop.tools import profile_shard

    prepare("digits", tmp_path / "data" / "digits.npz")
    out = profile_shard.profile(
        "trainable_depth",
        config=["studies=[trainable_depth]", f"studies_dir={REPO / 'config/studies'}"],
        configfile=str(REPO / "config/config.yaml"),
        steps=2,
        warmup=1,
        results=tmp_path,
    )
    assert out["study"] == "trainable_depth" and out["models"] > 1 and out["depth"] == 64
    # without --shard: the shard with the most FLOPs by `sigprop plan`'s count
    from sigprop.tools import plan

    cfg, studies = plan.load(
        REPO / "config/config.yaml",
        ["studies=[trainable_depth]", f"studies_dir={REPO / 'config/studies'}"],
    )
    flops = {
        r["shard"]: r["flops"]
        for r in plan.shard_costs(studies["trainable_depth"], cfg["data"]["options"])
    }
    assert len(flops) > 1 and flops[out["shard"]] == max(flops.values())
    assert out["step_ms_profiled"] > 0 and out["page_faults_per_step"] >= 0
    ops = {o["op"]: o for o in out["ops"]}
    assert "aten::bmm" in ops and "aten::tanh" in ops  # a tanh fc net's step
    assert all(0 < o["self_fraction"] <= 1 for o in out["ops"])
    with pytest.raises(SystemExit, match="digits.npz is missing"):
        profile_shard.profile(
            "trainable_depth",
            config=[f"studies_dir={REPO / 'config/studies'}"],
            configfile=str(REPO / "config/config.yaml"),
            results=tmp_path / "none",
        )
    with pytest.raises(SystemExit, match="does not train"):
        profile_shard.profile(
            "meanfield_maps",
            config=[f"studies_dir={REPO / 'config/studies'}"],
            configfile=str(REPO / "config/config.yaml"),
            results=tmp_path,
        )


def test_bench_threads_times_a_shard_in_each_arrangement(tmp_path):
    from sigprop.data.prepare import prepare
    from sigprop.tools import bench_threads

    prepare("digits", tmp_path / "data" / "digits.npz")
    out = bench_threads.bench(
        "width_batch",
        config=["studies=[width_batch]", f"studies_dir={REPO / 'config/studies'}"],
        configfile=str(REPO / "config/config.yaml"),
        steps=3,
        repeats=2,
        arrangements=("alone", "two_threads", "beside_python"),
        results=str(tmp_path),
    )
    assert out["study"] == "width_batch" and out["models"] > 1 and out["steps"] == 3
    arr = out["arrangements"]
    assert set(arr) == {"alone", "two_threads", "beside_python"}
    assert all(a["s"] > 0 and a["spread"] >= 0 for a in arr.values())
    assert arr["alone"]["of_alone"] == 1.0
    with pytest.raises(SystemExit, match="unknown arrangement"):
        bench_threads.one("sideways", None, 1, [])


def test_bench_alloc_times_both_threads_with_huge_pages_off_and_on(capsys):
    assert cli.main(["bench", "alloc", "--sizes", "8", "--repeats", "2"]) == 0
    res = json.loads(capsys.readouterr().out)
    cases = {(c["huge_pages"], c["where"]): c for c in res["cases"]}
    assert set(cases) == {(False, "main"), (False, "thread"), (True, "main"), (True, "thread")}
    assert all(c["mb"] == 8 and c["ms"] > 0 and c["faults_per_call"] >= 0 for c in cases.values())
    assert cli.main(["bench", "alloc", "--sizes", "0"]) == 2
    assert "sizes must be positive" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, names",
    [
        (["plan", "--no-calibrate", "--config", "scale"], "--config 'scale'"),
        (["plan", "--no-calibrate", "--config", "scale=huge"], "--config: key 'scale'"),
        (["bench", "profile", "trainable_depth", "--shard", "sbad"], "no shard sbad"),
        (["bench", "dag", "--runs", "-5"], "--runs -5"),
        (["stand-ins", "/proc/no/such/dir", "--datasets", "mnist"], "/proc/no"),
        (["stand-ins", "out", "--datasets", "mnits"], "mnits"),
        (["claims-doc", "/no/such/papers.md"], "/no/such/papers.md"),
        (["compare", "/no/a", "/no/b"], "/no/a"),
    ],
)
def test_expected_errors_end_in_one_line_naming_the_input(argv, names, monkeypatch, capsys):
    """A bad argument, config value, name or path ends the command with exit status 2 and one
    line on stderr that names it (before: a traceback; `plan --config scale=huge` blamed a study
    file)."""
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("SIGPROP_TRACEBACK", raising=False)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    command = " ".join(argv[:2] if argv[0] == "bench" else argv[:1])
    assert err.startswith(f"sigprop {command}: ") and "\n" not in err and names in err, err
    assert "trainable_depth.yaml" not in err
