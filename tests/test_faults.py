"""Faults in real workflow runs: failed jobs retried while the rest of the DAG goes on, the whole
run killed and resumed, corrupt data files caught before anything trains on them.

Faults are real or injected from outside the package:

- a first attempt that fails: a ``sitecustomize`` module on ``PYTHONPATH`` (written by the
  test, so no hook in the package) wraps ``sigprop.steps.jobs.run_job`` (every rule's ``run:`` block
  calls it) so that the first ``train_shard`` job of one chosen shard raises; it also counts
  every ``train_shard`` start per shard;
- a job that always fails: the shard's checkpoint path is a directory, so saving the first
  checkpoint fails with ``IsADirectoryError`` (as an unwritable or full disk would);
- kills: SIGKILL to Snakemake's whole process group;
- corrupt files: truncated or altered bytes in ``results/data/*.npz`` and ``results/raw/``.

docs/faults.md describes the behaviour these tests check.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import REPO, run_snakemake, snakemake_cmd, tiny_study, write_config

from sigprop import registry, tables
from sigprop.config import build_study
from sigprop.data.prepare import load as load_dataset
from sigprop.tools import bench
from sigprop.train import engine

pytestmark = pytest.mark.slow

STUDY = "trainable_depth"

SITECUSTOMIZE = """
import os
_shards = [s for s in os.environ.get("FAULT_SHARDS", "").split(",") if s]
if _shards:
    # jobs run in threads of the Snakemake process (rules' run: blocks): wrap the function
    # every block calls, before the Snakefile imports it (no hook in the package)
    import sigprop.steps.jobs as _jobs
    _run_job = _jobs.run_job

    def run_job(log, fn, *args, **kwargs):
        _name = fn.rpartition(":")[2] if isinstance(fn, str) else getattr(fn, "__name__", "")
        if _name == "train_shard":
            _s = next((s for s in _shards if s in str(args[0])), None)
            if _s is not None:
                with open(os.environ["FAULT_ATTEMPTS"], "a") as _f:
                    _f.write(_s + "\\n")
                _n = sum(1 for _l in open(os.environ["FAULT_ATTEMPTS"]) if _l.strip() == _s)
                if _s == os.environ.get("FAULT_FAIL_FIRST") and _n == 1:
                    def fn(*a, **k):
                        raise RuntimeError(f"injected fault: first attempt of shard {_s} fails")
        return _run_job(log, fn, *args, **kwargs)
    _jobs.run_job = run_job
