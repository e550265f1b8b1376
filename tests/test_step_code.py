"""A step's code digest (``sigprop.registry.step_code``) follows the code, and only the code:
modules loaded by name are in it, comments, docstrings and text for readers (captions, a
study's source, parameter docs) are not.

The edits are made in a copy of the package, which the registry reads instead of the real one
(``registry._ROOT``), in this process; ``tests/test_code_reruns.py`` checks the same through
the workflow.
"""

from __future__ import annotations

import ast
import re
import shutil

import pytest
from conftest import REPO

from sigprop import papers, registry

KINDS = ("meanfield_maps", "trainable_depth")  # a measurement study, a training study


def _clear():
    """Empty the registry's caches (of digests and of what it read from each module)."""
    for f in vars(registry).values():
        if callable(getattr(f, "cache_clear", None)) and f is not registry.packages:
            f.cache_clear()


@pytest.fixture
def pkg(tmp_path, monkeypatch):
    """A copy of the package that the registry digests; edit its files."""
    root = tmp_path / "sigprop"
    shutil.copytree(REPO / "sigprop", root, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(registry, "_ROOT", root)
    _clear()
    yield root
    _clear()


def _digests() -> dict[str, str]:
    """Every step's digest for the two studies (a paper's steps: both of them)."""
    _clear()
    out = {}
    for step, mods in registry.STEP_CODE.items():
        for kind in KINDS:
            if step == "paper":
                out[step] = registry.step_code(step, KINDS)
            elif any("{study}" in m for m in mods) or kind == KINDS[0]:
                out[f"{step}/{kind}"] = registry.step_code(step, kind)
    return out


def _changed(before: dict, root, path: str, edit) -> list[str]:
    """The steps whose digest an edit of ``path`` changes (the file is restored after)."""
    f = root / path
    original = f.read_text()
    edited = edit(original)
    assert edited != original, f"the edit of {path} changed nothing"
    f.write_text(edited)
    try:
        after = _digests()
    finally:
        f.write_text(original)
    return sorted(k for k in before if after[k] != before[k])


def test_comments_and_docstrings_are_not_code_statements_are(pkg):
    """A comment or a docstring (the module's, a function's) in a shared module changes no
    step's digest; a statement that changes nothing at run time changes the digest of every
    step whose modules use the module, and of no other."""
    before = _digests()
    theory = "theory/meanfield.py"

    def comment(s):
        return s.replace("\n\n\n", "\n\n# a comment between two definitions\n\n", 1) + "# the end\n"

    def docstring(s):
        s = s.replace('"""', '"""Edited. ', 1)  # the module's docstring
        return re.sub(r'(\n    """)', r"\1Edited too. ", s, count=1)  # a function's

    assert _changed(before, pkg, theory, comment) == []
    assert _changed(before, pkg, theory, docstring) == []
    assert _changed(before, pkg, "tables.py", comment) == []
    assert _changed(before, pkg, "claims/render.py", docstring) == []
    # a statement is code: every step whose modules use the module
    changed = _changed(before, pkg, theory, lambda s: s + "\n_rerun_probe = None\n")
    assert {"theory/meanfield_maps", "train/meanfield_maps", "claims/trainable_depth"} <= set(
        changed
    )
    assert "prepare/meanfield_maps" not in changed
    assert _digests() == before  # the file restored: the digests are what they were


def test_captions_sources_and_parameter_docs_are_no_steps_code(pkg):
    """A caption, a study's source and a parameter's doc are read by the report and the docs,
    by no step: editing them changes no step's digest (a figure reruns through its caption
    param); a study's SOURCE, which its claims rows carry, is its claims step's code only."""
    before = _digests()
    init = "studies/meanfield_maps/__init__.py"
    assert (
        _changed(
            before,
            pkg,
            init,
            lambda s: re.sub(r'(Figure\(\s*"\w+",\s*\(?\s*")', r"\1Edited caption. ", s, count=1),
        )
        == []
    )
    assert (
        _changed(
            before,
            pkg,
            "studies/trainable_depth/__init__.py",
            lambda s: s.replace('"Accuracy after', '"Edited. Accuracy after'),
        )
        == []
    )
    assert _changed(before, pkg, init, lambda s: s.replace('doc="', 'doc="Edited. ', 1)) == []
    assert _changed(
        before, pkg, init, lambda s: s.replace('SOURCE = "', 'SOURCE = "Edited ', 1)
    ) == ["claims/meanfield_maps"]
    # what a figure shows (its claim patterns) is the study's declaration, not text: it reruns
    # what reads the declaration (the front page's links, the study's shards and analysis)
    changed = _changed(
        before, pkg, init, lambda s: re.sub(r'claims=\(\s*"', 'claims=("x*", "', s, count=1)
    )
    assert "paper" in changed and "measure/meanfield_maps" in changed
    # the text left out is read by no step: no module a step runs reads a caption, a study's
    # declared source (``spec(kind).source``; claim rows and data sets have their own) or a
    # parameter's doc (sigprop.params.describe)
    closure = set()
    for _step, mods in registry.STEP_CODE.items():
        for kind in registry.kinds():
            closure |= set(
                registry.module_closure(*(m.format(study=registry.module_of(kind)) for m in mods))
            )
    readers = []
    for name in sorted(closure):
        for node in ast.walk(ast.parse(registry._module_file(name).read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "caption":
                readers.append(f"{name}: .caption")
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "source"
                and (
                    (isinstance(node.value, ast.Call) and _callee(node.value) == "spec")
                    or (isinstance(node.value, ast.Name) and node.value.id == "SPEC")
                )
            ):
                readers.append(f"{name}: a study's .source")
            if (
                isinstance(node, ast.Call)
                and _callee(node) == "describe"
                and name != "sigprop.params"
            ):
                readers.append(f"{name}: describe()")
    assert readers == []


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def test_modules_loaded_by_name_are_in_the_digest_of_the_steps_that_load_them(pkg):
    """A paper's tables are functions named "module:function" (sigprop.papers.TABLES) and its
    front page reads its studies' declarations by name: an edit of either reruns the paper."""
    before = _digests()
    changed = _changed(
        before, pkg, "claims/depth_scales.py", lambda s: s + "\n_rerun_probe = None\n"
    )
    assert "paper" in changed and not any(
        k.startswith(("train/", "init/", "measure/")) for k in changed
    )
    closure = registry.module_closure(
        *(m.format(study="sigprop.studies.trainable_depth") for m in registry.STEP_CODE["paper"])
    )
    assert "sigprop.studies.trainable_depth" in closure
    with pytest.raises(ValueError, match="step 'paper' runs a study's module"):
        registry.step_code("paper")
    with pytest.raises(KeyError, match="unknown study kind 'nope'"):
        registry.step_code("claims", "nope")


def _study_parts() -> set[str]:
    return {
        m.rsplit(".", 1)[1]
        for mods in registry.STEP_CODE.values()
        for m in mods
        if m.startswith("{study}.")
    }


def _table_modules() -> list[str]:
    return [t.split(":")[0] for named in papers.TABLES.values() for t in named.values()]


def _rule_targets() -> list[tuple[str, str]]:
    """(step, module) of each rule that passes a step's code digest and runs a package function."""
    out = []
    for smk in sorted((REPO / "rules").glob("*.smk")):
        for block in re.split(r"\nrule ", smk.read_text()):
            code = re.search(r'code=code_of\("(\w+)"\)', block)
            target = re.search(r'run_job\(\s*log,\s*"([\w.]+):(\w+)"', block)
            if code and target:
                out.append((code.group(1), target.group(1)))
    return out


def _step_modules(step: str) -> tuple[str, ...]:
    return registry.module_closure(
        *(m.format(study="sigprop.studies.trainable_depth") for m in registry.STEP_CODE[step])
    )


# every place in the package that imports a module by name -> why the module it imports is in
# the digest of the steps that run it, checked
BY_NAME = {
    ("sigprop.papers", "table_function"):  # the paper tables' "module:function" strings
    lambda: all(m in registry.module_closure("sigprop.papers") for m in _table_modules()),
    ("sigprop.registry", "spec"):  # a study's declaration, read by a paper's front
    lambda: "{study}" in registry.STEP_CODE["paper"],
    ("sigprop.registry", "part"):  # a study's parts, each named by its step
    lambda: _study_parts() >= {"measure", "theory", "figures", "claims", "tables"},
    ("sigprop.steps.workers", "step_function"):  # the rules' run_job targets
    lambda: (
        len(_rule_targets()) >= 10
        and all(mod in _step_modules(step) for step, mod in _rule_targets())
    ),
    ("sigprop.registry", "packages"):  # the sigprop.studies package: names, no code
    lambda: True,
    ("sigprop.registry", "declared_papers"):  # a study package's PAPER, read by a paper's steps
    lambda: "{study}" in registry.STEP_CODE["paper"],
    ("sigprop.steps.workers", "preload"):  # the worker server's imports: makes no output
    lambda: True,
    ("sigprop.cli", "build_parser"):  # the command line's modules: no step
    lambda: True,
    ("sigprop.tools.theory_cli", "theory_commands"):  # the theory commands: no step
    lambda: True,
}


class _Sites(ast.NodeVisitor):
    """(module, innermost enclosing function or <module>) of each import_module/__import__."""

    def __init__(self, module: str):
        self.module, self.where, self.sites = module, ["<module>"], set()

    def visit_FunctionDef(self, node):
        self.where.append(node.name)
        self.generic_visit(node)
        self.where.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node):
        if _callee(node) in ("import_module", "__import__"):
            self.sites.add((self.module, self.where[-1]))
        self.generic_visit(node)


def _by_name_sites() -> set[tuple[str, str]]:
    sites = set()
    for f in sorted((REPO / "sigprop").rglob("*.py")):
        mod = ".".join(f.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        v = _Sites(mod)
        v.visit(ast.parse(f.read_text()))
        sites |= v.sites
    return sites


def test_every_module_loaded_by_name_is_followed():
    """Each importlib.import_module in the package is a known place (a new one fails here until
    it is classified), and the module each one loads is in the code of the steps that run it."""
    assert _by_name_sites() == set(BY_NAME)
    failed = [site for site, check in BY_NAME.items() if not check()]
    assert failed == []


def test_the_rerun_tables_edits_apply_and_its_text_edits_are_no_code(pkg):
    """The edits that docs/design.md's rerun table is measured with (sigprop.tools.rerun_table)
    apply to the files they name and leave valid Python; those that change only text change no
    step's digest but the claims' (a study's SOURCE), the statements change some."""
    from sigprop.tools import rerun_table as R

    before = _digests()
    for label, rel, edit in R.PROBES:
        original = (REPO / rel).read_text()
        assert edit(original) != original, label
        ast.parse(edit(original))
        if edit is R._statement:
            continue
        changed = _changed(before, pkg, rel.removeprefix("sigprop/"), edit)
        assert changed == (["claims/trainable_depth"] if edit is R._source else []), label
    assert _changed(before, pkg, "claims/render.py", R._statement)
    stats = "Job stats:\njob       count\n------  -----\nfigure    2\nall       1\ntotal     3\n"
    assert R.planned(stats) == {"figure": 2} and R.planned("Nothing to be done.") == {}
    assert (
        R.markdown([("`x.py`", {"figure": 2, "claims": 1})]).splitlines()[-1]
        == "| `x.py` | figure 2, claims 1 | 3 |"
    )
