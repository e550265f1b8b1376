"""The studies: the packages under ``sigprop/studies/`` (no hand-kept list) and study packages
installed elsewhere.

A study kind names a package whose ``__init__.py`` defines ``SPEC``
(:class:`sigprop.contract.StudySpec`).  It is found in one of three places (:func:`packages`):

- this package: ``sigprop/studies/<kind>/``;
- an installed distribution that declares the entry point ``<kind> = <module>`` in the group
  ``sigprop.studies`` (``sigprop new-study`` writes such a distribution);
- a folder on the ``SIGPROP_STUDIES_PATH`` environment variable (folders separated as in
  ``PATH``): each package ``<folder>/<kind>/`` in it; the folder is put on ``sys.path``.

A study found outside this package keeps its study file beside its code
(``<package>/study.yaml``, :func:`study_file`) and may declare the paper it belongs to as
``PAPER = {"id": ..., "citation": ..., "title": ...}`` in its ``__init__.py`` (:func:`papers`).
Declarations are light and are read while Snakemake builds the DAG; a study's code modules
(``measure``, ``theory``, ``figures``, ``claims``, ``tables``) are imported only by the jobs
that call them (:func:`part`).

Dependencies point one way: shared layers <- study packages <- this registry <- the workflow
(``sigprop.config``, ``sigprop.steps.shards``, ``scripts/``); ``tests/test_imports.py``
checks it.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import pkgutil
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from . import params as params_module
from .contract import SECTIONS, Params, StudySpec, base_scales

PACKAGE = "sigprop.studies"
ENTRY_POINTS = "sigprop.studies"  # the entry-point group of installed study packages
PATH_VARIABLE = "SIGPROP_STUDIES_PATH"


def _study_path() -> list[Path]:
    return [Path(d) for d in os.environ.get(PATH_VARIABLE, "").split(os.pathsep) if d]


@functools.cache
def packages() -> dict[str, str]:
    """Study kind -> the module of its package: this package's studies, then the installed
    distributions' entry points (group :data:`ENTRY_POINTS`), then the packages in the folders
    of :data:`PATH_VARIABLE`.  Packages starting with ``_`` are skipped.

    Raises ValueError when two places declare the same kind (naming both)."""
    pkg = importlib.import_module(PACKAGE)
    found = {
        m.name: (f"{PACKAGE}.{m.name}", "sigprop/studies")
        for m in pkgutil.iter_modules(pkg.__path__)
        if m.ispkg and not m.name.startswith("_")
    }

    def add(kind: str, module: str, where: str) -> None:
        if kind in found and found[kind][0] != module:
            raise ValueError(
                f"study kind {kind!r} is declared twice: {found[kind][1]} "
                f"({found[kind][0]}) and {where} ({module})"
            )
        found[kind] = (module, where)

    for ep in importlib.metadata.entry_points(group=ENTRY_POINTS):
        dist = getattr(ep.dist, "name", "?")
        add(ep.name, ep.value.split(":")[0], f"the entry point of distribution {dist}")
    for folder in _study_path():
        if not folder.is_dir():
            raise ValueError(f"{PATH_VARIABLE}: {folder} is not a folder")
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
        for m in pkgutil.iter_modules([str(folder)]):
            if m.ispkg and not m.name.startswith("_"):
                add(m.name, m.name, f"{PATH_VARIABLE} folder {folder}")
    return {k: found[k][0] for k in sorted(found)}


def kinds() -> tuple[str, ...]:
    """Names of every study package (sorted), wherever it was found (:func:`packages`)."""
    return tuple(packages())


def module_of(kind: str) -> str:
    """The module of study ``kind``'s package (``sigprop.studies.<kind>`` for this package's)."""
    if kind not in packages():
        raise KeyError(f"unknown study kind '{kind}' (known: {', '.join(kinds())})")
    return packages()[kind]


def is_external(kind: str) -> bool:
    """Whether study ``kind`` lives outside this package."""
    return not module_of(kind).startswith(PACKAGE + ".")


def spec(kind: str) -> StudySpec:
    """The declaration of study ``kind``."""
    mod = importlib.import_module(module_of(kind))
    s = getattr(mod, "SPEC", None)
    if not isinstance(s, StudySpec):
        raise TypeError(f"{mod.__file__}: a study package must define SPEC = StudySpec(...)")
    return s


def study_file(kind: str) -> Path | None:
    """The study file kept in study ``kind``'s package (``study.yaml`` beside its
    ``__init__.py``), None when it has none (this package's studies keep theirs under
    ``config/studies/``)."""
    found = importlib.util.find_spec(module_of(kind))
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(list(found.submodule_search_locations)[0]) / "study.yaml"
    return path if path.is_file() else None


@functools.cache
def declared_papers() -> dict[str, dict]:
    """Paper id -> ``{"citation", "title"}`` of the papers that study packages found outside
    this package declare (``PAPER = {"id", "citation", "title"}`` in their ``__init__.py``);
    :func:`sigprop.papers.known` merges them with this package's papers.  Read once per process
    (the report asks for a paper's title once per figure and claims page).

    Raises ValueError for a declaration without its keys or two that differ."""
    out: dict[str, dict] = {}
    for kind in kinds():
        if not is_external(kind):
            continue
        mod = importlib.import_module(module_of(kind))
        decl = getattr(mod, "PAPER", None)
        if decl is None:
            continue
        missing = {"id", "citation", "title"} - set(decl)
        if missing:
            raise ValueError(f"{mod.__file__}: PAPER lacks {sorted(missing)}")
        pid, entry = str(decl["id"]), {"citation": decl["citation"], "title": decl["title"]}
        if out.get(pid, entry) != entry:
            raise ValueError(
                f"{mod.__file__}: PAPER {pid!r} differs from another study's "
                f"declaration ({out[pid]})"
            )
        out[pid] = entry
    return out


def part(kind: str, module: str) -> ModuleType:
    """One of a study's code modules (``measure``, ``theory``, ``figures``, ``claims``,
    ``tables``), imported on demand."""
    base = module_of(kind)
    try:
        return importlib.import_module(f"{base}.{module}")
    except ModuleNotFoundError as e:
        if e.name == f"{base}.{module}":
            raise ModuleNotFoundError(
                f"study '{kind}' has no module '{module}.py' (the contract: sigprop/contract.py)"
            ) from None
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
        params_module.parse(s.section_type(section), merged, section)
        for name in base_scales(scale):  # a ladder rung: the quick scale's, then its own
            over = (scales.get(name) or {}).get(section)
            if over is not None:
                params_module.parse(s.section_type(section), over, f"scales.{name}.{section}")
                merged = params_module.merge(merged, over)
        if smoke_cfg.get(section) is not None:
            params_module.parse(
                s.section_type(section), smoke_cfg[section], f"scales.{scale}.smoke.{section}"
            )
            merged = params_module.merge(merged, smoke_cfg[section])
        out[section] = params_module.parse(s.section_type(section), merged, section)
    return Params(study=study_cfg.get("name", kind), **out)


def job_params(kind: str, params_json: str) -> Params:
    """A job's :class:`~sigprop.contract.Params` from the JSON the rule passed."""
    return Params.from_json(spec(kind), params_json)


