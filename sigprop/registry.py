"""The studies: found by looking for packages under ``sigprop/studies/`` (no hand-kept list).

A study kind is the name of a package ``sigprop/studies/<kind>/`` whose ``__init__.py``
defines ``SPEC`` (:class:`sigprop.contract.StudySpec`).  Declarations are light and are read
while Snakemake builds the DAG; a study's code modules (``measure``, ``theory``, ``figures``,
``claims``, ``tables``) are imported only by the jobs that call them (:func:`part`).

Dependencies point one way: shared layers <- study packages <- this registry <- the workflow
(``sigprop.config``, ``sigprop.steps.shards``, ``scripts/``); ``tests/test_imports.py``
checks it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
from pathlib import Path
from types import ModuleType

from . import params as P
from .contract import SECTIONS, Params, StudySpec, base_scales

PACKAGE = "sigprop.studies"


@functools.cache
def kinds() -> tuple[str, ...]:
    """Names of every study package (sorted); packages starting with ``_`` are skipped."""
    pkg = importlib.import_module(PACKAGE)
    return tuple(sorted(m.name for m in pkgutil.iter_modules(pkg.__path__)
                        if m.ispkg and not m.name.startswith("_")))


def spec(kind: str) -> StudySpec:
    """The declaration of study ``kind``."""
    if kind not in kinds():
        raise KeyError(f"unknown study kind '{kind}' (known: {', '.join(kinds())})")
    mod = importlib.import_module(f"{PACKAGE}.{kind}")
    s = getattr(mod, "SPEC", None)
    if not isinstance(s, StudySpec):
        raise TypeError(f"{mod.__file__}: a study package must define SPEC = StudySpec(...)")
    return s


def part(kind: str, module: str) -> ModuleType:
    """One of a study's code modules (``measure``, ``theory``, ``figures``, ``claims``,
    ``tables``), imported on demand."""
    spec(kind)
    try:
        return importlib.import_module(f"{PACKAGE}.{kind}.{module}")
    except ModuleNotFoundError as e:
        if e.name == f"{PACKAGE}.{kind}.{module}":
            raise ModuleNotFoundError(f"study '{kind}' has no module '{module}.py' (the contract: "
                                      "sigprop/contract.py)") from None
        raise


def task(kind: str) -> str:
    return spec(kind).task


def figure_function(kind: str, name: str):
    fig = spec(kind).figures[name]
    return getattr(part(kind, "figures"), fig.function)


def measure_function(kind: str):
    return part(kind, "measure").measure


def theory_function(kind: str):
    return part(kind, "theory").theory_table


def claims_function(kind: str):
    return part(kind, "claims").claims_table


def table_function(kind: str):
    return part(kind, "tables").build_table


def resolve(kind: str, study_cfg: dict, scale: str, where: str = "", smoke: bool = False) -> Params:
    """A study's parameters at ``scale``: each section of the study file, with the scale's own
    section (``scales.<scale>.<section>``) merged over it, parsed into the study's types (a
    ladder rung merges the quick scale's sections first, :mod:`sigprop.config.ladder`).  In a
    smoke run (``smoke``) the scale's ``smoke.<section>`` is merged over that in turn: Monte
    Carlo sizes and probe counts cut so that every code path runs in seconds
    (:mod:`sigprop.config.smoke`).

    Raises :class:`sigprop.params.ParamError` naming the key path (``analysis.z_max``, or
    ``scales.quick.analysis.z_max`` for a key set there) and the value."""
    s = spec(kind)
    scales = study_cfg.get("scales") or {}
    scale_cfg = scales.get(scale) or {}
    smoke_cfg = (scale_cfg.get("smoke") or {}) if smoke else {}
    out = {}
    for section in SECTIONS:
        merged = study_cfg.get(section)
        # check each part where it is written, so an error names the key the user typed
        P.parse(s.section_type(section), merged, section)
        for name in base_scales(scale):       # a ladder rung: the quick scale's, then its own
            over = (scales.get(name) or {}).get(section)
            if over is not None:
                P.parse(s.section_type(section), over, f"scales.{name}.{section}")
                merged = P.merge(merged, over)
        if smoke_cfg.get(section) is not None:
            P.parse(s.section_type(section), smoke_cfg[section], f"scales.{scale}.smoke.{section}")
            merged = P.merge(merged, smoke_cfg[section])
        out[section] = P.parse(s.section_type(section), merged, section)
    return Params(study=study_cfg.get("name", kind), **out)


def job_params(kind: str, params_json: str) -> Params:
    """A job's :class:`~sigprop.contract.Params` from the JSON the rule passed."""
    return Params.from_json(spec(kind), params_json)


def takes_layers(fn) -> bool:
    """Whether a figure or claims function takes the prune stage's per-layer reports."""
    return "layers" in inspect.signature(fn).parameters


# the package modules each workflow step runs, beside the study's own part ({kind} below);
# the step's glue module (sigprop.steps.shards / sigprop.steps.analysis) is part of its code too
STEP_CODE = {
    "prepare": ("sigprop.data.prepare",),
    "init": ("sigprop.steps.shards", "sigprop.train.shard"),
    "prune": ("sigprop.steps.shards", "sigprop.prune.stage"),
    "train": ("sigprop.steps.shards", "sigprop.train.shard", "sigprop.prune.stage"),
    "measure": ("sigprop.steps.shards", "sigprop.studies.{kind}.measure"),
    "merge": ("sigprop.steps.analysis", "sigprop.tables"),
    "theory": ("sigprop.steps.analysis", "sigprop.studies.{kind}.theory"),
    "figure": ("sigprop.steps.analysis", "sigprop.studies.{kind}.figures"),
    "claims": ("sigprop.steps.analysis", "sigprop.studies.{kind}.claims",
               "sigprop.studies.{kind}.analysis"),
    "table": ("sigprop.steps.analysis", "sigprop.studies.{kind}.tables"),
    "scales": ("sigprop.steps.analysis",),
    "ladder": ("sigprop.steps.analysis", "sigprop.claims.trend", "sigprop.figures.ladder"),
    "paper": ("sigprop.steps.analysis", "sigprop.papers"),
}


@functools.cache
def step_code(step: str, kind: str | None = None) -> str:
    """A digest of the code that determines a step's output for study ``kind``: the modules of
    :data:`STEP_CODE` and everything of the package they import (:func:`code_digest`).
    The rules pass it as a param, so editing a study's ``claims.py`` reruns its claims and what
    reads them, editing the trainer reruns the training shards, and nothing else reruns.  Read
    once per process: an edit takes effect at the next ``snakemake`` call."""
    if step not in STEP_CODE:
        raise KeyError(f"unknown step {step!r} (known: {', '.join(STEP_CODE)})")
    return code_digest(*(m.format(kind=kind) for m in STEP_CODE[step]))


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
