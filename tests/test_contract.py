"""The study contract: typed parameters, what each job receives, and every study package
against the contract (sigprop.contract, sigprop.params, sigprop.registry)."""

from __future__ import annotations

import dataclasses
import inspect
import json
from dataclasses import dataclass
from typing import Literal

import pytest
import yaml
from conftest import REPO

from sigprop import registry
from sigprop.contract import JOB_SECTIONS, SECTIONS, Figure, Params, StudySpec, WithheldSection
from sigprop.params import NoParams, ParamError, describe, merge, param, parse, to_dict


@dataclass(frozen=True)
class Inner:
    rate: float = param(0.5, gt=0, le=1, doc="a fraction")


@dataclass(frozen=True)
class Section:
    z_max: float = param(3.0, gt=0)
    n_boot: int = param(200, ge=1)
    probes: tuple[float, ...] = param((0.5, 1.0), gt=0, min_len=1)
    kind: Literal["q", "c"] = param("q")
    name: str = param("tanh", choices=("tanh", "relu"))
    cap: float | None = param(None, gt=0)
    inner: Inner = param(Inner)
    items: tuple[Inner, ...] = param((Inner(0.1),))
    table: dict[str, Inner] = param({})
    flag: bool = param(False)


def test_defaults_parse_and_round_trip():
    s = parse(Section, None, "analysis")
    assert s == Section() and s.inner.rate == 0.5 and s.items == (Inner(0.1),)
    d = to_dict(s)
    assert parse(Section, json.loads(json.dumps(d)), "analysis") == s
    # one canonical form: an int given for a float field equals the float default
    assert to_dict(parse(Section, {"z_max": 3}, "a")) == to_dict(Section())


@pytest.mark.parametrize(
    "data,key,words",
    [
        ({"zmax": 2.0}, "analysis.zmax", ["unknown key", "did you mean 'z_max'", "2.0"]),
        ({"z_max": "three"}, "analysis.z_max", ["expected a number", "'three'"]),
        ({"z_max": -1}, "analysis.z_max", ["out of range", "> 0"]),
        ({"z_max": float("nan")}, "analysis.z_max", ["not a finite number"]),
        ({"z_max": float("inf")}, "analysis.z_max", ["not a finite number"]),
        ({"n_boot": 2.5}, "analysis.n_boot", ["expected an integer", "2.5"]),
        ({"n_boot": True}, "analysis.n_boot", ["expected an integer"]),
        ({"probes": 1.0}, "analysis.probes", ["expected a list"]),
        ({"probes": []}, "analysis.probes", ["at least 1"]),
        ({"probes": [1.0, float("nan")]}, "analysis.probes[1]", ["not a finite number"]),
        ({"probes": [1.0, -2.0]}, "analysis.probes[1]", ["out of range"]),
        ({"kind": "x"}, "analysis.kind", ["not one of", "'q'"]),
        ({"name": "elu"}, "analysis.name", ["not one of"]),
        ({"cap": 0}, "analysis.cap", ["out of range"]),
        ({"inner": {"rate": 2.0}}, "analysis.inner.rate", ["out of range", "<= 1"]),
        ({"inner": {"rat": 0.2}}, "analysis.inner.rat", ["unknown key", "did you mean 'rate'"]),
        ({"items": [{"rate": 0.2}, {"rate": 0}]}, "analysis.items[1].rate", ["out of range"]),
        ({"table": {"a": {"rate": "x"}}}, "analysis.table.a.rate", ["expected a number"]),
        ({"flag": "yes"}, "analysis.flag", ["expected true or false"]),
    ],
)
def test_bad_values_name_the_key_path(data, key, words):
    with pytest.raises(ParamError) as e:
        parse(Section, data, "analysis")
    msg = str(e.value)
    assert msg.startswith(f"key '{key}'"), msg
    for w in words:
        assert w in msg, (w, msg)


def test_merge_and_describe():
    assert merge({"a": {"x": 1, "y": 2}, "b": [1]}, {"a": {"y": 3}, "b": [2]}) == {
        "a": {"x": 1, "y": 3},
        "b": [2],
    }
    rows = {r[0]: r for r in describe(Section)}
    assert rows["inner.rate"][1:] == ("float", "0.5", "a fraction")
    assert rows["probes"][1:3] == ("list of float", "[0.5, 1.0]")
    assert rows["items[].rate"][1] == "float" and rows["table.<name>.rate"][1] == "float"
    assert rows["cap"][1:3] == ("float or null", "null")


SPEC = StudySpec(
    task="measure",
    source="test",
    figures={"f": Figure("fig", "caption")},
    measure=Section,
    claims=Inner,
)


def test_each_job_gets_only_its_sections():
    p = Params(
        study="s", measure=Section(), theory=NoParams(), analysis=NoParams(), claims=Inner(0.2)
    )
    for job, sections in JOB_SECTIONS.items():
        q = Params.from_json(SPEC, p.for_job(job).to_json())
        assert json.loads(q.to_json()).keys() == {"study", "job", *sections}
        for s in SECTIONS:
            if s in sections:
                assert getattr(q, s) == getattr(p, s)
            else:
                with pytest.raises(
                    WithheldSection, match=f"the {job} job does not receive the '{s}' parameters"
                ):
                    getattr(q, s).anything  # noqa: B018 (the access raises)
    # the claims section reaches only the claims job: a tolerance edit reruns nothing else
    assert [j for j, s in JOB_SECTIONS.items() if "claims" in s and j != "all"] == ["claims"]


