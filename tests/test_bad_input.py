"""Bad input: every config error class stops the run before any job, with a message naming the
file and the key; malformed tables and weight files are rejected with their path; every
``torch.load`` in the package and scripts uses ``weights_only=True``.

tests/test_config.py has the first cases of each class (typos, a wrong type, keep_rate out of
range, unknown data set / activation); this file covers the rest of them.  Config errors are
checked with a real run (not ``-n``): a check that let the config through would start jobs and
create ``results/``.
"""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import REPO, run_snakemake, tiny_study, write_config

from sigprop import tables
from sigprop.config import ConfigError, build_study, check_data_options, train_size
from sigprop.runs import RunSpec, Shard
from sigprop.train import engine

STUDY_FILE = "studies/trainable_depth.yaml"


def _study(fixed=None, grid=None, drop_fixed=(), **top):
    s = tiny_study(fixed=fixed or {}, grid=grid or {}, **top)
    for k in drop_fixed:
        s["scales"]["quick"]["blocks"][0]["fixed"].pop(k)
    return s


MAPS_FILE = "studies/meanfield_maps.yaml"


def _maps(section, key, value, scale=None):
    """The shipped meanfield_maps study with one parameter set (at ``scales.<scale>`` if given)."""
    import yaml

    s = yaml.safe_load((REPO / "config/studies/meanfield_maps.yaml").read_text())
    where = s["scales"][scale].setdefault(section, {}) if scale else s[section]
    where[key] = value
    return s


def _derived(derived):
    s = tiny_study(grid={"depth": [2, 3], "keep_rate": [1.0], "sigma_w2": [1.0]})
    s["scales"]["quick"]["blocks"][0]["fixed"].pop("lr")
    s["scales"]["quick"]["blocks"][0]["derived"] = derived
    return s


def _two_blocks():
    s = tiny_study(grid={"depth": [2], "keep_rate": [1.0], "sigma_w2": [1.0, 2.0]})
    block = s["scales"]["quick"]["blocks"][0]
    s["scales"]["quick"]["blocks"] = [
        block,
        {**block, "grid": {**block["grid"], "sigma_w2": [2.0]}},
    ]
    return s


def _empty_blocks():
    s = tiny_study()
    s["scales"]["quick"]["blocks"] = []
    return s


