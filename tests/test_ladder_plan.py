"""The plan sizes ladder rungs: every committed rung's job time (its provenance's ``job_s``, the
summed benchmark times of its jobs) lies within 2x of what ``sigprop plan`` projects for it, with
the calibration of the machine the rungs ran on (docs/evidence/ladder/cpu_rates.json: the
family rates and each step class's timed step, evaluation and measurement)."""

from __future__ import annotations

import json

import pytest
from conftest import REPO

from sigprop.tools import plan as P
from sigprop.tools import step_times

LADDERS = REPO / "docs" / "evidence" / "ladder"
RUNGS = sorted(LADDERS.glob("*/*/provenance.json"))
FACTOR = 2.0


@pytest.fixture
def committed_calibration(tmp_path, monkeypatch):
    """The committed calibration, read as this machine's; nothing is timed anew."""
    data = json.loads((LADDERS / "cpu_rates.json").read_text())
    rates = tmp_path / "cpu_rates.json"
    rates.write_text(json.dumps(data))
    monkeypatch.setattr(P, "machine", lambda: data["machine"])

    def refuse(*a, **k):
        raise AssertionError("a step class or family is missing from the committed calibration")

    for mod, name in ((P, "calibrate"), (step_times, "time_class"), (step_times, "time_measure")):
        monkeypatch.setattr(mod, name, refuse)
    monkeypatch.chdir(REPO)
    return rates


def test_every_training_study_with_a_ladder_has_committed_rungs():
    assert {p.parent.parent.name for p in RUNGS} == {
        "dropout_training",
        "pruning_eoc",
        "pruning_resnet",
        "trainable_depth",
        "training_speed",
        "width_batch",
    }


@pytest.mark.parametrize("prov", RUNGS, ids=lambda p: f"{p.parent.parent.name}-{p.parent.name}")
def test_the_plan_projects_each_committed_rung_within_2x(prov, committed_calibration):
    d = json.loads(prov.read_text())
    study, scale = d["study"], d["scale"]
    p = P.plan(
        "config/config.yaml",
        ["smoke=false", f"studies=[{study}]", "scale_overrides={" + f"{study}: {scale}" + "}"],
        P.DEFAULT_EFFICIENCY,
        True,
        rates_file=committed_calibration,
    )
    planned = sum(b["cpu_h_total"] for b in p["blocks"]) * 3600
    assert p["step_times"], "the rung's shards were projected from a FLOP rate, not timed"
    ratio = d["job_s"] / planned
    assert 1 / FACTOR <= ratio <= FACTOR, (
        f"{study} {scale}: {d['job_s']:.0f} s of jobs against {planned:.0f} s planned "
        f"({ratio:.2f}x)"
    )
