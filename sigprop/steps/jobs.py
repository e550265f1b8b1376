"""Running a workflow step inside the Snakemake process (a rule's ``run:`` block).

Locally, the default profile sets ``force-use-threads``: every job's ``run:`` block is a thread
of the one Snakemake process, so no job pays an interpreter's start-up (torch alone takes
2.3 s to import; it was 39 % of the default run's job time).  On a cluster each job is its own
process as before.  What that asks of a step:

- its log goes to its own file: :func:`run_job` attaches a handler that takes only the records
  of the job's thread, and writes an uncaught error there with its traceback before re-raising
  it (Snakemake then reports the job as failed and the log says why);
- process-wide settings are shared: torch's thread count is set only when it changes, TF32
  jobs never overlap jobs that need IEEE float32 (:func:`precision_gate`), and figures are
  drawn one at a time (``pyplot`` keeps global state; :data:`FIGURE_LOCK`).
"""

from __future__ import annotations

import contextlib
import logging
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
    """Run one step (``fn(*args, **kwargs)``) with its log in the rule's first log file."""
    path = log if isinstance(log, (str, Path)) or log is None else (log[0] if len(log) else None)
    with job_log(path) as lg:
        t0 = time.time()
        out = fn(*args, **kwargs)
        lg.info("done in %.2fs", time.time() - t0)
        return out


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