# (case, study, top-level config overrides, file named, key named, words the message must hold)
CASES = [
    # unknown key
    (
        "unknown key in fixed",
        _study(fixed={"widht": 8}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].fixed",
        ["'widht' was unexpected"],
    ),
    (
        "unknown key at the top of the study",
        _study(titel="x"),
        {},
        STUDY_FILE,
        "(top level)",
        ["'titel' was unexpected"],
    ),
    (
        "unknown key in data",
        tiny_study(),
        {"data": {"mirorr": "x"}},
        "config.yaml",
        "data",
        ["'mirorr' was unexpected"],
    ),
    # wrong type
    (
        "wrong type in a grid list",
        _study(grid={"depth": ["deep"]}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].grid.depth[0]",
        ["'deep' is not of type 'integer'"],
    ),
    (
        "grid value not a list",
        _study(grid={"depth": 3}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].grid.depth",
        ["not of type 'array'"],
    ),
    (
        "wrong type at top level",
        tiny_study(),
        {"threads_per_job": "two"},
        "config.yaml",
        "threads_per_job",
        ["not of type 'integer'"],
    ),
    # out of range
    (
        "sparsity 1",
        _study(fixed={"pruner": "snip", "sparsity": 1.0}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].fixed.sparsity",
        ["maximum of 1"],
    ),
    (
        "steps 0",
        _study(fixed={"steps": 0}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].fixed.steps",
        ["minimum of 1"],
    ),
    (
        "negative lr in a grid",
        _study(grid={"lr": [0.1, -0.1]}, drop_fixed=("lr",)),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].grid.lr[1]",
        ["-0.1"],
    ),
    (
        "momentum 1",
        _study(fixed={"momentum": 1.0}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].fixed.momentum",
        ["maximum of 1"],
    ),
    (
        "negative checkpoint_every",
        tiny_study(),
        {"checkpoint_every": -5},
        "config.yaml",
        "checkpoint_every",
        ["minimum of 0"],
    ),
    ("unknown scale", tiny_study(), {"scale": "huge"}, "config.yaml", "scale", ["'huge'"]),
    # unknown names
    (
        "unknown architecture",
        _study(fixed={"arch": "mlp"}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].fixed.arch",
        ["unknown arch 'mlp'"],
    ),
    (
        "unknown dataset in a grid",
        _study(grid={"dataset": ["digits", "mnits"]}, drop_fixed=("dataset",)),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].grid.dataset",
        ["unknown dataset 'mnits'"],
    ),
    (
        "unknown pruner in a grid",
        _study(grid={"pruner": ["snip", "snap"], "sparsity": [0.5]}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].grid.pruner",
        ["unknown pruner 'snap'"],
    ),
    (
        "unknown study kind",
        _study(kind="trainable_dept"),
        {},
        STUDY_FILE,
        "kind",
        ["no study package 'trainable_dept'"],
    ),
    # empty grid
    (
        "empty grid list",
        _study(grid={"depth": []}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].grid.depth",
        ["should be non-empty"],
    ),
    ("no blocks", _empty_blocks(), {}, STUDY_FILE, "scales.quick.blocks", ["should be non-empty"]),
    (
        "no studies",
        tiny_study(),
        {"studies": []},
        "config.yaml",
        "studies",
        ["should be non-empty"],
    ),
    # inconsistent shapes
    (
        "conv architecture on a flat data set",
        _study(fixed={"arch": "vcnn", "activation": "relu"}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].fixed.arch",
        ["'vcnn' is convolutional", "'digits'", "(64,)"],
    ),
    (
        "conv architecture in a grid on a flat data set",
        _study(grid={"arch": ["fc", "lenet"]}, drop_fixed=("arch",)),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].grid.arch",
        ["'lenet' is convolutional"],
    ),
    (
        "batch larger than the training set",
        _study(fixed={"batch_size": 2000}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].fixed.batch_size",
        ["batch_size 2000 exceeds the 1347 training"],
    ),
    (
        "eval_every beyond steps",
        _study(fixed={"steps": 20, "eval_every": 50}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].fixed.eval_every",
        ["eval_every (50) exceeds steps (20)"],
    ),
    (
        "micro_batch not dividing batch_size",
        _study(grid={"micro_batch": [8, 12]}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].grid.micro_batch",
        ["batch_size 32 is not a multiple of micro_batch 12"],
    ),
    # the study's typed parameters (sigprop/studies/<kind>/__init__.py)
    (
        "typo in a claim tolerance",
        _maps("claims", "zmax", 2.0),
        {},
        MAPS_FILE,
        "claims.zmax",
        ["unknown key", "did you mean 'z_max'", "2.0"],
    ),
    (
        "typo in a per-scale section",
        _maps("claims", "z_maxx", 2.0, scale="quick"),
        {},
        MAPS_FILE,
        "scales.quick.claims.z_maxx",
        ["unknown key", "did you mean 'z_max'"],
    ),
    (
        "study parameter of the wrong type",
        _maps("measure", "q_probes", "1, 2"),
        {},
        MAPS_FILE,
        "measure.q_probes",
        ["expected a list", "'1, 2'"],
    ),
    (
        "study parameter out of range",
        _maps("claims", "joint_level", 1.5),
        {},
        MAPS_FILE,
        "claims.joint_level",
        ["1.5 is out of range", "< 1"],
    ),
    (
        "study parameter not finite",
        _maps("theory", "q_max", float("nan")),
        {},
        MAPS_FILE,
        "theory.q_max",
        ["not a finite number"],
    ),
    (
        "study parameter not one of its choices",
        _maps("analysis", "panels", [{"activation": "tanh", "map": "x"}]),
        {},
        MAPS_FILE,
        "analysis.panels[0].map",
        ["'x' is not one of 'q', 'c'"],
    ),
    # non-finite numbers (NaN fails every comparison, so no schema range catches it)
    (
        "NaN as a fixed value",
        _study(fixed={"sigma_w2": float("nan")}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].fixed.sigma_w2",
        ["nan is not a finite number"],
    ),
    (
        "NaN in a grid list",
        _study(grid={"keep_rate": [1.0, float("nan")]}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].grid.keep_rate[1]",
        ["nan is not a finite number"],
    ),
    (
        "infinity as a fixed value",
        _study(fixed={"lr": float("inf")}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].fixed.lr",
        ["inf is not a finite number"],
    ),
    (
        "NaN in a derived rule",
        _derived({"lr": {"per_depth": float("nan")}}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].derived.lr.per_depth",
        ["nan is not a finite number"],
    ),
    (
        "NaN at the top of the config",
        tiny_study(),
        {"memory_budget_mb": float("nan")},
        "config.yaml",
        "memory_budget_mb",
        ["nan is not a finite number"],
    ),
    # data options, checked when the DAG is built (they were checked only inside the job)
    (
        "data option out of range",
        tiny_study(),
        {"data": {"options": {"gaussian": {"d": -5}}}},
        "config.yaml",
        "data.options.gaussian.d",
        ["-5 is out of range [1, inf]"],
    ),
    (
        "data option of the wrong type",
        tiny_study(),
        {"data": {"options": {"digits": {"test_fraction": "half"}}}},
        "config.yaml",
        "data.options.digits.test_fraction",
        ["expected a number, got 'half'"],
    ),
    # duplicates and scale
    (
        "a value twice in a grid list",
        _study(grid={"seed": [0, 0, 1, 1, 2, 2]}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].grid.seed",
        ["0 is listed twice", "6 values, 3 distinct"],
    ),
    (
        "the same run from two blocks",
        _two_blocks(),
        {},
        STUDY_FILE,
        "scales.quick.blocks",
        ["is made by the blocks 'block 0' and 'block 1'"],
    ),
    (
        "a grid over max_runs",
        _study(
            grid={
                "keep_rate": [round(0.001 * (i + 1), 6) for i in range(1000)],
                "seed": list(range(1000)),
                "depth": [2],
                "sigma_w2": [1.0],
            }
        ),
        {},
        STUDY_FILE,
        "scales.quick.blocks",
        ["the grid makes 1,000,000 runs, more than max_runs = 100,000"],
    ),
    (
        "micro_batch on a BatchNorm family",
        _study(fixed={"arch": "resnet18", "dataset": "digits_images", "micro_batch": 8}),
        {},
        STUDY_FILE,
        "scales.quick.blocks[0].fixed.micro_batch",
        ["arch 'resnet18' has BatchNorm"],
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("case,study,top,filename,key,words", CASES, ids=[c[0] for c in CASES])
def test_config_error_stops_before_any_job(workdir, case, study, top, filename, key, words):
    cfg = write_config(workdir, study, **top)
    p = run_snakemake(workdir, cfg, check=False, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-2000:]
    assert not (workdir / "results").exists(), f"a job ran despite the bad config: {out[-2000:]}"
    assert "ConfigError" in out, out[-2000:]
    line = next((ln for ln in out.splitlines() if f"key '{key}'" in ln), None)
    assert line is not None, f"no line names key '{key}':\n{out[-2000:]}"
    assert str(workdir / filename) in line, line
    for w in words:
        assert w in line, (w, line)


# -- the checks in-process: exact sizes, task, data options -------------------------------


def test_train_size_agrees_with_the_generators():
    from sigprop.data import embedded

    assert train_size("digits") == len(embedded.digits()[0]) == 1347
    assert train_size("digits_images", {"test_fraction": 0.1}) == len(
        embedded.digits_images(test_fraction=0.1)[0]
    )
    assert train_size("gaussian", {"n": 40, "d": 3}) == len(embedded.gaussian(n=40, d=3)[0])
    assert train_size("synthetic_regression", {"n_train": 50}) == len(
        embedded.synthetic_regression(n_train=50)[0]
    )
    assert train_size("cifar10") == 50_000 and train_size("mnist") == 60_000


def test_batch_size_check_uses_data_options_and_only_training_studies():
    study = tiny_study(fixed={"batch_size": 1000})
    build_study("trainable_depth", "f.yaml", study, "quick", 64)  # 1000 <= 1347 by default
    with pytest.raises(
        ConfigError,
        match=r"f.yaml: key 'scales.quick.blocks\[0\].fixed.batch_size': "
        r"batch_size 1000 exceeds the 898 training examples",
    ):
        build_study(
            "trainable_depth",
            "f.yaml",
            study,
            "quick",
            64,
            data_options={"digits": {"test_fraction": 0.5}},
        )
    # a study that only measures at initialization never draws a batch: no limit
    measure = tiny_study(kind="meanfield_maps", theory={}, analysis={}, fixed={"batch_size": 5000})
    build_study("trainable_depth", "f.yaml", measure, "quick", 64)


def test_image_archs_are_the_convolutional_families():
    from sigprop.config import IMAGE_ARCHS
    from sigprop.nets import convnets

    assert set(IMAGE_ARCHS) == set(convnets.families())
    # and a conv net on an image data set passes
    build_study(
        "trainable_depth",
        "f.yaml",
        tiny_study(fixed={"arch": "vcnn", "dataset": "digits_images", "activation": "relu"}),
        "quick",
        64,
    )


def test_data_options_name_the_file_and_key():
    check_data_options({"gaussian": {"d": 256}, "digits": {"test_fraction": 0.2}}, "c.yaml")
    with pytest.raises(
        ConfigError,
        match=r"c.yaml: key 'data.options.gaussian.dd': unknown option "
        r"\(allowed: n, d, n_test, seed\)",
    ):
        check_data_options({"gaussian": {"dd": 3}}, "c.yaml")
    with pytest.raises(ConfigError, match=r"c.yaml: key 'data.options.gausian': unknown dataset"):
        check_data_options({"gausian": {}}, "c.yaml")
    with pytest.raises(ConfigError, match=r"key 'data.options.mnist.seed'.*downloaded"):
        check_data_options({"mnist": {"seed": 1}}, "c.yaml")
    import yaml

    shipped = yaml.safe_load((REPO / "config/config.yaml").read_text())
    check_data_options(shipped["data"]["options"], "config/config.yaml")


# -- malformed tables -------------------------------------------------------------------


def _shard_table(tmp_path, name="a.parquet") -> Path:
    shard = Shard("s", (RunSpec(width=4, depth=1), RunSpec(width=4, depth=1, seed=1)))
    long = pd.DataFrame(
        {"model": [0, 1], "step": [0, 0], "metric": ["train_acc"] * 2, "value": [0.1, 0.2]}
    )
    return tables.write_atomic(tables.run_rows(shard, long, "cpu"), tmp_path / name)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "missing columns"])
