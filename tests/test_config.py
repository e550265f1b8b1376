"""Bad configuration stops the run before any job, naming the file and the key."""

from __future__ import annotations

import pytest
from conftest import run_snakemake, tiny_study, write_config

from sigprop.config import ConfigError, build_study, expand_runs


def _fails(workdir, cfg):
    p = run_snakemake(workdir, cfg, "-n", check=False)
    assert p.returncode != 0
    assert not (workdir / "results").exists(), "a job ran despite the bad config"
    return p.stdout + p.stderr


def test_typo_in_study_file_names_file_and_key(workdir):
    study = tiny_study()
    study["scales"]["quick"]["blocks"][0]["grid"]["sigma_w"] = [1.0]  # typo of sigma_w2
    cfg = write_config(workdir, study)
    out = _fails(workdir, cfg)
    assert "studies/trainable_depth.yaml" in out
    assert "scales.quick.blocks[0].grid" in out and "'sigma_w'" in out


def test_wrong_type_in_study_file(workdir):
    study = tiny_study(fixed={"width": "wide"})
    out = _fails(workdir, write_config(workdir, study))
    assert "trainable_depth.yaml" in out and "scales.quick.blocks[0].fixed.width" in out


def test_out_of_range_keep_rate(workdir):
    study = tiny_study(grid={"keep_rate": [1.5]})
    out = _fails(workdir, write_config(workdir, study))
    assert "scales.quick.blocks[0].grid.keep_rate[0]" in out


def test_typo_and_wrong_type_in_top_level_config(workdir):
    out = _fails(workdir, write_config(workdir, shard_sise=4))
    assert "config.yaml" in out and "shard_sise" in out
    out = _fails(workdir, write_config(workdir, shard_size="big"))
    assert "config.yaml" in out and "key 'shard_size'" in out


def test_unknown_dataset_and_activation(workdir):
    out = _fails(workdir, write_config(workdir, tiny_study(fixed={"dataset": "mnits"})))
    assert "trainable_depth.yaml" in out and "unknown dataset 'mnits'" in out
    out = _fails(workdir, write_config(workdir, tiny_study(fixed={"activation": "tahn"})))
    assert "unknown activation 'tahn'" in out


def test_empty_grid_and_clashing_keys_in_process():
    study = tiny_study(grid={"depth": []})
    with pytest.raises(
        ConfigError, match=r"f.yaml: key 'scales.quick.blocks\[0\].grid.depth': empty"
    ):
        expand_runs(study, "quick", "f.yaml")
    study = tiny_study(grid={"width": [8]})  # width also in fixed
    with pytest.raises(ConfigError, match="both 'fixed' and 'grid'"):
        expand_runs(study, "quick", "f.yaml")
    with pytest.raises(ConfigError, match="does not match the file name"):
        build_study("other", "f.yaml", tiny_study(), "quick", 64)


def test_derived_fields_sigma_w2_on_chi1_line_and_lr_per_depth():
    from sigprop.theory import meanfield

    study = tiny_study(grid={"keep_rate": [1.0, 0.9], "depth": [2, 4]})
    del study["scales"]["quick"]["blocks"][0]["fixed"]["lr"]
    study["scales"]["quick"]["blocks"][0]["grid"].pop("sigma_w2")
    study["scales"]["quick"]["blocks"][0]["derived"] = {
        "sigma_w2": {"chi1": 1.0},
        "lr": {"per_depth": 0.2},
    }
    runs = expand_runs(study, "quick", "f.yaml")
    assert len(runs) == 4
    for r in runs:
        assert meanfield.chi1(r.sigma_w2, r.sigma_b2, r.keep_rate, r.activation) == pytest.approx(
            1.0, abs=1e-8
        )
        assert r.lr == pytest.approx(0.2 / r.depth, rel=1e-9)
    # rounded to 10 significant digits, so run ids do not hang on a root finder's last bits
    want = {
        float(f"{float(meanfield.edge_of_chaos_sigma_w2(0.05, k, 'tanh')):.10g}")
        for k in (1.0, 0.9)
    }
    assert {r.sigma_w2 for r in runs} == want
    # a derived field may not also be given
    study["scales"]["quick"]["blocks"][0]["grid"]["lr"] = [0.1]
    with pytest.raises(ConfigError, match=r"blocks\[0\].derived': \['lr'\] also set"):
        expand_runs(study, "quick", "f.yaml")


