"""Worker processes for the jobs of a local run: a fork server outside Snakemake's process tree.

:func:`sigprop.steps.jobs.run_job` sends each step here.  The first step of a run starts one
server: a Python process that imports torch, pandas, matplotlib and every module of
``sigprop`` once (:func:`preload`, about 2 s), then forks one worker per step.  A worker starts
with all of that imported (a fork takes ~20 ms), runs the step in its main thread, sends back
the result or the exception and exits, so:

- no two jobs share an interpreter lock (jobs in threads of one process wait for each other at
  every torch call: docs/performance.md, "Where jobs run");
- a job's memory goes back to the system when it ends, and its peak is its own (logged as
  ``peak RSS`` at the end of its log);
- the server is started through an intermediate process that exits at once, so it and its
  workers are not in Snakemake's process tree: Snakemake's ``benchmark:`` sampler, which reads
  the memory map of every process under Snakemake twice a second for each job's first 15
  seconds, reads only Snakemake's own (its wall time ``s`` is the job's; its memory and CPU
  columns are Snakemake's process, as they were for jobs in threads).

The server stays in Snakemake's process group, so a signal to the group (Ctrl-C, a scheduler
stopping or killing the job) reaches every worker; it exits when the Snakemake process that
started it does (it watches a pipe whose other end only that process holds), and each worker
dies with the server (Linux's parent-death signal), so an interrupted run leaves no job
running.  Linux only (``fork`` after
the imports, ``prctl``); elsewhere steps run in the calling thread.

The server writes its log, ``server.log``, in its temporary folder beside its socket and its
``pid`` file: its start, each worker that did not end normally, and, as its last line
(``worker server (pid N) ended: ...``), how it ended wherever it can: a signal it catches
(SIGTERM, SIGINT, SIGHUP), an error (after its traceback), or the process that started it
letting it go while workers still ran.  Let go with no worker running, it removes the folder:
no one is left to read it.  A server killed by SIGKILL (the out-of-memory killer's signal)
writes nothing.  A job whose worker ends without a result fails with what the calling process
can tell (:func:`_no_result`): the server still running (it appends how the worker ended to
the job's log), or gone, with its log's last line or, where it left none, that it left none
and the log's last lines.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import pickle
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

STARTUP_TIMEOUT_S = 120.0
SERVER_LOG = "server.log"
ENDED = "ended: "
"""What the server's last log line says after ``worker server (pid N) `` when it could say how
it ended."""
EXIT_GRACE_S = 1.0
"""How long an ending server waits for workers that are exiting (a finished job's worker, its
result sent) before it counts the rest as running jobs that end with it."""
CAUGHT_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Signals on which the server logs its end before exiting (each unless it starts ignored)."""
_lock = threading.Lock()
_server: dict | None = None  # {"socket": path, "alive": write end of the pipe, "pid", "log"}


def available() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork")


class _ThreadFilter(logging.Filter):
    def __init__(self, ident: int):
        super().__init__()
        self.ident = ident

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread == self.ident


def _root_ready() -> logging.Logger:
    root = logging.getLogger("sigprop")
    root.setLevel(logging.INFO)
    root.propagate = False  # the job logs are the files; Snakemake's output stays its own
    return root


@contextlib.contextmanager
def job_log(path: str | Path | None):
    """Records of the ``sigprop`` loggers made in this thread go to ``path`` while the block
    runs; an exception is logged there with its traceback and re-raised."""
    root = _root_ready()
    handler = None
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, mode="w")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.addFilter(_ThreadFilter(threading.get_ident()))
        root.addHandler(handler)
    try:
        yield logging.getLogger("sigprop")
    except BaseException as e:
        logging.getLogger("sigprop").error("job failed: %s: %s", type(e).__name__, e, exc_info=True)
        raise
    finally:
        if handler is not None:
            root.removeHandler(handler)
            handler.close()


def step_function(fn):
    """``fn`` itself, or the function a name ``"module:function"`` refers to."""
    if not isinstance(fn, str):
        return fn
    import importlib

    module, _, name = fn.partition(":")
    return getattr(importlib.import_module(module), name)


def run_logged(path, fn, args, kwargs, peak=None):
    """``fn(*args, **kwargs)`` (``fn`` a function or its name, :func:`step_function`) with its
    log in ``path`` (:func:`job_log`), ending with how long it took (and ``peak()``, the peak
    resident size in MB, when given)."""
    with job_log(path) as lg:
        fn = step_function(fn)
        t0 = time.time()
        out = fn(*args, **kwargs)
        if peak is None:
            lg.info("done in %.2fs", time.time() - t0)
        else:
            lg.info("done in %.2fs, peak RSS %.0f MB", time.time() - t0, peak())
        return out