def test_malformed_shard_table_is_rejected_with_its_path(tmp_path, damage):
    good = _shard_table(tmp_path, "good.parquet")
    bad = tmp_path / "bad.parquet"
    data = good.read_bytes()
    if damage == "garbage":
        bad.write_bytes(b"this is not parquet" * 20)
    elif damage == "truncated":
        bad.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        bad.write_bytes(b"")
    else:
        pd.read_parquet(good).drop(columns=["run_id"]).to_parquet(bad)
    with pytest.raises(tables.TableError, match=re.escape(str(bad))) as err:
        tables.merge_runs([good, bad])
    assert ("missing column" in str(err.value)) == (damage == "missing columns")


@pytest.mark.slow
def test_merge_metrics_job_rejects_a_corrupt_shard_table_naming_it(workdir):
    study = tiny_study(grid={"depth": [2], "keep_rate": [1.0], "sigma_w2": [1.0]})
    cfg = write_config(workdir, study)
    target = "results/trainable_depth/metrics.parquet"
    run_snakemake(workdir, cfg, target)
    (table,) = (workdir / "results/trainable_depth/runs").glob("*.parquet")
    table.write_bytes(table.read_bytes()[:200])  # truncated, and newer than metrics.parquet
    p = run_snakemake(workdir, cfg, target, check=False)
    assert p.returncode != 0
    msg = f"{Path('results/trainable_depth/runs') / table.name}: not a readable Parquet table"
    assert msg in (workdir / "results/logs/trainable_depth/merge_metrics.log").read_text()
    assert msg in p.stdout + p.stderr  # shown by the run too (show-failed-logs / stderr)
    assert not (workdir / target).exists()  # the old merged table is not left looking current


