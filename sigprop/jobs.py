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
import functools
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


# -- the code a job's output depends on ----------------------------------------------------------

_ROOT = Path(__file__).resolve().parent          # the sigprop package


def _module_file(name: str) -> Path | None:
    """The source file of module ``name`` of this package (``sigprop.x.y``), None if none."""
    parts = name.split(".")
    if parts[0] != _ROOT.name:
        return None
    base = _ROOT.joinpath(*parts[1:])
    for f in (base / "__init__.py", base.with_suffix(".py")):
        if f.is_file():
            return f
    return None


@functools.cache
def _imports(name: str) -> tuple[str, ...]:
    """The package's modules that module ``name`` imports (at the top or inside functions), and
    its parent packages (importing a module runs their ``__init__``)."""
    import ast
    f = _module_file(name)
    if f is None:
        return ()
    package = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    parts = name.split(".")
    for i in range(1, len(parts)):
        found.add(".".join(parts[:i]))
    for node in ast.walk(ast.parse(f.read_text(), str(f))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)   # submodules named in the list
    return tuple(sorted(m for m in found if m != name and _module_file(m) is not None))


def module_closure(*names: str) -> tuple[str, ...]:
    """``names`` and every module of the package they import, transitively (read from the
    sources, so imports inside functions count; modules loaded by name at run time, as the
    registry loads a study's parts, do not)."""
    seen, todo = set(), [n for n in names if _module_file(n) is not None]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(_imports(n))
    return tuple(sorted(seen))


def code_digest(*names: str) -> str:
    """A digest of the source of ``names`` and everything of the package they import
    (:func:`module_closure`): a job whose code changed has another digest, so a rule that
    passes it as a param reruns (Snakemake's rerun trigger on params)."""
    import hashlib
    h = hashlib.sha256()
    for n in module_closure(*names):
        h.update(n.encode() + b"\0" + _module_file(n).read_bytes() + b"\0")
    return h.hexdigest()[:16]