def test_a_spec_needs_defaults_everywhere():
    @dataclass(frozen=True)
    class NoDefault:
        x: float

    with pytest.raises(TypeError, match="'analysis.x'.*no default"):
        StudySpec(task="train", source="t", figures={}, analysis=NoDefault)
    with pytest.raises(ValueError, match="task"):
        StudySpec(task="fit", source="t", figures={})


def test_resolve_merges_the_scale_section_and_names_where_a_key_is_wrong():
    cfg = yaml.safe_load((REPO / "config/studies/meanfield_maps.yaml").read_text())
    p = registry.resolve("meanfield_maps", cfg, "quick")
    assert p.claims.z_max == cfg["claims"]["z_max"]
    cfg["scales"]["paper"]["claims"] = {"z_max": 2.0}
    assert registry.resolve("meanfield_maps", cfg, "paper").claims.z_max == 2.0
    assert registry.resolve("meanfield_maps", cfg, "quick").claims.z_max == 3.0
    cfg["scales"]["paper"]["claims"] = {"zmax": 2.0}
    with pytest.raises(ParamError, match=r"key 'scales.paper.claims.zmax': unknown key"):
        registry.resolve("meanfield_maps", cfg, "paper")


KINDS = registry.kinds()


def test_studies_are_found_without_a_list():
    from sigprop.config.grid import kind_of

    assert "meanfield_maps" in KINDS
    shipped = {p.stem for p in (REPO / "config/studies").glob("*.yaml")}
    kinds_used = {
        kind_of(yaml.safe_load((REPO / f"config/studies/{n}.yaml").read_text())) for n in shipped
    }
    assert kinds_used <= set(KINDS)
    assert all(
        "kind" not in yaml.safe_load((REPO / f"config/studies/{n}.yaml").read_text())
        for n in shipped
    ), "a study file is named for its package: no kind key"


@pytest.mark.parametrize("kind", KINDS)
def test_study_package_meets_the_contract(kind):
    s = registry.spec(kind)
    assert s.figures, f"{kind} declares no figure"
    for name, fig in s.figures.items():
        fn = registry.figure_function(kind, name)
        assert list(inspect.signature(fn).parameters)[:3] == ["runs", "theory", "p"], name
        assert fig.caption.strip()
    fn = registry.claims_function(kind)
    assert list(inspect.signature(fn).parameters)[:3] == ["runs", "theory", "p"]
    assert list(inspect.signature(registry.theory_function(kind)).parameters) == [
        "study",
        "p",
        "settings",
    ]
    if s.task == "measure":
        params = list(inspect.signature(registry.measure_function(kind)).parameters)
        assert params == ["shard", "params", "buffers", "p", "device", "data_path", "masks_path"]
    if s.tables:
        assert callable(registry.table_function(kind))
    for section in SECTIONS:
        assert dataclasses.is_dataclass(s.section_type(section))
    doc = (REPO / "sigprop" / "studies" / kind / "__init__.py").read_text()
    assert "arXiv:" in doc or "doi:" in doc, f"{kind}: the declaration's docstring cites no paper"


def test_a_measure_job_gets_its_labels_only_when_the_study_reads_them():
    from sigprop.config import build_study

    cfg = yaml.safe_load((REPO / "config/studies/dropout_ensemble.yaml").read_text())
    st = build_study("dropout_ensemble", "f.yaml", cfg, "quick", 64)
    shard = st.shards[0]
    p = Params.from_json(
        registry.spec("dropout_ensemble"), st.job_params("measure", shard.shard_id)
    )
    assert p.labels == tuple(st.labels[r.run_id] for r in shard.runs)
    maps = yaml.safe_load((REPO / "config/studies/meanfield_maps.yaml").read_text())
    st = build_study("meanfield_maps", "f.yaml", maps, "quick", 64)
    assert "labels" not in json.loads(st.job_params("measure", st.shards[0].shard_id))


def test_a_study_can_give_its_theory_the_weight_distribution():
    """Theory settings carry activation, sigma_w2, sigma_b2 and keep rate; a study whose theory
    depends on more (``StudySpec.theory_fields``, e.g. the weight distribution) gets those run
    fields too, and a name that is no run field is refused."""
    from sigprop.runs import RunSpec, settings

    runs = [RunSpec(init=i, sigma_w2=s) for i in ("gaussian", "orthogonal") for s in (1.0, 2.0)]
    assert len(settings(runs)) == 2 and "init" not in settings(runs)[0]
    with_init = settings(runs, ("init",))
    assert len(with_init) == 4 and {s["init"] for s in with_init} == {"gaussian", "orthogonal"}
    with pytest.raises(ValueError, match="theory_fields \\['weights'\\]: not run fields"):
        settings(runs, ("weights",))
    assert all(registry.spec(k).theory_fields == () for k in registry.kinds())