# -- the client side (threads of the Snakemake process) ------------------------------------------


def run(path: str | None, payload: bytes) -> None:
    """Run the pickled step ``payload`` (``(fn, args, kwargs)``) in a worker with its log at
    ``path``; raise its exception if it fails (what it returns is not sent back)."""
    request = pickle.dumps((path, payload))
    for attempt in (0, 1):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                server = _ensure_server()
                sock.connect(server["socket"])
                _send(sock, request)
                reply = _recv(sock)
            except (
                ConnectionRefusedError,
                FileNotFoundError,
                ConnectionResetError,
                BrokenPipeError,
            ):
                # the server died (killed): start a new one, once.  A reset or broken pipe
                # means the request was never read (a worker that read it and died ends the
                # connection with an end of file, below), so nothing has run it
                if attempt:
                    raise
                _forget_server()
                continue
            break
        finally:
            sock.close()
    if reply is None:
        raise RuntimeError(_no_result(server, path))
    status, value = pickle.loads(reply)
    if status != "ok":
        raise value


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _no_result(server: dict, path: str | None, wait_s: float = 0.5) -> str:
    """The error of a job whose worker ended without sending a result: what this process can
    tell of how.  The server that forked the worker still running: it appends how the worker
    ended to the job's log and its own.  The server gone (its worker dies with it): its log's
    last line where it wrote how it ended, else that it left no such line, and its last lines;
    then the same text also ends the job's log (``path``)."""
    pid, log = server.get("pid"), server.get("log")
    t0 = time.time()
    while pid is not None and _running(pid) and time.time() - t0 < wait_s:
        time.sleep(0.02)  # a worker dies with its server: let the server's end show first
    msg = "the job's worker process ended without a result"
    if pid is None or _running(pid):
        msg += " (killed, e.g. for memory?)"
        if pid is not None:
            msg += (
                f"; the worker server (pid {pid}, still running) appends how it ended to "
                + (f"the job's log {path} and to " if path else "")
                + f"its own log {log}"
            )
        return msg
    try:
        lines = [x for x in Path(log).read_text(errors="replace").splitlines() if x.strip()]
    except (OSError, TypeError):
        lines = None
    head = f"{msg}: the worker server (pid {pid}) that forked it is no longer running"
    if lines and f"worker server (pid {pid}) {ENDED}" in lines[-1]:
        msg = f"{head}; its log {log} ends: {lines[-1]}"
    else:
        if lines is None:
            tail = f"its log {log} is gone"
        elif not lines:
            tail = f"its log {log} is empty"
        else:
            tail = f"the last lines of its log {log}:\n  " + "\n  ".join(lines[-3:])
        msg = (
            f"{head} and left no line saying how it ended (it writes one on every end it can "
            "catch: it was killed by a signal it cannot catch, SIGKILL, e.g. from the "
            f"out-of-memory killer, or crashed); {tail}"
        )
    if path:
        try:
            with open(path, "a") as f:
                f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} ERROR sigprop: job failed: {msg}\n")
        except OSError:
            pass
    return msg


def _forget_server() -> None:
    global _server
    with _lock:
        if _server is not None:
            try:
                os.close(_server["alive"])
            except OSError:
                pass
            _server = None


def start_early() -> None:
    """Start the server now without waiting for it, so that its imports overlap Snakemake's
    building of the DAG (the Snakefile calls it for a local run that will execute jobs); the
    first step waits for it to be ready (:func:`_ensure_server`)."""
    global _server
    if not available() or os.environ.get("SIGPROP_JOB_PROCESSES", "1") == "0":
        return
    with _lock:
        if _server is None:
            _server = _launch_server()


def _launch_server() -> dict:
    folder = tempfile.mkdtemp(prefix="sigprop-workers-")
    sock_path = os.path.join(folder, "s")
    read_end, write_end = os.pipe()  # not inherited by anything else this process runs
    launch = [
        sys.executable,
        "-c",
        "from sigprop.steps.workers import _launch; _launch()",
        sock_path,
        str(read_end),
        json.dumps(sys.path),
    ]
    subprocess.run(launch, pass_fds=(read_end,), check=True, stdin=subprocess.DEVNULL)
    os.close(read_end)
    try:  # written by the intermediate process before it exits
        pid = int(Path(folder, "pid").read_text())
    except (OSError, ValueError):
        pid = None
    return {
        "socket": sock_path,
        "alive": write_end,
        "ready": False,
        "t0": time.time(),
        "pid": pid,
        "log": os.path.join(folder, SERVER_LOG),
    }


