"""The workflow on a real SLURM through workflow/profiles/slurm (docs/cluster.md).

The module's fixture installs Debian's slurmctld, slurmd, munge and slurm-client (waiting for
a lock another apt or dpkg holds; skipping only where that is impossible: not root, no apt-get,
apt-get failing) and starts a one-node cluster on this machine (tests/cluster/slurm_up.sh: no
accounting database, MinJobAge 3600 so that finished jobs stay visible to squeue, 2 count-only
GPUs).  The test runs a small study through the shipped profile, with an overlay that changes
only what this cluster or the test needs (status via squeue, a 2 s first status check, kept
job logs), and checks that every job went through sbatch with the profile's requests and that
the tables equal a local run's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest
from cluster.helpers import (
    PROFILES,
    assert_same_tables,
    ensure_debian_packages,
    local_reference,
    profile_resources,
    run_profile,
    run_script,
    study,
    write_overlay,
)
from conftest import write_config

pytestmark = pytest.mark.slow  # part of the plain `python -m pytest` run (see pyproject)

PACKAGES = ["slurmctld", "slurmd", "munge", "slurm-client"]
BINARIES = ["slurmctld", "slurmd", "munged", "sbatch", "squeue", "scontrol", "srun"]
GPU_RULES = ("init_shard", "train_shard", "measure_shard", "prune_shard")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A running one-node SLURM: yields (environment for its clients, its folder)."""
    t0 = time.time()
    install_s = ensure_debian_packages(PACKAGES, BINARIES)
    folder = tmp_path_factory.mktemp("slurm")
    up = run_script("slurm_up.sh", str(folder))
    if up.returncode == 3:  # a real /etc/slurm/slurm.conf: this machine is someone's node
        pytest.skip(up.stderr.strip())
    try:
        assert up.returncode == 0, f"slurm_up.sh failed:\n{up.stdout}\n{up.stderr}"
        print(
            f"SLURM: apt install {install_s:.1f} s, daemons up {time.time() - t0 - install_s:.1f} s"
        )
        yield dict(os.environ, SLURM_CONF=str(folder / "slurm.conf")), folder
    finally:
        run_script("slurm_down.sh", str(folder))


def _jobs(env: dict) -> list[dict]:
    """Every job the controller knows (MinJobAge keeps finished ones), as key=value dicts."""
    out = subprocess.run(
        ["scontrol", "show", "job", "-o"], env=env, capture_output=True, text=True, check=True
    ).stdout
    jobs = []
    for line in out.splitlines():
        if line.strip() and "JobId=" in line:
            jobs.append(dict(tok.split("=", 1) for tok in line.split() if "=" in tok))
    return jobs


def _rule(job: dict) -> str:
    """The rule (or group) of a job, from the comment the plugin gives it."""
    m = re.match(r"rule_(.+?)(_wildcards_.*)?$", job["Comment"])
    return m.group(1) if m else job["Comment"]


def _minutes(limit: str) -> int:
    """SLURM's TimeLimit ([days-]hh:mm:ss) in minutes."""
    days, _, hms = limit.rpartition("-")
    h, m, s = (int(x) for x in hms.split(":"))
    return int(days or 0) * 1440 + h * 60 + m + (s > 0)


def test_profile_resources_grow_per_attempt():
    """Each retry asks for more memory and time (profile `retries:` x `attempt`)."""
    for rule in (None, *GPU_RULES):
        first, second = profile_resources("slurm", rule, 1), profile_resources("slurm", rule, 2)
        assert second["mem_mb"] > first["mem_mb"] and second["runtime"] > first["runtime"], rule
        if rule:
            assert first["gpu"] >= 1 and first["cpus_per_gpu"] >= 1, rule


