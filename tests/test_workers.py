"""sigprop.steps.workers: steps of a local run in forked worker processes, outside Snakemake's
process tree, with their errors, their end and the server's end handled."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from sigprop.steps import workers
from sigprop.steps.jobs import run_job

pytestmark = pytest.mark.skipif(not workers.available(), reason="worker processes need Linux")


def _where(tmp_path, name) -> dict:
    out = tmp_path / f"{name}.json"
    run_job([str(tmp_path / f"{name}.log")], "sigprop.steps.workers:describe", str(out))
    return json.loads(out.read_text())


def test_a_step_runs_in_a_worker_outside_the_callers_process_tree(tmp_path, monkeypatch):
    monkeypatch.delenv("SIGPROP_JOB_PROCESSES", raising=False)
    first = _where(tmp_path, "a")
    assert first["pid"] != os.getpid()
    assert first["pid"] not in {p.pid for p in psutil.Process().children(recursive=True)}
    text = (tmp_path / "a.log").read_text()
    assert "done in" in text and "peak RSS" in text
    # the next step forks a new worker from the same server
    second = _where(tmp_path, "b")
    assert second["ppid"] == first["ppid"] and second["pid"] != first["pid"]


def test_what_a_step_returns_is_not_sent_back(tmp_path):
    assert run_job([str(tmp_path / "r.log")], "os:getpid") is None


def test_an_error_keeps_its_type_and_its_traceback_goes_to_the_log(tmp_path):
    log = tmp_path / "b.log"
    with pytest.raises(ValueError, match="invalid literal"):
        run_job([str(log)], int, "not a number")
    text = log.read_text()
    assert "job failed: ValueError" in text and "Traceback" in text


def test_a_killed_worker_fails_its_job_and_says_how_in_the_log(tmp_path):
    log = tmp_path / "c.log"
    with pytest.raises(RuntimeError, match="ended without a result"):
        run_job([str(log)], signal.raise_signal, signal.SIGKILL)
    t0 = time.time()
    while "killed by signal 9" not in log.read_text() and time.time() - t0 < 10:
        time.sleep(0.05)
    assert "killed by signal 9 (out of memory?)" in log.read_text()


def test_without_processes_a_step_runs_in_the_calling_thread(tmp_path, monkeypatch):
    monkeypatch.setenv("SIGPROP_JOB_PROCESSES", "0")
    assert _where(tmp_path, "d")["pid"] == os.getpid()


def test_a_step_that_cannot_be_pickled_runs_in_the_calling_thread(tmp_path):
    seen = []
    run_job([str(tmp_path / "e.log")], lambda: seen.append(os.getpid()))
    assert seen == [os.getpid()]


STARTER = """
import json, os, sys
sys.path.insert(0, {root!r})
from sigprop.steps.jobs import run_job
from sigprop.steps import workers
run_job(None, "sigprop.steps.workers:describe", sys.argv[1])
print(json.load(open(sys.argv[1]))["ppid"], flush=True)    # the worker's parent: the server
print(workers._server["log"], flush=True)
"""


def test_the_server_ends_when_the_process_that_started_it_does(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", STARTER.format(root=root), str(tmp_path / "w.json")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SIGPROP_JOB_PROCESSES": "1"},
    )
    server, log = out.stdout.split()
    server = int(server)
    t0 = time.time()
    while psutil.pid_exists(server) and time.time() - t0 < 15:
        try:
            if psutil.Process(server).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    alive = psutil.pid_exists(server) and psutil.Process(server).status() != psutil.STATUS_ZOMBIE
    assert not alive, "the worker server outlived the process that started it"
    # let go with no job running, it leaves nothing behind: its folder (socket, log) is removed
    t0 = time.time()
    while os.path.exists(os.path.dirname(log)) and time.time() - t0 < 5:
        time.sleep(0.05)
    assert not os.path.exists(os.path.dirname(log))


def test_a_step_named_module_function_runs_in_the_worker(tmp_path):
    with pytest.raises(AttributeError):
        run_job([str(tmp_path / "g.log")], "os:no_such_function")
    assert "job failed: AttributeError" in (tmp_path / "g.log").read_text()


def test_a_server_that_dies_before_reading_the_request_is_replaced(tmp_path, monkeypatch):
    """A server killed after the client connected but before it accepted the connection resets
    it (a loaded machine can show this window): the step starts a new server and runs once."""
    import socket
    import threading

    path = tmp_path / "dying.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    _, alive = os.pipe()
    monkeypatch.setattr(
        workers, "_server", {"socket": str(path), "alive": alive, "ready": True, "t0": time.time()}
    )
    closer = threading.Timer(0.5, listener.close)  # dies with the connection pending
    closer.start()
    out = _where(tmp_path, "reset")
    closer.join()
    assert out["pid"] != os.getpid() and workers._server["socket"] != str(path)


def test_a_killed_server_is_replaced_by_the_next_step(tmp_path):
    server = _where(tmp_path, "k1")["ppid"]
    os.kill(server, signal.SIGKILL)
    t0 = time.time()
    while (
        psutil.pid_exists(server)
        and psutil.Process(server).status() != psutil.STATUS_ZOMBIE
        and time.time() - t0 < 10
    ):
        time.sleep(0.05)
    again = _where(tmp_path, "k2")
    assert again["ppid"] != server


def _server_killed_during_a_job(tmp_path, name, sig) -> tuple[str, str, list[str], int]:
    """A job sleeping in a worker whose server gets ``sig``: the job's error, the job's log, the
    server's log (lines) and the server's pid.  The killed server's folder is removed after."""
    server = _where(tmp_path, f"{name}-first")["ppid"]
    info = workers._server
    assert info["pid"] == server and Path(info["log"]).exists()
    log, errors = tmp_path / f"{name}.log", []

    def job():
        try:
            run_job([str(log)], "time:sleep", 60)
        except Exception as e:
            errors.append(e)

    t = threading.Thread(target=job)
    t.start()
    t0 = time.time()
    while not log.exists() and time.time() - t0 < 30:  # the worker runs the step
        time.sleep(0.02)
    os.kill(server, sig)
    t.join(30)
    try:
        assert not t.is_alive() and len(errors) == 1 and isinstance(errors[0], RuntimeError)
        return str(errors[0]), log.read_text(), Path(info["log"]).read_text().splitlines(), server
    finally:
        shutil.rmtree(Path(info["log"]).parent, ignore_errors=True)