def takes_layers(fn) -> bool:
    """Whether a figure or claims function takes the prune stage's per-layer reports."""
    return "layers" in inspect.signature(fn).parameters


# the package modules each workflow step runs, beside its study's own parts ({study} below: the
# module of the study's package, or for a paper's steps of each of its studies' packages, whose
# declarations the front page reads by name); the step's glue module (sigprop.steps.shards / sigprop.steps.analysis) is
# part of its code too
STEP_CODE = {
    "prepare": ("sigprop.data.prepare",),
    "init": ("sigprop.steps.shards", "sigprop.train.engine"),
    "prune": ("sigprop.steps.shards", "sigprop.prune.stage"),
    "train": ("sigprop.steps.shards", "sigprop.train.engine", "sigprop.prune.stage"),
    "measure": ("sigprop.steps.shards", "{study}.measure"),
    "merge": ("sigprop.steps.analysis", "sigprop.tables"),
    "theory": ("sigprop.steps.analysis", "{study}.theory"),
    "figure": ("sigprop.steps.analysis", "{study}.figures"),
    "claims": ("sigprop.steps.analysis", "{study}.claims", "{study}.analysis"),
    "table": ("sigprop.steps.analysis", "{study}.tables"),
    "scales": ("sigprop.steps.analysis",),
    "ladder": ("sigprop.steps.analysis", "sigprop.claims.trend", "sigprop.figures.ladder"),
    "paper": ("sigprop.steps.analysis", "sigprop.papers", "{study}"),
}