"""


def _shards(workdir, study, shard_size):
    return build_study(
        STUDY, workdir / "studies" / f"{STUDY}.yaml", study, "quick", shard_size
    ).shards


def _res(workdir, *parts):
    return workdir.joinpath("results", STUDY, *parts)


def test_failed_job_is_retried_and_keep_going_finishes_the_independent_jobs(workdir, tmp_path):
    """Three shards: A fails on its first attempt only, B on every attempt, C never.  With
    ``--retries 1 --keep-going``: A is retried and succeeds, C and the theory job finish, B is
    tried twice and reported, and nothing that needs B (the merged table) is made.  With the fault
    removed, a rerun trains only B and completes the study."""
    study = tiny_study(
        fixed={"steps": 200, "eval_every": 100},
        grid={"depth": [2], "keep_rate": [1.0], "sigma_w2": [1.0, 1.5, 2.0]},
    )
    cfg = write_config(workdir, study, shard_size=1, checkpoint_every=50)
    a, b, c = (s.shard_id for s in _shards(workdir, study, 1))
    blocker = _res(workdir, "checkpoints", f"{b}.pt")
    blocker.mkdir(parents=True)  # B cannot write its checkpoint: a permanent failure
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(SITECUSTOMIZE)
    attempts = tmp_path / "attempts.txt"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(inject), os.environ.get("PYTHONPATH")])),
        FAULT_SHARDS=f"{a},{b},{c}",
        FAULT_FAIL_FIRST=a,
        FAULT_ATTEMPTS=str(attempts),
    )
    targets = [f"results/{STUDY}/metrics.parquet", f"results/{STUDY}/theory.parquet"]
    p = subprocess.run(
        snakemake_cmd(workdir, cfg, "--retries", "1", "--keep-going", *targets),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-3000:]
    tries = attempts.read_text().split()
    assert (tries.count(a), tries.count(b), tries.count(c)) == (2, 2, 1), tries
    assert "injected fault: first attempt of shard " + a in out
    assert out.count("Trying to restart job") >= 2, out[-3000:]  # A and B were each retried once
    # A (retried) and C finished, and so did the independent theory job
    assert _res(workdir, "runs", f"{a}.parquet").is_file()
    assert _res(workdir, "runs", f"{c}.parquet").is_file()
    assert _res(workdir, "theory.parquet").is_file()
    # B failed and is reported; what needs it was not made
    assert not _res(workdir, "runs", f"{b}.parquet").exists()
    assert not _res(workdir, "metrics.parquet").exists()
    assert re.search(rf"Error in rule train_shard:.*?{b}", out, re.DOTALL), out[-3000:]
    assert "IsADirectoryError" in out and f"checkpoints/{b}.pt" in out

    before = {s: _res(workdir, "runs", f"{s}.parquet").stat().st_mtime_ns for s in (a, c)}
    blocker.rmdir()  # the fault is fixed
    again = run_snakemake(workdir, cfg, *targets)
    assert bench.job_counts(again.stdout + again.stderr)["train_shard"] == 1  # only B
    assert {s: _res(workdir, "runs", f"{s}.parquet").stat().st_mtime_ns for s in (a, c)} == before
    merged = pd.read_parquet(_res(workdir, "metrics.parquet"))
    assert set(merged.shard_id) == {a, b, c} and merged.run_id.nunique() == 3
    assert not merged.duplicated(["run_id", "step", "metric"]).any()


def _recorded_done(workdir, shard_id) -> bool:
    """The shard's table exists and Snakemake has recorded its job as finished: no marker in
    ``.snakemake/incomplete`` (named by the urlsafe base64 of the output path).  A table
    written by a job whose end Snakemake had not yet seen when killed is still marked
    incomplete and is rightly remade by ``--rerun-incomplete``."""
    rel = f"results/{STUDY}/runs/{shard_id}.parquet"
    marker = workdir / ".snakemake" / "incomplete" / base64.urlsafe_b64encode(rel.encode()).decode()
    return (workdir / rel).exists() and not marker.exists()


def _state(workdir, shard_ids):
    """(finished and recorded, in flight with a checkpoint, not started) shard ids."""
    done = {s for s in shard_ids if _recorded_done(workdir, s)}
    written = {s for s in shard_ids if _res(workdir, "runs", f"{s}.parquet").exists()}
    ckpt = {s for s in shard_ids if _res(workdir, "checkpoints", f"{s}.pt").exists()} - written
    logs = workdir / "results" / "logs" / STUDY / "train"
    started = {s for s in shard_ids if (logs / f"{s}.log").exists()}
    return done, ckpt, set(shard_ids) - started - written


def test_sigkill_of_the_whole_run_mid_study_then_rerun_equals_an_uninterrupted_run(
    workdir, tmp_path
):
    """Five two-model shards on two job slots.  The run is frozen (SIGSTOP) once at least one
    shard has finished, one is in flight with a checkpoint and one has not started, then
    SIGKILLed (Snakemake's whole process group).  A rerun with the default profile
    (``--rerun-incomplete``, after ``--unlock``) trains only the unfinished shards, the in-flight
    ones resuming from their checkpoints, and gives the same merged metrics and claims as an
    uninterrupted run (trained here, in-process, by the same engine): no row lost, none
    duplicated."""
    steps = 3000
    study = tiny_study(
        fixed={"steps": steps, "eval_every": 500},
        grid={"depth": [2], "keep_rate": [1.0, 0.9], "sigma_w2": [1.0, 1.25, 1.5, 1.75, 2.0]},
    )
    settings = {"shard_size": 2, "checkpoint_every": 200}
    cfg = write_config(workdir, study, **settings)
    st = build_study(STUDY, workdir / "studies" / f"{STUDY}.yaml", study, "quick", 2)
    ids = [s.shard_id for s in st.shards]
    assert len(ids) == 5
    proc = subprocess.Popen(
        snakemake_cmd(workdir, cfg),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    t0 = time.time()
    try:
        while True:
            assert proc.poll() is None, "the workflow ended before the kill; raise steps"
            assert time.time() - t0 < 300, "never saw finished, in-flight and unstarted shards"
            done, flying, waiting = _state(workdir, ids)
            if done and flying and waiting:
                os.killpg(proc.pid, signal.SIGSTOP)  # freeze, then look again
                done, flying, waiting = _state(workdir, ids)
                if done and flying and waiting:
                    break
                os.killpg(proc.pid, signal.SIGCONT)
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole run: Snakemake and its jobs
        proc.wait()
    finished = {s: _res(workdir, "runs", f"{s}.parquet").stat().st_mtime_ns for s in done}

    profile = (REPO / "workflow/profiles/default/config.yaml").read_text()
    assert re.search(r"^rerun-incomplete:\s*true", profile, re.MULTILINE)
    run_snakemake(workdir, cfg, "--unlock")
    again = run_snakemake(
        workdir, cfg, *(f"results/{STUDY}/{t}.parquet" for t in ("metrics", "claims"))
    )
    out = again.stdout + again.stderr
    assert "workflow specific profile" in out and "profiles/default" in out  # its settings apply
    assert bench.job_counts(out)["train_shard"] == len(ids) - len(done)
    for s in done:  # finished shards are kept, not retrained
        assert _res(workdir, "runs", f"{s}.parquet").stat().st_mtime_ns == finished[s]
    logs = workdir / "results" / "logs" / STUDY / "train"
    for s in flying:
        m = re.search(r"resumed from checkpoint at step (\d+)", (logs / f"{s}.log").read_text())
        assert m and 0 < int(m.group(1)) < steps, s
    for s in waiting:
        assert "resumed" not in (logs / f"{s}.log").read_text()
    assert not list(_res(workdir, "checkpoints").glob("*.pt")), "checkpoints left after success"

    # the same shards trained without interruption, in this process (one thread, like the jobs),
    # and merged and judged by the same functions as the workflow's merge_metrics and claims jobs
    ref_paths = []
    data = engine.to_data(
        load_dataset(workdir / "results/data/digits.npz"), torch.device("cpu"), torch.float32
    )
    for shard in st.shards:
        params, buffers = engine.initial_state(
            shard, data.in_shape, data.n_classes, torch.device("cpu"), torch.float32
        )
        df = engine.ShardTrainer(shard, data, params, torch.device("cpu"), buffers=buffers).run()
        ref_paths.append(
            tables.write_atomic(
                df, tmp_path / "ref" / f"{shard.shard_id}.parquet", tables.shard_stamp(shard)
            )
        )
    ref = tables.merge_runs(ref_paths, json.loads(st.manifest()))
    got = tables.read(_res(workdir, "metrics.parquet"))
    key = ["run_id", "step", "metric"]
    assert not got.duplicated(key).any()
    assert got.run_id.nunique() == 10 and set(got.shard_id) == set(ids) and len(got) == len(ref)
    pd.testing.assert_frame_equal(got.drop(columns="value"), ref.drop(columns="value"))
    np.testing.assert_allclose(got.value, ref.value, rtol=1e-6, atol=1e-9, equal_nan=True)
    theory = tables.read(_res(workdir, "theory.parquet"))
    want = registry.claims_function(st.kind)(ref, theory, st.params.for_job("claims"))
    claims = tables.read(_res(workdir, "claims.parquet"))
    pd.testing.assert_frame_equal(claims[["claim_id", "verdict"]], want[["claim_id", "verdict"]])
    np.testing.assert_allclose(
        claims.measured.astype(float), want.measured.astype(float), rtol=1e-6, equal_nan=True
    )


def test_corrupt_prepared_dataset_is_rejected_never_trained_on_then_rebuilt(workdir):
    """A truncated ``results/data/digits.npz`` stops the first job that reads it, naming the file;
    no shard trains.  ``--forcerun prepare_dataset`` rebuilds it and the study completes."""
    study = tiny_study(grid={"depth": [2], "keep_rate": [1.0], "sigma_w2": [1.0, 2.0]})
    cfg = write_config(workdir, study)
    data = workdir / "results" / "data" / "digits.npz"
    run_snakemake(workdir, cfg, "results/data/digits.npz")
    good = data.read_bytes()
    data.write_bytes(good[: len(good) // 3])
    target = f"results/{STUDY}/metrics.parquet"
    p = run_snakemake(workdir, cfg, target, check=False)
    assert p.returncode != 0
    assert "results/data/digits.npz: not a readable .npz file" in p.stdout + p.stderr
    assert not _res(workdir, "runs").exists() and not _res(workdir, "checkpoints").exists()
    assert not (workdir / "results" / "logs" / STUDY / "train").exists()  # no training started

    fixed = run_snakemake(workdir, cfg, target, "--forcerun", "prepare_dataset")  # (nargs="*")
    assert bench.job_counts(fixed.stdout + fixed.stderr)["prepare_dataset"] == 1
    assert data.read_bytes() != good[: len(good) // 3]
    assert pd.read_parquet(_res(workdir, "metrics.parquet")).run_id.nunique() == 2


@pytest.mark.parametrize("damage", ["truncated", "one byte flipped"])
def test_damaged_prepared_dataset_fails_to_load_naming_it(tmp_path, damage):
    """Truncation breaks the archive; a flipped byte inside an array fails its zip CRC-32."""
    from sigprop.data.prepare import load, prepare

    path = prepare("digits", tmp_path / "digits.npz")
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[:-100]
    else:
        data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=re.escape(str(path))):
        load(path)


def test_corrupt_raw_file_in_results_is_rejected_by_prepare_then_refetched(workdir, tmp_path):
    """A raw file that was fetched (checksum verified) and later damaged in ``results/raw`` is
    rejected by the prepare job before any parsing, naming the file and the checksum; forcing
    ``fetch_raw`` fetches a verified copy again.  (Small stand-ins for the Gisette files,
    pinned through ``data.sha256_overrides``.)"""
    from sigprop.data import catalog

    mirror = tmp_path / "mirror"
    mirror.mkdir()
    pins = {}
    for i, f in enumerate(catalog.get("gisette").files):
        (mirror / f.filename).write_bytes(f"stand-in {i} ".encode() * 500)
        pins[f.filename] = hashlib.sha256((mirror / f.filename).read_bytes()).hexdigest()
    study = tiny_study(fixed={"dataset": "gisette"})
    cfg = write_config(workdir, study, data={"local_dir": str(mirror), "sha256_overrides": pins})
    raw = workdir / "results" / "raw" / "gisette"
    run_snakemake(workdir, cfg, *(f"results/raw/gisette/{name}" for name in pins))
    victim = raw / "gisette_train.data"
    victim.write_bytes(victim.read_bytes()[:-7])

    p = run_snakemake(workdir, cfg, "results/data/gisette.npz", check=False)
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert (
        "ChecksumError" in out and "gisette_train.data" in out and pins["gisette_train.data"] in out
    )
    assert not (workdir / "results" / "data" / "gisette.npz").exists()

    again = run_snakemake(
        workdir, cfg, "results/raw/gisette/gisette_train.data", "--forcerun", "fetch_raw"
    )
    assert bench.job_counts(again.stdout + again.stderr) == {"fetch_raw": 1, "total": 1}
    assert hashlib.sha256(victim.read_bytes()).hexdigest() == pins["gisette_train.data"]


def test_an_uncaught_error_in_a_job_script_is_written_to_the_rules_log(tmp_path):
    """sigprop.steps.logs.script_log: the rule's log says why the job failed, with the traceback."""
    import subprocess
    import sys

    log = tmp_path / "job.log"
    code = (
        "import types; from sigprop.steps.logs import script_log\n"
        f"script_log(types.SimpleNamespace(log=[{str(log)!r}]))\n"
        "raise ValueError('bad shard table x.parquet')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 1
    text = log.read_text()
    assert "job failed: ValueError: bad shard table x.parquet" in text and "Traceback" in text
    assert "bad shard table x.parquet" in p.stderr


# -- the results store checks what it reads (docs/faults.md "Tables filed under the wrong name")


def _maps_study():
    import yaml

    study = yaml.safe_load((REPO / "config/studies/meanfield_maps.yaml").read_text())
    for block in study["scales"]["quick"]["blocks"]:
        block["fixed"]["width"] = 32
        block["grid"]["seed"] = [0, 1, 2]
    return study


def test_shard_and_merged_tables_filed_under_the_wrong_name_stop_their_readers(workdir):
    """A measurement table copied over another shard's stops the merge, naming both shards and
    the command that rebuilds it; a merged table of another grid stops the figure and claims
    jobs (the runs ask for the claims table, which reads both).  After the suggested `snakemake --force <file>` the run completes with the original
    claims."""
    cfg = write_config(workdir, _maps_study(), data={"options": {"gaussian": {"d": 16}}})
    claims = "results/meanfield_maps/claims.parquet"  # what reads the tables (no figures)
    run_snakemake(workdir, cfg, claims)
    res = workdir / "results/meanfield_maps"
    claims0 = pd.read_parquet(res / "claims.parquet")
    shards = sorted((res / "measurements").glob("*.parquet"))
    a, b = shards[0], shards[1]
    shutil.copy(a, b)  # a's rows filed under b's name
    p = run_snakemake(workdir, cfg, claims, check=False)
    out = (
        p.stdout
        + p.stderr
        + (workdir / "results/logs/meanfield_maps/merge_metrics.log").read_text()
    )
    assert p.returncode != 0
    assert f"holds study meanfield_maps, shard {a.stem}" in out and f"expects shard {b.stem}" in out
    hint = f"snakemake --force results/meanfield_maps/measurements/{b.name}"
    assert hint in out.replace(str(workdir) + "/", "")
    run_snakemake(workdir, cfg, "--force", f"results/meanfield_maps/measurements/{b.name}")
    run_snakemake(workdir, cfg, claims)
    pd.testing.assert_frame_equal(pd.read_parquet(res / "claims.parquet"), claims0)

    # a merged table that lost some runs (another grid's): figures and claims refuse it
    m = pd.read_parquet(res / "metrics.parquet")
    m[m.run_id != m.run_id.iloc[0]].to_parquet(res / "metrics.parquet")
    p = run_snakemake(workdir, cfg, claims, check=False)
    logs = (workdir / "results/logs/meanfield_maps/claims.log").read_text()
    assert p.returncode != 0
    # 4 panels x 3 keep rates x 3 seeds = 36 runs; the damaged table holds 35
    assert "35 runs" in logs and "expects the 36 runs of study meanfield_maps" in logs
    assert "snakemake --force results/meanfield_maps/metrics.parquet" in logs
    run_snakemake(workdir, cfg, "--force", "results/meanfield_maps/metrics.parquet")
    run_snakemake(workdir, cfg, claims)
    pd.testing.assert_frame_equal(pd.read_parquet(res / "claims.parquet"), claims0)


def test_bad_data_options_from_the_command_line_stop_before_any_job_and_delete_nothing(workdir):
    cfg = write_config(workdir)
    run_snakemake(workdir, cfg, "results/data/digits.npz")
    data = workdir / "results/data/digits.npz"
    before = data.stat().st_mtime_ns
    # --config gives nested values as strings: '-5' is coerced, then refused as out of range
    p = run_snakemake(
        workdir, cfg, "--config", "data={options: {digits: {test_fraction: -5}}}", check=False
    )
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert "--config: key 'data.options.digits.test_fraction': '-5' is out of range" in out, out[
        -2000:
    ]
    p = run_snakemake(workdir, cfg, "--config", "memory_budget_mb=nan", check=False)
    assert "--config: key 'memory_budget_mb': nan is not a finite number" in p.stdout + p.stderr
    assert data.stat().st_mtime_ns == before  # nothing computed was deleted
    assert not (workdir / "results/trainable_depth").exists()


VANISH = """
import atexit, os, sys
if sys.argv and sys.argv[0].endswith(".prepare_dataset.py"):
    # the data set the job just wrote disappears before Snakemake looks at it
    atexit.register(lambda: os.path.exists("results/data/digits.npz")
                    and os.remove("results/data/digits.npz"))
"""


def test_a_file_that_vanishes_mid_run_is_explained_not_blamed_on_latency(workdir, tmp_path):
    """Snakemake calls a missing output "filesystem latency"; the workflow adds a note that names
    the file and says a rerun rebuilds it (and the rerun does)."""
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(VANISH)
    cfg = write_config(workdir)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(inject), os.environ.get("PYTHONPATH")])),
    )
    p = subprocess.run(
        snakemake_cmd(workdir, cfg, "results/data/digits.npz", "--latency-wait", "1"),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    out = p.stdout + p.stderr
    assert p.returncode != 0 and "latency" in out
    assert (
        "sigprop: Snakemake could not find file(s) it had planned with: "
        "results/data/digits.npz" in out
    ), out[-3000:]
    assert "run `snakemake` again" in out
    run_snakemake(workdir, cfg, "results/data/digits.npz")
    assert (workdir / "results/data/digits.npz").exists()


def test_an_error_in_a_run_block_job_is_written_to_the_jobs_log(tmp_path):
    """sigprop.steps.jobs.run_job: a job running in a thread of Snakemake logs to its own file only,
    and an error there is written with its traceback before it is raised."""
    import logging
    import threading

    from sigprop.steps.jobs import run_job

    a, b = tmp_path / "a.log", tmp_path / "b.log"

    def work(name):
        logging.getLogger("sigprop.test").info("working on %s", name)

    def fail():
        raise ValueError("bad shard table x.parquet")

    threads = [threading.Thread(target=run_job, args=([str(p)], work, p.stem)) for p in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert "working on a" in a.read_text() and "working on b" not in a.read_text()
    assert "working on b" in b.read_text() and "working on a" not in b.read_text()
    with pytest.raises(ValueError):
        run_job([str(tmp_path / "c.log")], fail)
    text = (tmp_path / "c.log").read_text()
    assert "job failed: ValueError: bad shard table x.parquet" in text and "Traceback" in text


def _files(workdir) -> dict:
    return {
        str(p.relative_to(workdir)): p.stat().st_mtime_ns
        for p in (workdir / "results").rglob("*")
        if p.is_file()
    }


def test_a_shard_too_big_for_the_machine_is_refused_before_any_job_and_loses_nothing(workdir):
    """A block whose shard cannot fit in this machine's memory (width 10^5, depth 60: about
    5 TB of parameters and gradients) stops the run before any job starts: the message names
    the study file, the block and the shard; nothing computed before is deleted or rewritten;
    no lock is left, so the next run needs no --unlock."""
    st = tiny_study()
    cfg = write_config(workdir, st, shard_size=4)
    target = "results/trainable_depth/metrics.parquet"
    run_snakemake(workdir, cfg, target)
    before = _files(workdir)
    healthy = st["scales"]["quick"]["blocks"][0]
    big = {
        "label": "huge",
        "fixed": dict(healthy["fixed"], width=100_000),
        "grid": {"keep_rate": [1.0], "depth": [60], "sigma_w2": [1.0]},
    }
    st["scales"]["quick"]["blocks"] = [healthy, big]
    cfg = write_config(workdir, st, shard_size=4)
    p = run_snakemake(workdir, cfg, target, check=False)
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert "trainable_depth.yaml: block 'huge', shard" in out, out[-3000:]
    assert "no job was started" in out and "--resources mem_mb" in out
    assert not re.search(r"^\s*(local)?rule \w+:", p.stdout + p.stderr, re.M), out[-3000:]
    assert _files(workdir) == before  # nothing deleted, rewritten or added
    locks = workdir / ".snakemake" / "locks"
    assert not locks.exists() or not any(locks.iterdir())
    # the oversized block removed again: the next run is up to date, no --unlock needed
    st["scales"]["quick"]["blocks"] = [healthy]
    cfg = write_config(workdir, st, shard_size=4)
    p = run_snakemake(workdir, cfg, target)
    assert "Nothing to be done" in p.stdout + p.stderr
    assert _files(workdir) == before


def _most_at_once(log: str, rules=("init_shard", "train_shard")) -> int:
    """The most jobs of ``rules`` running at once, from Snakemake's log: a job starts at its
    ``rule NAME:`` block (whose ``jobid: N`` follows) and ends at ``Finished jobid: N``."""
    running, most, pending = set(), 0, None
    for line in log.splitlines():
        m = re.match(r"^\s*(?:local)?rule (\w+):", line)
        if m:
            pending = m.group(1)
            continue
        m = re.match(r"^\s*jobid: (\d+)", line)
        if m and pending is not None:
            if pending in rules:
                running.add(m.group(1))
                most = max(most, len(running))
            pending = None
            continue
        m = re.search(r"Finished jobid: (\d+)", line)
        if m:
            running.discard(m.group(1))
    return most


def test_a_memory_limit_runs_shard_jobs_one_at_a_time(tmp_path):
    """``--resources mem_mb=N`` is the memory the run may use: every shard job asks for at
    least its floor (at least 1 MB), so with 1 MB the shard jobs run one at a time; without a
    limit two run at once on two cores."""
    most = {}
    for name, extra in (("free", ()), ("limited", ("--resources", "mem_mb=1"))):
        wd = tmp_path / name
        cfg = write_config(wd, tiny_study(), shard_size=2)
        p = run_snakemake(wd, cfg, "results/trainable_depth/metrics.parquet", *extra)
        most[name] = _most_at_once(p.stdout + p.stderr)
    assert most == {"free": 2, "limited": 1}