def _ensure_server() -> dict:
    """The running server (:func:`_launch_server`'s dict), started and waited for if need be."""
    global _server
    with _lock:
        if _server is not None and _server["ready"]:
            if Path(_server["socket"]).exists():
                return _server
            try:  # it went away: start another
                os.close(_server["alive"])
            except OSError:
                pass
            _server = None
        if _server is None:
            _server = _launch_server()
        sock_path, write_end = _server["socket"], _server["alive"]
        failed = os.path.join(os.path.dirname(sock_path), "failed")
        while not os.path.exists(sock_path):
            if os.path.exists(failed):
                os.close(write_end)
                _server = None
                raise RuntimeError(
                    "the worker server failed to start: "
                    + Path(failed).read_text().strip().splitlines()[-1]
                    + f" (traceback in {failed}); SIGPROP_JOB_PROCESSES=0 runs "
                    "steps in Snakemake's threads"
                )
            if time.time() - _server["t0"] > STARTUP_TIMEOUT_S:
                raise RuntimeError(
                    f"the worker server did not start within {STARTUP_TIMEOUT_S:.0f} s "
                    f"(socket {sock_path}); set SIGPROP_JOB_PROCESSES=0 to run "
                    "steps in Snakemake's threads"
                )
            time.sleep(0.02)
        _server["ready"] = True
        return _server


def _send(sock: socket.socket, data: bytes) -> None:
    sock.sendall(struct.pack("!Q", len(data)) + data)