def test_derived_width_for_a_weight_count_and_steps_for_epochs():
    """004 Sec. 5: d_in K + (L-1) K^2 + K d_out = p; steps = E passes over the training split."""
    study = tiny_study(
        fixed={"dataset": "digits", "micro_batch": 32},
        grid={"depth": [1, 2, 10], "batch_size": [32, 256]},
    )
    blk = study["scales"]["quick"]["blocks"][0]
    for k in ("width", "steps", "eval_every", "batch_size", "depth"):
        blk["fixed"].pop(k, None)
    blk["derived"] = {
        "width": {"params": 4000},
        "steps": {"epochs": 3},
        "eval_every": {"epochs": 1},
    }
    runs = expand_runs(study, "quick", "f.yaml")
    for r in runs:  # digits: 64 inputs, 10 classes; 1347 training images, 42 micro-batches of 32
        k = r.width

        def p(k):
            return 64 * k + (r.depth - 1) * k * k + 10 * k  # noqa: B023 (used in this pass)

        assert abs(p(k) - 4000) <= min(abs(p(k + 1) - 4000), abs(p(k - 1) - 4000))
        assert (r.steps, r.eval_every) == (126, 42)
    assert sorted({(r.depth, r.width) for r in runs}) == [(1, 54), (2, 36), (10, 17)]
    blk["fixed"].pop("micro_batch")
    runs = expand_runs(study, "quick", "f.yaml")
    assert {(r.batch_size, r.steps) for r in runs} == {(32, 126), (256, 15)}
    blk["grid"]["batch_size"] = [2048]
    with pytest.raises(ConfigError, match="blocks\\[0\\]': derived steps: 2048 examples"):
        expand_runs(study, "quick", "f.yaml")


def test_derived_field_rule_errors_name_file_and_block(workdir):
    study = tiny_study()
    study["scales"]["quick"]["blocks"][0]["grid"].pop("sigma_w2")
    study["scales"]["quick"]["blocks"][0]["derived"] = {"sigma_w2": {"chi2": 1.0}}
    cfg = write_config(workdir, study)
    res = run_snakemake(workdir, cfg, "-n", check=False)
    assert res.returncode != 0
    assert "trainable_depth.yaml" in res.stderr + res.stdout
    assert "derived.sigma_w2" in res.stderr + res.stdout


def test_shipped_configs_expand():
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[1]
    for path in sorted((root / "config/studies").glob("*.yaml")):
        cfg = yaml.safe_load(path.read_text())
        for scale in ("quick", "paper"):
            st = build_study(path.stem, path, cfg, scale, 64)
            assert st.runs and st.shards


def test_activation_names_agree_across_config_nets_and_theory():
    from sigprop.config import KNOWN_ACTIVATIONS
    from sigprop.nets.activations import ACTIVATIONS
    from sigprop.theory import activations as theory_acts

    assert set(KNOWN_ACTIVATIONS) == set(ACTIVATIONS) == set(theory_acts.names())


def test_schema_run_fields_match_runspec():
    """Every RunSpec field is in the study schema (fixed and grid), and nothing else."""
    from pathlib import Path

    import yaml

    from sigprop.runs import RUN_FIELDS

    schema = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "workflow/schemas/study.schema.yaml").read_text()
    )
    names = set(RUN_FIELDS)
    assert set(schema["$defs"]["run_fields"]["properties"]) == names
    assert set(schema["$defs"]["grid_fields"]["properties"]) == names


def test_arch_names_agree_with_the_families():
    from sigprop.config import KNOWN_ARCHS
    from sigprop.nets.families import FAMILIES

    assert set(KNOWN_ARCHS) == set(FAMILIES)