# -- malformed weight files (init state, masks, resume checkpoint) -------------------------


class _Planted:
    """Unpickling this runs code: ``torch.load(weights_only=False)`` would create ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def _tiny_shard():
    return Shard(
        "s", (RunSpec(width=4, depth=1, steps=6, eval_every=3, batch_size=8, dataset="digits"),)
    )


def _bad_files(tmp_path, shard):
    """name -> path of a file that no loader may accept for ``shard``."""
    params = [torch.zeros(1, 2)]
    good = tmp_path / "good.pt"
    engine.save_state(params, [], shard, good)
    other = tmp_path / "other.pt"
    engine.save_state(params, [], Shard("t", (RunSpec(width=5),)), other)
    files = {
        "garbage": b"\x00not a torch file" * 10,
        "truncated": good.read_bytes()[:-40],
        "empty": b"",
    }
    out = {}
    for name, data in files.items():
        out[name] = tmp_path / f"{name}.pt"
        out[name].write_bytes(data)
    out["other shard"] = other
    out["code in the pickle"] = tmp_path / "planted.pt"
    torch.save(
        {"shard_id": shard.shard_id, "params": _Planted(tmp_path / "PWNED")},
        out["code in the pickle"],
    )
    return out


def test_malformed_init_state_and_mask_files_are_rejected_with_their_path(tmp_path):
    shard = _tiny_shard()
    for path in _bad_files(tmp_path, shard).values():
        with pytest.raises(ValueError, match=re.escape(str(path))):
            engine.load_state(path, shard)
        with pytest.raises(ValueError, match=re.escape(str(path))):
            engine.load_masks(path, shard)
    assert not (tmp_path / "PWNED").exists(), "a weights file ran code while loading"


def test_corrupt_resume_checkpoint_is_ignored_with_a_warning_naming_it(tmp_path, caplog):
    from sigprop.data import embedded

    shard = _tiny_shard()
    x_tr, y_tr, x_te, y_te = embedded.digits()
    data = engine.Data(
        torch.tensor(x_tr[:64]),
        torch.tensor(y_tr[:64]),
        torch.tensor(x_te[:32]),
        torch.tensor(y_te[:32]),
        10,
    )
    params, _ = engine.initial_state(shard, (64,), 10, torch.device("cpu"), torch.float32)
    ref = engine.ShardTrainer(shard, data, params, torch.device("cpu")).run()
    for name, path in _bad_files(tmp_path, shard).items():
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sigprop.train"):
            got = engine.ShardTrainer(
                shard, data, params, torch.device("cpu"), checkpoint=path
            ).run()
        warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert any(str(path) in m for m in warned), (name, warned)
        pd.testing.assert_frame_equal(got, ref)  # trained from the start, same rows
    assert not (tmp_path / "PWNED").exists()


# -- every torch.load is weights_only=True -----------------------------------------------


def _unsafe_torch_loads(source: str, filename: str) -> list[str]:
    """``file:line`` of each ``torch.load(...)`` (or a bare ``load`` imported from torch) call
    without the literal keyword ``weights_only=True``."""
    tree = ast.parse(source, filename)
    bare = {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == "torch"
        for a in n.names
        if a.name == "load"
    }
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        is_load = (
            isinstance(f, ast.Attribute)
            and f.attr == "load"
            and isinstance(f.value, ast.Name)
            and f.value.id == "torch"
        ) or (isinstance(f, ast.Name) and f.id in bare)
        safe = any(
            k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in node.keywords
        )
        if is_load and not safe:
            out.append(f"{filename}:{node.lineno}")
    return out


def test_the_torch_load_checker_catches_unsafe_calls():
    bad = (
        "import torch\nfrom torch import load as L\n"
        "a = torch.load(p)\nb = torch.load(p, weights_only=False)\nc = L(p)\n"
        "d = torch.load(p, **kw)\n"
    )
    assert _unsafe_torch_loads(bad, "x.py") == ["x.py:3", "x.py:4", "x.py:5", "x.py:6"]
    good = "import torch, numpy as np\na = torch.load(p, map_location='cpu', weights_only=True)\nnp.load(p)\n"
    assert _unsafe_torch_loads(good, "y.py") == []


def test_every_torch_load_in_package_scripts_and_rules_is_weights_only():
    files = sorted((REPO / "sigprop").rglob("*.py")) + sorted((REPO / "scripts").glob("*.py"))
    assert len(files) > 20
    unsafe, calls = [], 0
    for f in files:
        text = f.read_text()
        calls += text.count("torch.load(")
        unsafe += _unsafe_torch_loads(text, str(f.relative_to(REPO)))
    assert calls >= 3  # the init-state, mask and checkpoint loaders are seen
    assert unsafe == [], f"torch.load without weights_only=True: {unsafe}"
    # rules and the Snakefile are not Python files: no torch.load in them at all
    smk = sorted((REPO / "rules").glob("*.smk")) + [REPO / "workflow" / "Snakefile"]
    assert not [str(f) for f in smk if re.search(r"torch\s*\.\s*load\s*\(", f.read_text())]


def _digits_data():
    from sigprop.data import embedded

    x_tr, y_tr, x_te, y_te = embedded.digits()
    return engine.Data(
        torch.tensor(x_tr[:64]),
        torch.tensor(y_tr[:64]),
        torch.tensor(x_te[:32]),
        torch.tensor(y_te[:32]),
        10,
    )


def test_a_checkpoint_that_is_not_a_training_checkpoint_is_named_and_ignored(tmp_path, caplog):
    """The shard's own init file, or a plain list, at the checkpoint path: a warning naming the
    file, then training from step 0 (before: KeyError 'opt' / AttributeError on every rerun)."""
    shard = _tiny_shard()
    data = _digits_data()
    params, _ = engine.initial_state(shard, (64,), 10, torch.device("cpu"), torch.float32)
    ref = engine.ShardTrainer(shard, data, params, torch.device("cpu")).run()
    init = tmp_path / "init.pt"
    engine.save_state(params, [], shard, init)
    plain = tmp_path / "list.pt"
    torch.save([1, 2, 3], plain)
    for path in (init, plain):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sigprop.train"):
            got = engine.ShardTrainer(
                shard, data, params, torch.device("cpu"), checkpoint=path
            ).run()
        warned = " ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
        assert str(path) in warned and "not a training checkpoint" in warned, warned
        pd.testing.assert_frame_equal(got, ref)


def test_a_checkpoint_of_other_training_code_is_not_resumed(tmp_path, caplog):
    """A step-3 checkpoint left by a kill, then a change to the code that trains the shard (the
    train step's code digest, which the trainer is given): the rerun starts from step 0 with a
    warning naming the checkpoint and what changed, and gives the rows of a run from scratch;
    the same code resumes."""
    shard = _tiny_shard()
    data = _digits_data()
    params, _ = engine.initial_state(shard, (64,), 10, torch.device("cpu"), torch.float32)
    ref = engine.ShardTrainer(shard, data, params, torch.device("cpu")).run()
    ckpt = tmp_path / "ckpt.pt"
    t = engine.ShardTrainer(
        shard,
        data,
        params,
        torch.device("cpu"),
        checkpoint=ckpt,
        checkpoint_every=3,
        code="old-trainer-code",
    )
    for _ in range(3):
        t.train_step()
    t._save_checkpoint()
    assert torch.load(ckpt, weights_only=True)["fingerprint"]["code"] == "old-trainer-code"
    with caplog.at_level(logging.WARNING, logger="sigprop.train"):
        t2 = engine.ShardTrainer(
            shard, data, params, torch.device("cpu"), checkpoint=ckpt, code="new-trainer-code"
        )
        t2._maybe_resume()
    assert t2.step == 0
    warned = " ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    assert str(ckpt) in warned and "another code" in warned
    assert "old-trainer-code -> new-trainer-code" in warned
    caplog.clear()
    got = engine.ShardTrainer(
        shard, data, params, torch.device("cpu"), checkpoint=ckpt, code="new-trainer-code"
    ).run()
    pd.testing.assert_frame_equal(got, ref)
    # a checkpoint of the same code is resumed
    t = engine.ShardTrainer(
        shard,
        data,
        params,
        torch.device("cpu"),
        checkpoint=ckpt,
        checkpoint_every=3,
        code="new-trainer-code",
    )
    for _ in range(3):
        t.train_step()
    t._save_checkpoint()
    t3 = engine.ShardTrainer(
        shard, data, params, torch.device("cpu"), checkpoint=ckpt, code="new-trainer-code"
    )
    t3._maybe_resume()
    assert t3.step == 3


def test_the_train_step_resumes_a_checkpoint_only_under_its_own_code_digest(tmp_path, caplog):
    """A checkpoint left at step 3 by a killed job of other code (here: trained on other data, as
    an edit of sigprop/data/prepare.py, outside sigprop/train and sigprop/nets, would make it) is
    not resumed by the train step: the code a checkpoint records is the train step's digest
    (the rule's ``code`` param; by default ``registry.step_code("train")``, which covers
    prepare.py), so the shard trains from step 0 and its table equals a run from scratch.  A
    checkpoint recorded under the same digest is resumed."""
    from sigprop import registry
    from sigprop.data.prepare import load, prepare
    from sigprop.steps import shards as steps

    assert "sigprop.data.prepare" in registry.module_closure(*registry.STEP_CODE["train"])
    cpu = torch.device("cpu")
    shard = _tiny_shard()
    js = shard.to_json()
    data_path = prepare("digits", tmp_path / "digits.npz")
    init = tmp_path / "init.pt"
    steps.init_shard(js, str(data_path), str(init), device="cpu")
    steps.train_shard(js, str(init), str(data_path), str(tmp_path / "ref.parquet"), device="cpu")
    ref = pd.read_parquet(tmp_path / "ref.parquet")
    ckpt = tmp_path / "ckpt.pt"

    def killed_at_step_3(code):
        """The checkpoint a job of ``code`` leaves, trained on other data (labels shifted)."""
        data = engine.to_data(load(data_path), cpu, torch.float32)
        data = engine.Data(data.x_train, (data.y_train + 1) % 10, data.x_test, data.y_test, 10)
        params, buffers = engine.load_state(init, shard)
        t = engine.ShardTrainer(
            shard,
            data,
            params,
            cpu,
            buffers=buffers,
            checkpoint=ckpt,
            checkpoint_every=3,
            code=code,
        )
        for _ in range(3):
            t.train_step()
        t._save_checkpoint()

    killed_at_step_3("digest-of-the-code-before-the-edit")
    with caplog.at_level(logging.INFO, logger="sigprop.train"):
        steps.train_shard(
            js,
            str(init),
            str(data_path),
            str(tmp_path / "a.parquet"),
            checkpoint=str(ckpt),
            device="cpu",
        )
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "ignoring checkpoint" in said and "digest-of-the-code-before-the-edit ->" in said, said
    assert "resumed from checkpoint" not in said
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a.parquet"), ref)
    # the same digest resumes (and so gives the rows the stale state leads to)
    caplog.clear()
    killed_at_step_3(registry.step_code("train"))
    with caplog.at_level(logging.INFO, logger="sigprop.train"):
        steps.train_shard(
            js,
            str(init),
            str(data_path),
            str(tmp_path / "b.parquet"),
            checkpoint=str(ckpt),
            device="cpu",
        )
    assert "resumed from checkpoint at step 3" in " ".join(r.getMessage() for r in caplog.records)
    assert not pd.read_parquet(tmp_path / "b.parquet").equals(ref)