def _recv(sock: socket.socket) -> bytes | None:
    head = _recv_exactly(sock, 8)
    if head is None:
        return None
    return _recv_exactly(sock, struct.unpack("!Q", head)[0])


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        b = sock.recv(min(n - got, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


# -- the server ----------------------------------------------------------------------------------


class _Stopped(BaseException):
    """A signal of :data:`CAUGHT_SIGNALS` reached the server."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum, frame) -> None:
    for s in CAUGHT_SIGNALS:  # one end, logged once
        signal.signal(s, signal.SIG_IGN)
    raise _Stopped(signum)


def _note(folder: str, text: str) -> None:
    """Append ``text`` to the server's log (:data:`SERVER_LOG` in ``folder``), time-stamped."""
    try:
        with open(os.path.join(folder, SERVER_LOG), "a") as f:
            f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {text}\n")
    except OSError:
        pass


def _launch() -> None:
    """The intermediate process: fork the server, write its pid, and exit, so that the server
    is adopted by the system and is not a descendant of Snakemake.  The server logs how it ends
    (:data:`ENDED`) wherever it can."""
    sock_path, alive_fd, path = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    folder, client = os.path.dirname(sock_path), os.getppid()
    child = os.fork()
    if child:
        try:
            Path(folder, "pid").write_text(str(child))
        finally:
            os._exit(0)
    # still in Snakemake's process group: a signal to the group (Ctrl-C, a scheduler's kill)
    # reaches the workers too
    sys.path[:] = path
    me = os.getpid()
    _note(folder, f"worker server (pid {me}) started for pid {client}")
    running: dict[int, str | None] = {}  # running workers: pid -> job log
    code = 0
    try:
        _serve(sock_path, alive_fd, running)
        how = "the process that started it let it go (it exited or started another server)"
    except BaseException as e:
        if os.getpid() != me:  # a worker between its fork and its step
            os._exit(1)
        text = ""
        if isinstance(e, _Stopped):
            how = f"received {signal.Signals(e.signum).name} (signal {e.signum})"
            code = 128 + e.signum
        else:
            import traceback

            text = traceback.format_exc()
            _note(folder, text.rstrip())
            how, code = f"error: {type(e).__name__}: {e}", 1
        try:  # a client waiting for the socket reads why it will not come (last line)
            Path(folder, "failed").write_text(f"{text}worker server (pid {me}) {ENDED}{how}\n")
        except OSError:
            pass
    for s in CAUGHT_SIGNALS:  # ending: how is logged once
        signal.signal(s, signal.SIG_IGN)
    _reap(running, folder)
    t0 = time.time()  # a worker that sent its result may still be exiting: give it a moment
    while running and time.time() - t0 < EXIT_GRACE_S:
        time.sleep(0.02)
        _reap(running, folder)
    if code == 0 and not running:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        _note(
            folder,
            f"worker server (pid {me}) {ENDED}{how}"
            + (f"; the workers of {len(running)} running job(s) end with it" if running else ""),
        )
    os._exit(code)


def preload() -> None:
    """Import what the steps use, once, in the server (workers inherit it)."""
    import importlib
    import pkgutil

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import pandas  # noqa: F401
    import torch  # noqa: F401

    import sigprop

    for m in pkgutil.walk_packages(sigprop.__path__, "sigprop."):
        if m.name.startswith(("sigprop.tools", "sigprop.studies.template")):
            continue
        try:
            importlib.import_module(m.name)
        except Exception:  # an optional module missing here fails in its job, not here
            pass


def _serve(sock_path: str, alive_fd: int, logs: dict[int, str | None]) -> None:
    """Serve until the process that started it lets it go; ``logs``: the running workers (pid
    -> job log), kept up to date.  A signal of :data:`CAUGHT_SIGNALS` raises :class:`_Stopped`."""
    folder = os.path.dirname(sock_path)
    saved = {s: signal.getsignal(s) for s in CAUGHT_SIGNALS}
    for s, h in saved.items():
        if h != signal.SIG_IGN:
            signal.signal(s, _stop)
    for fd in (0, 1, 2):  # no terminal: the steps log to their files
        try:
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        except OSError:
            pass
    t0 = time.time()
    preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = sock_path + ".tmp"
    listener.bind(tmp)
    listener.listen(64)
    os.rename(tmp, sock_path)  # the client waits for this name: the server is ready
    _note(folder, f"ready in {time.time() - t0:.1f} s: {sock_path}")
    wake_r, wake_w = os.pipe()  # a worker's end wakes the loop, which reaps it at once
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    try:
        while True:
            ready, _, _ = select.select([listener, alive_fd, wake_r], [], [], 5.0)
            if wake_r in ready:
                while True:
                    try:
                        if not os.read(wake_r, 512):
                            break
                    except BlockingIOError:
                        break
            _reap(logs, folder)
            if alive_fd in ready:  # Snakemake has exited: so do we (and the workers)
                return
            if listener in ready:
                conn, _ = listener.accept()
                request = _recv(conn)
                if request is None:
                    conn.close()
                    continue
                path, payload = pickle.loads(request)
                # no caught signal between the fork and the worker's own handlers
                signal.pthread_sigmask(signal.SIG_BLOCK, CAUGHT_SIGNALS)
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for fd in (alive_fd, wake_r, wake_w):
                        os.close(fd)
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    for s, h in saved.items():
                        signal.signal(s, signal.SIG_DFL if h is None else h)
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, CAUGHT_SIGNALS)
                    _worker(conn, path, payload)  # never returns
                logs[pid] = path
                signal.pthread_sigmask(signal.SIG_UNBLOCK, CAUGHT_SIGNALS)
                conn.close()
    finally:
        listener.close()
        try:
            os.unlink(sock_path)
        except OSError:
            pass


def _reap(logs: dict, folder: str) -> None:
    """Collect ended workers; one that did not end normally leaves a line in its job's log and
    in the server's."""
    while logs:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        path = logs.pop(pid, None)
        if os.WIFSIGNALED(status) or (os.WIFEXITED(status) and os.WEXITSTATUS(status)):
            why = (
                f"killed by signal {os.WTERMSIG(status)}"
                + (" (out of memory?)" if os.WTERMSIG(status) == signal.SIGKILL else "")
                if os.WIFSIGNALED(status)
                else f"exit status {os.WEXITSTATUS(status)}"
            )
            _note(folder, f"the worker (pid {pid}) of the job logging to {path} was {why}")
            if path:
                with open(path, "a") as f:
                    f.write(
                        f"{time.strftime('%Y-%m-%d %H:%M:%S')} ERROR sigprop: job failed: "
                        f"its worker process (pid {pid}) was {why}\n"
                    )


def _worker(conn: socket.socket, path: str | None, payload: bytes) -> None:
    code = 0
    try:
        if sys.platform.startswith("linux"):
            try:  # die with the server (PR_SET_PDEATHSIG)
                ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
            except (OSError, AttributeError):
                pass
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            fn, args, kwargs = pickle.loads(payload)
            # what the step returns stays here: its outputs are its files, and pickling a
            # result back (a merged run table of gigabytes) cost memory on both sides
            run_logged(path, fn, args, kwargs, peak=_peak_rss_mb)
            reply = pickle.dumps(("ok", None))
        except BaseException as e:  # logged with its traceback by job_log
            try:
                reply = pickle.dumps(("error", e))
            except Exception:
                reply = pickle.dumps(("error", RuntimeError(f"{type(e).__name__}: {e}")))
        _send(conn, reply)
        conn.close()
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def describe(path: str) -> None:
    """A step that writes where it ran to ``path`` as JSON (process id, parent's, peak RSS in MB):
    for checking where steps run (tests/test_workers.py)."""
    Path(path).write_text(
        json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "peak_rss_mb": _peak_rss_mb()})
    )


def _peak_rss_mb() -> float:
    """This process's peak resident size in MB (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