LAUGHS = "\n".join(
    ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
)
"""A YAML 'billion laughs': 9 levels of 9 aliases, 9^9 values once expanded."""


def test_a_billion_laughs_config_is_refused_before_validation(workdir):
    """Through --configfile, and in a study file: a clear error naming the file within
    seconds (before: the schema's error message expanded the value, 3.6 GB at 120 s)."""
    import time

    cfg = write_config(workdir)
    cfg.write_text(cfg.read_text() + LAUGHS + "\n")
    t0 = time.time()
    out = _fails(workdir, cfg)
    assert "holds more than 200,000 values" in out and "config.yaml" in out
    study = workdir / "studies" / "trainable_depth.yaml"
    cfg = write_config(workdir)
    study.write_text(study.read_text() + LAUGHS + "\n")
    out = _fails(workdir, cfg)
    assert "holds more than 200,000 values" in out and "trainable_depth.yaml" in out
    assert time.time() - t0 < 120


def test_an_error_message_never_prints_a_large_value_whole():
    import jsonschema

    from sigprop.config import MESSAGE_CHARS, explain

    try:
        jsonschema.validate({"x": list(range(100_000))}, {"properties": {"x": {"type": "string"}}})
    except jsonschema.ValidationError as e:
        msg = explain(e, "c.yaml")
    assert msg.startswith("c.yaml: key 'x':") and len(msg) < MESSAGE_CHARS + 200


def test_scale_overrides_must_name_a_configured_study(workdir):
    """A typo in scale_overrides would run the study at the default scale, silently."""
    out = _fails(workdir, write_config(workdir, scale_overrides={"trainable_dept": "paper"}))
    assert "scale_overrides.trainable_dept" in out and "no study 'trainable_dept'" in out


def test_resources_plan_values_are_checked_naming_the_file_and_key(tmp_path):
    import json

    from sigprop.config import load_resources

    bad = {"mem_mb": "lots"}, {"mem_mb": 1e15}, {"runtime": 0}, {"threads": 4}
    for req in bad:
        p = tmp_path / "plan.json"
        p.write_text(json.dumps({"shards": {"s": {"sabcdefabcdef": req}}}))
        with pytest.raises(ConfigError, match=rf"{p}: key 'shards\.s\.sabcdefabcdef\.\w+'"):
            load_resources(p)
    p.write_text(json.dumps({"shards": {"s": {"sabcdefabcdef": {"mem_mb": 4000, "runtime": 30}}}}))
    assert load_resources(p) == {"s": {"sabcdefabcdef": {"mem_mb": 4000, "runtime": 30}}}


def test_execution_only_parameters_stay_out_of_the_cache_key():
    """jacobian_moments' chunk sizes set how many networks are batched, not what is measured:
    the measure job's params (its cache key) hold them at their defaults, and the rule passes
    the configured values apart, so changing them reruns no job."""
    import json

    from sigprop.config import load_yaml

    cfg = load_yaml("config/studies/jacobian_moments.yaml")
    a = build_study("jacobian_moments", "config/studies/jacobian_moments.yaml", cfg, "quick", 8)
    cfg["measure"] = {**cfg.get("measure", {}), "chunk": 7, "chunk_mb": 123}
    b = build_study("jacobian_moments", "config/studies/jacobian_moments.yaml", cfg, "quick", 8)
    shard = a.shards[0].shard_id
    assert a.job_params("measure", shard) == b.job_params("measure", shard)
    assert json.loads(b.execution_json("measure")) == {"measure": {"chunk": 7, "chunk_mb": 123}}
    assert a.execution_json("measure") != b.execution_json("measure")
    cfg["measure"]["kernel_probes"] = 3  # what is measured: in the key
    c = build_study("jacobian_moments", "config/studies/jacobian_moments.yaml", cfg, "quick", 8)
    assert c.job_params("measure", shard) != b.job_params("measure", shard)
    assert a.job_params("claims") == b.job_params("claims")  # nor any later job
