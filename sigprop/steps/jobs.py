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
file: :func:`sigprop.steps.workers.job_log` takes only the records of the job's thread and writes an uncaught error
there with its traceback before re-raising it (Snakemake then reports the job as failed and the
log says why).  ``SIGPROP_JOB_PROCESSES=0`` runs every step in the calling thread (for a
debugger); steps in threads share process-wide settings, which stay guarded: torch's thread
count is set only when it changes, TF32 jobs never overlap jobs that need IEEE float32
(:func:`precision_gate`), and figures are drawn one at a time (:data:`FIGURE_LOCK`).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
from pathlib import Path

from sigprop.steps import workers
from sigprop.steps.workers import run_logged

FIGURE_LOCK = threading.Lock()


def run_job(log, fn, *args, **kwargs) -> None:
    """Run one step, ``fn(*args, **kwargs)``, with its log in the rule's first log file: in a
    worker process (:mod:`sigprop.steps.workers`) unless ``SIGPROP_JOB_PROCESSES=0`` or the
    step cannot be sent to one, then in the calling thread.  ``fn`` is a function or its name,
    ``"module:function"`` (the rules name it, so that Snakemake's process never imports torch:
    only the workers do).  A step's outputs are its files: what it returns is dropped, in a
    worker and here alike."""
    path = log if isinstance(log, (str, Path)) or log is None else (log[0] if len(log) else None)
    path = None if path is None else str(path)
    args, kwargs = _plain(args), _plain(kwargs)
    if in_processes():
        try:
            payload = pickle.dumps((fn, args, kwargs))
        except Exception:  # a closure or an open handle: run it here
            payload = None
        if payload is not None:
            workers.run(path, payload)
            return
    run_logged(path, fn, args, kwargs)


def in_processes() -> bool:
    """Whether :func:`run_job` sends steps to worker processes: not with
    ``SIGPROP_JOB_PROCESSES=0``, nor off Linux."""
    return os.environ.get("SIGPROP_JOB_PROCESSES", "1") != "0" and workers.available()


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