@functools.cache
def step_code(step: str, kind: str | tuple[str, ...] | None = None) -> str:
    """A digest of the code that determines a step's output: the modules of :data:`STEP_CODE`
    and everything of the package they use (:func:`code_digest`).  ``kind`` fills ``{study}``
    with its package (:func:`module_of`): the study's kind, or for a paper's steps the kinds of the paper's studies (a tuple).  The
    rules pass the digest as a param, so editing a study's ``claims.py`` reruns its claims and
    what reads them, editing the trainer reruns the training shards, and nothing else reruns.
    Read once per process: an edit takes effect at the next ``snakemake`` call.

    Raises KeyError for an unknown step or study kind, ValueError when the step runs a study's
    module and ``kind`` is None."""
    if step not in STEP_CODE:
        raise KeyError(f"unknown step {step!r} (known: {', '.join(STEP_CODE)})")
    given = (kind,) if isinstance(kind, str) else tuple(kind or ())
    for k in given:
        if k not in kinds():
            raise KeyError(f"step {step!r}: unknown study kind {k!r} (known: {', '.join(kinds())})")
    names = []
    for m in STEP_CODE[step]:
        if "{study}" not in m:
            names.append(m)
        elif kind is None:
            raise ValueError(f"step {step!r} runs a study's module ({m}): give the study's kind")
        else:
            names += [m.format(study=module_of(k)) for k in given]
    return code_digest(*names)


# -- the code a job's output depends on ----------------------------------------------------------
#
# A step's code is its modules and every module of the package they use, read from the sources:
# imports (at the top or inside functions, with the parent packages whose __init__ an import
# runs) and modules named in a "module:function" string (a function loaded by name at run time,
# as sigprop.papers.TABLES names the paper tables).  The study parts the registry loads by kind
# are named by STEP_CODE itself; tests/test_step_code.py checks that every other
# importlib.import_module in the package is one of these.
#
# The digest is taken over each module's syntax tree (ast.dump: no comments, no line numbers),
# less what no step reads:
# - docstrings and other statements that are only a string;
# - text for readers (_TEXT_ARGS): a figure's caption (the figure rule passes it to its job as a
#   param, rules/common.smk figure_caption), a study's `source` and a parameter's `doc` (both
#   shown by `sigprop params`), when written as text: string literals and names; and a
#   module-level name bound to text that is read only there, by no module of the step (not
#   imported, named as an attribute or as a string by any of them).  A study's SOURCE is
#   therefore part of its claims step's code (claims.py imports it for the claim rows) and of no
#   shard's.
# So a comment, a docstring, a caption or a change of layout (blank lines, line breaks) reruns no
# job (a caption reruns its figure, through the param).  The digest depends on Python's version
# (the shape of its syntax trees): a new interpreter reruns every job once.

