"""The workflow on a real Grid Engine through workflow/profiles/sge (docs/cluster.md).

The module's fixture installs Debian's gridengine-master, gridengine-exec and
gridengine-client (debconf answers preseeded: configure automatically, cell "default", this
host as master; waiting for a lock another apt or dpkg holds; skipping only where
installation is impossible: not root, no apt-get, apt-get failing) and configures a one-host
cell (tests/cluster/sge_up.sh: host aliases so that "localhost" and the host name are one
host, root allowed to run jobs, a `smp` parallel environment and a `gpu` complex consumed per
job).  The test runs a small study through the
shipped profile (submit qsub.py, status status.sh, cancel qdel), with an overlay that only
shortens the time between status checks, and checks that every job went through qsub and
finished cleanly by Grid Engine's accounting, and that the tables equal a local run's.
Without a scheduler, `qsub.py`'s resource mapping is checked on a job script.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
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

PACKAGES = ["gridengine-master", "gridengine-exec", "gridengine-client"]
BINARIES = ["sge_qmaster", "sge_execd", "qsub", "qstat", "qacct", "qconf", "qdel"]
GPU_RULES = ("init_shard", "train_shard", "measure_shard", "prune_shard")


def _preseed() -> str:
    """debconf answers for the packages: configure the cell, this host (`hostname -f`, the
    name Grid Engine's own gethostname gives) as its master."""
    p = subprocess.run(["hostname", "-f"], check=False, capture_output=True, text=True)
    master = p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else socket.gethostname()
    return "".join(
        f"{pkg} shared/{key}\n"
        for pkg in ("gridengine-common", *PACKAGES)
        for key in (
            "gridengineconfig boolean true",
            "gridenginecell string default",
            f"gridenginemaster string {master}",
        )
    )


@pytest.fixture(scope="module")
def sge(tmp_path_factory):
    """A running one-host Grid Engine: yields the environment for its clients."""
    t0 = time.time()
    install_s = ensure_debian_packages(PACKAGES, BINARIES, preseed=_preseed())
    folder = tmp_path_factory.mktemp("sge")
    up = run_script("sge_up.sh", str(folder))
    try:
        assert up.returncode == 0, f"sge_up.sh failed:\n{up.stdout}\n{up.stderr}"
        print(
            f"SGE: apt install {install_s:.1f} s, daemons up {time.time() - t0 - install_s:.1f} s"
        )
        yield dict(os.environ, SGE_ROOT="/var/lib/gridengine", SGE_CELL="default")
    finally:
        run_script("sge_down.sh")


def _qsub_line(tmp_path, props: dict, **env) -> list[str]:
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\n# properties = {json.dumps(props)}\necho hi\n")
    p = subprocess.run(
        [sys.executable, str(PROFILES / "sge" / "qsub.py"), str(script)],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, SIGPROP_SGE_DRYRUN="1", **env),
    )
    return p.stdout.split()


def test_qsub_maps_threads_memory_time_and_gpus(tmp_path):
    """qsub.py turns the profile's resources into -pe/-l (memory per slot, h_rt in s)."""
    req = profile_resources("sge", "train_shard", attempt=2)
    line = _qsub_line(
        tmp_path, {"type": "single", "rule": "train_shard", "threads": 4, "resources": req}
    )
    assert line[0] == "qsub" and line[-1].endswith("job.sh")
    assert line[line.index("-pe") + 1 : line.index("-pe") + 3] == ["smp", "4"]
    limits = dict(kv.split("=") for kv in line[line.index("-l") + 1].split(","))
    assert limits == {
        "mem_free": f"{-(-req['mem_mb'] // 4)}M",
        "h_rt": str(req["runtime"] * 60),
        "gpu": "1",
    }
    assert line[line.index("-N") + 1] == "smk.train_shard"
    # a one-thread CPU job: no parallel environment, no GPU; site settings from the environment
    cpu = _qsub_line(
        tmp_path,
        {
            "type": "group",
            "groupid": "study_outputs",
            "threads": 1,
            "resources": profile_resources("sge", None),
        },
        SIGPROP_SGE_MEM="h_vmem",
        SIGPROP_SGE_QUEUE="short.q",
        SIGPROP_SGE_EXTRA="-l scratch=1G",
    )
    assert "-pe" not in cpu and "gpu" not in " ".join(cpu)
    assert cpu[cpu.index("-l") + 1] == "h_vmem=1000M,h_rt=1200"
    assert cpu[cpu.index("-q") + 1] == "short.q" and cpu[-3:-1] == ["-l", "scratch=1G"]
    assert cpu[cpu.index("-N") + 1] == "smk.study_outputs"


def test_quick_study_through_sge_profile_equals_local_run(sge, tmp_path, tmp_path_factory):
    env = sge
    want = local_reference(tmp_path_factory)
    work = tmp_path / "sge_run"
    cfg = write_config(work, study())
    overlay = write_overlay(tmp_path / "overlay", {"seconds-between-status-checks": 2})
    out, seconds = run_profile(work, cfg, env, PROFILES / "sge", overlay)
    print(f"SGE run: {seconds:.1f} s")

    # every job went through qsub (status.sh reported it) and finished cleanly by qacct
    ids = re.findall(r"Submitted (?:group )?job \S+ with external jobid '(\d+)'", out)
    assert len(ids) == len(set(ids)) >= 6, out[-3000:]
    slots = {}
    for jid in ids:
        acct = subprocess.run(
            ["qacct", "-j", jid], env=env, check=False, capture_output=True, text=True
        ).stdout
        rec = dict(
            line.split(None, 1) for line in acct.splitlines() if len(line.split(None, 1)) == 2
        )
        assert rec.get("failed", "").strip() == "0" and rec.get("exit_status", "").strip() == "0", (
            acct
        )
        slots.setdefault(rec["jobname"].strip(), []).append(int(rec["slots"]))
    assert set(slots) == {
        "smk.prepare_dataset",
        "smk.theory",
        "smk.init_shard",
        "smk.train_shard",
        "smk.study_outputs",
        "smk.paper_outputs",
    }, slots
    n_shards = len(list(want.glob("trainable_depth/runs/*.parquet")))
    assert slots["smk.train_shard"] == slots["smk.init_shard"] == [4] * n_shards
    assert slots["smk.theory"] == [1]
    logs = {p.name.split(".o")[0] for p in (work / "results/logs/sge").glob("smk.*.o*")}
    assert logs == set(slots)

    compared = assert_same_tables(work / "results", want)
    assert "trainable_depth/metrics.parquet" in compared
