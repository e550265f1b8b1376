"""Running a workflow step from a rule's ``run:`` block.

Locally, the default profile sets ``force-use-threads``: every job's ``run:`` block is a thread
of the one Snakemake process, and :func:`run_job` sends the step to a worker process forked from
a server that imported torch, pandas, matplotlib and the package once
(:mod:`sigprop.steps.workers`): no job pays an interpreter's start-up (torch alone takes 2.3 s
to import) and no two jobs share one interpreter lock (steps in threads of one process wait for
each other at every torch call: docs/performance.md, "Where jobs run").  On a cluster each job
is its own Snakemake process and forks one worker the same way.

What that asks of a step: its arguments and result are picklable (paths, JSON, dicts; a step
that is not, such as a closure, runs in the calling thread instead), and its log goes to its own
file: :func:`job_log` takes only the records of the job's thread and writes an uncaught error
there with its traceback before re-raising it (Snakemake then reports the job as failed and the
log says why).  ``SIGPROP_JOB_PROCESSES=0`` runs every step in the calling thread (for a
debugger); steps in threads share process-wide settings, which stay guarded: torch's thread
count is set only when it changes, TF32 jobs never overlap jobs that need IEEE float32
(:func:`precision_gate`), and figures are drawn one at a time (:data:`FIGURE_LOCK`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import threading
import time
from pathlib import Path

FIGURE_LOCK = threading.Lock()


class _ThreadFilter(logging.Filter):
    def __init__(self, ident: int):
        super().__init__()
        self.ident = ident

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread == self.ident


def _root_ready() -> logging.Logger:
    root = logging.getLogger("sigprop")
    root.setLevel(logging.INFO)
    root.propagate = False        # the job logs are the files; Snakemake's output stays its own
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
        logging.getLogger("sigprop").error("job failed: %s: %s", type(e).__name__, e,
                                           exc_info=True)
        raise
    finally:
        if handler is not None:
            root.removeHandler(handler)
            handler.close()


def run_job(log, fn, *args, **kwargs):
    """Run one step (``fn(*args, **kwargs)``) with its log in the rule's first log file: in a
    worker process (:mod:`sigprop.steps.workers`) unless ``SIGPROP_JOB_PROCESSES=0`` or the
    step cannot be sent to one, then in the calling thread."""
    path = log if isinstance(log, (str, Path)) or log is None else (log[0] if len(log) else None)
    path = None if path is None else str(path)
    args, kwargs = _plain(args), _plain(kwargs)
    if in_processes():
        try:
            payload = pickle.dumps((fn, args, kwargs))
        except Exception:           # a closure or an open handle: run it here
            payload = None
        if payload is not None:
            from sigprop.steps import workers
            return workers.run(path, payload)
    return _run_here(path, fn, args, kwargs)


def in_processes() -> bool:
    """Whether :func:`run_job` sends steps to worker processes: not with
    ``SIGPROP_JOB_PROCESSES=0``, nor off Linux."""
    from sigprop.steps import workers
    return os.environ.get("SIGPROP_JOB_PROCESSES", "1") != "0" and workers.available()


def _run_here(path, fn, args, kwargs, peak=None):
    with job_log(path) as lg:
        t0 = time.time()
        out = fn(*args, **kwargs)
        if peak is None:
            lg.info("done in %.2fs", time.time() - t0)
        else:
            lg.info("done in %.2fs, peak RSS %.0f MB", time.time() - t0, peak())
        return out


def _plain(x):
    """Snakemake's path and list types as plain ``str`` and ``list`` (picklable without
    Snakemake's rule objects)."""
    if isinstance(x, str):
        return str(x)
    if isinstance(x, tuple):
        return tuple(_plain(v) for v in x)
    if isinstance(x, list):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


class _PrecisionGate:
    """Jobs with TF32 on and jobs with it off never run at once in one process (the flags are
    process-wide); jobs of the same kind run together."""

    def __init__(self):
        self._cond = threading.Condition()
        self._mode: bool | None = None
        self._count = 0

    @contextlib.contextmanager
    def __call__(self, tf32: bool):
        with self._cond:
            while self._count and self._mode != tf32:
                self._cond.wait()
            self._mode = tf32
            self._count += 1
        try:
            yield
        finally:
            with self._cond:
                self._count -= 1
                if not self._count:
                    self._mode = None
                self._cond.notify_all()


precision_gate = _PrecisionGate()