_ROOT = Path(__file__).resolve().parent  # the sigprop package
_BY_NAME = re.compile(r"(sigprop(?:\.\w+)+):\w+")  # a "module:function" string
# function of the package -> (positions, keywords) of its arguments that hold text for readers
# (captions, sources, parameter docs), which no step reads
_TEXT_ARGS = {
    "sigprop.contract.Figure": ({1}, {"caption"}),
    "sigprop.contract.StudySpec": (set(), {"source"}),
    "sigprop.params.param": (set(), {"doc"}),
}


@functools.cache
def _roots() -> dict[str, Path]:
    """Top-level package -> its folder: this package and every study package's found outside
    it (:func:`packages`), whose code is part of its steps' code as this package's is."""
    roots = {_ROOT.name: _ROOT}
    for module in packages().values():
        top = module.split(".")[0]
        if top not in roots:
            found = importlib.util.find_spec(top)
            if found is not None and found.submodule_search_locations:
                roots[top] = Path(list(found.submodule_search_locations)[0])
            elif found is not None and found.origin:
                roots[top] = Path(found.origin).with_suffix("")
    return roots


def _module_file(name: str) -> Path | None:
    """The source file of module ``name`` of this package (``sigprop.x.y``) or of a study
    package found outside it, None if none."""
    parts = name.split(".")
    root = _roots().get(parts[0])
    if root is None:
        return None
    base = root.joinpath(*parts[1:])
    for f in (base / "__init__.py", base.with_suffix(".py")):
        if f.is_file():
            return f
    return None


def _is_text(node) -> bool:
    """Whether an expression is text: string literals (also f-strings of names), names, and
    sums of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(
            isinstance(v, ast.Constant)
            or (
                isinstance(v, ast.FormattedValue)
                and isinstance(v.value, ast.Name)
                and v.format_spec is None
            )
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_text(node.left) and _is_text(node.right)
    return False


def _only_a_string(stmt) -> bool:
    """A statement that is only a string: a docstring, or a string used as a comment."""
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


_TEXT = ast.Constant(value="<text for readers>")
_STAR = ("*",)  # what a star import (``from m import *``) mentions: every name


def _from(package: str, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` in a module of ``package`` imports from."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _text_functions(tree: ast.Module, package: str) -> dict[str, str]:
    """Local name -> function of :data:`_TEXT_ARGS`, as the module imports them at its top."""
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom):
            mod = _from(package, stmt)
            for a in stmt.names:
                if f"{mod}.{a.name}" in _TEXT_ARGS:
                    out[a.asname or a.name] = f"{mod}.{a.name}"
    return out


def _blank_call(node: ast.Call, functions: dict[str, str]) -> None:
    """Replace the text arguments (:data:`_TEXT_ARGS`) of a call of one of ``functions`` (local
    name -> function) by one placeholder."""
    f = node.func
    if isinstance(f, ast.Name) and f.id in functions:
        positions, keywords = _TEXT_ARGS[functions[f.id]]
        node.args = [
            _TEXT if i in positions and _is_text(a) else a for i, a in enumerate(node.args)
        ]
        for k in node.keywords:
            if k.arg in keywords and _is_text(k.value):
                k.value = _TEXT


def _text_binding(stmt) -> str | None:
    """The name a module-level statement binds to text (``SOURCE = "Fig. 1"``), else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        target = stmt.target
    else:
        return None
    value = stmt.value
    if not (isinstance(target, ast.Name) and _is_text(value)):
        return None
    literal = any(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in ast.walk(value))
    return target.id if literal else None


@dataclass(frozen=True)
class _Module:
    """What the digests need of one module (:func:`_read`)."""

    imports: tuple[str, ...]  # modules of the package it uses (:func:`_imports`)
    mentions: frozenset[str]  # names it could read from another module
    text_names: frozenset[str]  # module-level names bound to text it reads nowhere else
    digest: str  # SHA-256 of its code (no blanked names)