def test_a_server_killed_by_sigkill_fails_its_jobs_saying_it_left_no_last_line(tmp_path):
    """SIGKILL cannot be caught: the server's log ends without saying how it ended, and the
    job's error says so, with the server's pid, its log and its last lines; the job's log ends
    with the same text."""
    msg, job_log, server_log, server = _server_killed_during_a_job(tmp_path, "kill", signal.SIGKILL)
    assert not any(" ended: " in line for line in server_log), server_log
    assert msg.startswith(
        f"the job's worker process ended without a result: the worker server "
        f"(pid {server}) that forked it is no longer running and left no line "
        "saying how it ended"
    ), msg
    assert "SIGKILL" in msg and "its log ends with how it ended" not in msg
    assert msg.endswith("\n  " + "\n  ".join(server_log[-3:]))
    assert job_log.rstrip("\n").endswith(f"ERROR sigprop: job failed: {msg}")
    assert _where(tmp_path, "kill-after")["ppid"] != server  # the next step: a new server


def test_a_server_stopped_by_sigterm_logs_it_and_its_jobs_errors_quote_it(tmp_path):
    """A caught signal: the server's last log line says which, and the job's error and its log
    quote that line."""
    msg, job_log, server_log, server = _server_killed_during_a_job(tmp_path, "term", signal.SIGTERM)
    last = server_log[-1]
    # the sleeping job's worker only: the previous job's, exiting, is waited for (EXIT_GRACE_S)
    assert last.endswith(
        f" worker server (pid {server}) ended: received SIGTERM (signal 15); "
        "the workers of 1 running job(s) end with it"
    ), server_log
    assert msg.startswith(
        f"the job's worker process ended without a result: the worker server "
        f"(pid {server}) that forked it is no longer running; its log "
    )
    assert msg.endswith(f"server.log ends: {last}")
    assert job_log.rstrip("\n").endswith(f"ERROR sigprop: job failed: {msg}")
    assert _where(tmp_path, "term-after")["ppid"] != server