def test_quick_study_through_slurm_profile_equals_local_run(slurm, tmp_path, tmp_path_factory):
    env, folder = slurm
    want = local_reference(tmp_path_factory)
    work = tmp_path / "slurm_run"
    # the shard jobs' memory and time come from a cost plan of this very config
    cfg = write_config(work, study())
    plan_file = work / "resources.json"
    from sigprop.cli import main as sigprop_main

    assert (
        sigprop_main(
            ["plan", "--configfile", str(cfg), "--no-calibrate", "--resources", str(plan_file)]
        )
        == 0
    )
    plan = json.loads(plan_file.read_text())["shards"]["trainable_depth"]
    cfg = write_config(work, study(), resources_plan=str(plan_file))
    overlay = write_overlay(
        tmp_path / "overlay",
        {
            "slurm-status-command": "squeue",  # no accounting database here
            "slurm-init-seconds-before-status-checks": 2,  # <= MinJobAge / 3
            "slurm-keep-successful-logs": True,
        },
    )
    out, seconds = run_profile(work, cfg, env, PROFILES / "slurm", overlay)
    print(f"SLURM run: {seconds:.1f} s")

    # every job went through sbatch: ids in Snakemake's log, submissions in slurmctld's
    run_id = re.search(r"SLURM run ID: (\S+)", out).group(1)
    submitted = set(re.findall(r"has been submitted with SLURM jobid (\d+)", out))
    arrays = set(
        re.findall(r"Submitted array job with Snakemake IDs \S+ and SLURM job ID (\d+)", out)
    )
    assert submitted and arrays, out[-3000:]  # at least init_shard's array
    submitted |= arrays
    ctld = (folder / "log" / "slurmctld.log").read_text()
    for jid in submitted:
        assert re.search(rf"_slurm_rpc_submit_batch_job: JobId={jid}\b", ctld), jid
    jobs = [j for j in _jobs(env) if j.get("JobName") == run_id]
    assert {j.get("ArrayJobId", j["JobId"]) for j in jobs} == submitted
    assert all(j["JobState"] == "COMPLETED" for j in jobs), [
        (j["JobId"], j["JobState"]) for j in jobs
    ]
    by_rule: dict[str, list[dict]] = {}
    for j in jobs:
        by_rule.setdefault(_rule(j), []).append(j)
    # one job per rule, one array per shard rule, and the profile's groups: a study's merge,
    # figure and claims in one job, a paper's claims, table and front page in another
    assert set(by_rule) == {
        "prepare_dataset",
        "theory",
        "init_shard",
        "train_shard",
        "study_outputs_claims_figure_merge_metrics",
        "paper_outputs_paper_claims_paper_front_paper_table",
    }, sorted(by_rule)

    # init_shard's shards (all ready when the data set is) went out as one job array;
    # train_shard's form an array only when they become ready at the same status check
    # (init's tasks may finish one check apart), else they go out one by one.  All shard
    # jobs carry the profile's GPU requests.
    n_shards = len(list(want.glob("trainable_depth/runs/*.parquet")))
    init = by_rule["init_shard"]
    assert len({t.get("ArrayJobId") for t in init}) == 1 and all("ArrayTaskId" in t for t in init)
    for rule in ("init_shard", "train_shard"):
        tasks = by_rule[rule]
        assert len(tasks) == n_shards == 2
        reqs = [
            profile_resources("slurm", rule, 1, {"trainable_depth": plan}, "trainable_depth", shard)
            for shard in plan
        ]
        req = reqs[0]
        default = profile_resources("slurm", rule)  # without the plan
        for t in tasks:
            assert t["TresPerJob"] == f"gres:gpu:{req['gpu']}", t
            assert t["CpusPerTres"] == f"gres:gpu:{req['cpus_per_gpu']}", t
            assert int(t["NumCPUs"]) == req["cpus_per_gpu"] * req["gpu"]
            mem = int(t["MinMemoryNode"].rstrip("M"))
            assert mem >= min(r["mem_mb"] for r in reqs)  # + the array payload
            assert mem < default["mem_mb"], "the plan's memory, not the default's"
            assert _minutes(t["TimeLimit"]) in {r["runtime"] for r in reqs}
    # CPU jobs: one CPU, no GPU, the default resources
    req = profile_resources("slurm", None)
    for t in by_rule["theory"] + by_rule["prepare_dataset"]:
        assert "TresPerJob" not in t and int(t["NumCPUs"]) == 1, t
        assert int(t["MinMemoryNode"].rstrip("M")) == req["mem_mb"]
        assert _minutes(t["TimeLimit"]) == req["runtime"]

    # the same tables as the local run
    compared = assert_same_tables(work / "results", want)
    assert "trainable_depth/metrics.parquet" in compared