def _code(name: str, blank: frozenset[str] = frozenset()):
    """Module ``name``'s syntax tree less statements that are only a string and text for
    readers (also the values of the module-level names ``blank``), and, read from it: the
    modules it names (imports and "module:function" strings, unresolved), the names it could
    read from another module (names imported from one, :data:`_STAR` for a star import,
    attribute names and string constants, as ``getattr`` takes), and the names it reads."""
    f = _module_file(name)
    tree = ast.parse(f.read_text(), str(f))
    package = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
    functions = _text_functions(tree, package)
    modules, mentions, read = set(), set(), set()
    todo = [tree]
    while todo:
        node = todo.pop()
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if type(stmts) is list:
                stmts[:] = [s for s in stmts if not _only_a_string(s)]
        if isinstance(node, ast.Call):
            _blank_call(node, functions)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                read.add(node.id)
        elif isinstance(node, ast.Attribute):
            mentions.add(node.attr)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                mentions.add(node.value)
                by_name = _BY_NAME.fullmatch(node.value)
                if by_name:
                    modules.add(by_name.group(1))
        elif isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = _from(package, node)
            modules.add(mod)
            modules.update(f"{mod}.{a.name}" for a in node.names)  # submodules named in the list
            mentions.update(_STAR if a.name == "*" else a.name for a in node.names)
        todo.extend(ast.iter_child_nodes(node))
    for stmt in tree.body:
        if blank and _text_binding(stmt) in blank:
            stmt.value = _TEXT
    return tree, modules, mentions, read


@functools.cache
def _read(name: str) -> _Module:
    """:class:`_Module` of module ``name`` (read once per process)."""
    tree, modules, mentions, read = _code(name)
    parts = name.split(".")
    modules.update(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages
    imports = tuple(sorted(m for m in modules if m != name and _module_file(m) is not None))
    bound = {_text_binding(s) for s in tree.body} - {None}
    return _Module(imports, frozenset(mentions), frozenset(bound - read), _dump_digest(tree))


def _dump_digest(tree: ast.Module) -> str:
    import hashlib

    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


@functools.cache
def _module_digest(name: str, blank: frozenset[str]) -> str:
    """SHA-256 of module ``name``'s code: its syntax tree (:func:`_code`, with the values of the
    module-level names ``blank`` blanked too) dumped without positions."""
    return _read(name).digest if not blank else _dump_digest(_code(name, blank)[0])


def _imports(name: str) -> tuple[str, ...]:
    """The package's modules that module ``name`` uses: those it imports (at the top or inside
    functions), its parent packages (importing a module runs their ``__init__``), and those
    named in its "module:function" strings (loaded by name, :data:`sigprop.papers.TABLES`)."""
    return _read(name).imports if _module_file(name) is not None else ()


def module_closure(*names: str) -> tuple[str, ...]:
    """``names`` and every module of the package they use, transitively (:func:`_imports`:
    imports, also inside functions, and "module:function" strings; the study parts the
    registry loads by kind are not followed, :data:`STEP_CODE` names them)."""
    seen, todo = set(), [n for n in names if _module_file(n) is not None]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(_imports(n))
    return tuple(sorted(seen))


def code_digest(*names: str) -> str:
    """A digest of the code of ``names`` and everything of the package they use
    (:func:`module_closure`), comments, docstrings and text for readers left out (see the
    notes above :data:`_TEXT_ARGS`): a job whose code changed has another digest, so a rule that
    passes it as a param reruns (Snakemake's rerun trigger on params)."""
    import hashlib

    mods = module_closure(*names)
    mentioned = frozenset().union(*(_read(m).mentions for m in mods))
    h = hashlib.sha256()
    for n in mods:
        # module-level text that no module of the step mentions; none when one imports with *
        blank = frozenset() if _STAR in mentioned else _read(n).text_names - mentioned
        h.update(f"{n}\0{_module_digest(n, blank)}\0".encode())
    return h.hexdigest()[:16]
