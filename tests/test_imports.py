"""The package's import graph: no cycles, dependencies pointing one way, light declarations.

Layers, bottom to top (a module may import its own layer and the ones below, never above):

1. shared: data, nets, prune, train, measure, theory, figure and claim helpers, tables, runs,
   params, contract, ...;
2. study packages ``sigprop.studies.<kind>`` (each may import only shared modules and itself);
3. the registry (``sigprop.registry``), which finds the study packages;
4. the workflow: the config loader ``sigprop.config``, the rules' steps ``sigprop.steps``, the
   command-line tools ``sigprop.tools``, the evidence publishers ``sigprop.publish`` and
   ``sigprop.cli``; the steps and the tools never import each other.

Imports are read from the source (also those inside functions), so a cycle that only bites at
run time is caught too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "sigprop"
WORKFLOW = ("sigprop.config", "sigprop.steps", "sigprop.tools", "sigprop.publish", "sigprop.cli")
REGISTRY = {"sigprop.registry"}


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """sigprop modules imported anywhere in ``path`` (resolved to the longest known module)."""
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != name and not name.startswith(t + "."):
                found.add(t)
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _study_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) >= 3 and parts[:2] == ["sigprop", "studies"] else None


def _layer(module: str) -> int:
    if any(module == w or module.startswith(w + ".") for w in WORKFLOW):
        return 4
    if module in REGISTRY:
        return 3
    if _study_of(module):
        return 2
    return 1


def test_the_graph_sees_the_packages():
    assert {"sigprop.tables", "sigprop.registry", "sigprop.config"} <= set(GRAPH)
    assert any(_study_of(m) for m in GRAPH)
    assert "sigprop.tables" in GRAPH["sigprop.steps.analysis"]


def test_the_root_shows_the_layers():
    """At most ten modules at the package's root (the shared vocabulary and the entry point);
    the rest lives in packages named for their layer or subject."""
    root = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(root) <= 10, root
    assert {"config", "steps", "tools", "studies"} <= {p.name for p in ROOT.iterdir() if p.is_dir()}


def test_no_import_cycles():
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_dependencies_point_down():
    wrong = []
    for m, deps in GRAPH.items():
        for d in deps:
            if _layer(d) > _layer(m):
                wrong.append(f"{m} (layer {_layer(m)}) imports {d} (layer {_layer(d)})")
            elif _layer(m) == 2 and _layer(d) == 2 and _study_of(d) != _study_of(m):
                wrong.append(f"study {m} imports another study's {d}")
    assert not wrong, "\n".join(sorted(wrong))


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_steps_and_tools_do_not_import_each_other():
    """What the rules run (``sigprop.steps``) and the command-line tools (``sigprop.tools``) are
    separate: neither imports the other."""
    wrong = [
        f"{m} imports {d}"
        for m, deps in GRAPH.items()
        for d in deps
        for a, b in (("sigprop.steps", "sigprop.tools"), ("sigprop.tools", "sigprop.steps"))
        if _in(m, a) and _in(d, b)
    ]
    assert not wrong, "\n".join(sorted(wrong))


def _users(module: str) -> set[str]:
    """The studies that use ``module``, directly or through other shared modules."""
    seen, todo, studies = set(), [module], set()
    while todo:
        m = todo.pop()
        for user, deps in GRAPH.items():
            if m in deps and user not in seen:
                seen.add(user)
                if _study_of(user):
                    studies.add(_study_of(user))
                else:
                    todo.append(user)
    return studies


def test_shared_measurements_serve_two_studies_or_more():
    """A module of ``sigprop.measure`` is used by at least two studies; a measurement that
    serves one study lives in that study's package."""
    single = {
        m: sorted(_users(m))
        for m in GRAPH
        if _in(m, "sigprop.measure") and m != "sigprop.measure" and len(_users(m)) < 2
    }
    assert not single, single


def test_the_checker_catches_an_upward_import(tmp_path):
    """The layering rule flags a shared module importing a study (the check can fail)."""
    fake = tmp_path / "x.py"
    fake.write_text("from sigprop.studies.meanfield_maps import analysis\n")
    deps = _imports("sigprop.tables", fake)
    assert any(_layer(d) > _layer("sigprop.tables") for d in deps)


LIGHT = """
import sys
from sigprop import registry
specs = {k: registry.spec(k) for k in registry.kinds()}
import sigprop.config, sigprop.data.catalog, sigprop.papers
heavy = sorted({'torch', 'matplotlib', 'pandas', 'sklearn'} & set(sys.modules))
print(len(specs), heavy)
"""


def test_declarations_and_dag_code_import_nothing_heavy():
    """What Snakemake imports to build the DAG (every study's declaration, the config, the data
    registry and the paper list) loads no torch, matplotlib, pandas or scikit-learn."""
    p = subprocess.run([sys.executable, "-c", LIGHT], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    n, heavy = p.stdout.strip().split(" ", 1)
    assert int(n) >= 1 and heavy == "[]", p.stdout


ALONE = """
import importlib, sys, traceback
names = sys.argv[1:]
failed = []
for name in names:
    for m in [m for m in sys.modules if m == 'sigprop' or m.startswith('sigprop.')]:
        del sys.modules[m]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ': ' + traceback.format_exc(limit=3).splitlines()[-1])
print('\\n'.join(failed))
"""


@pytest.mark.slow
def test_every_module_imports_on_its_own():
    """Each module imports first, in an interpreter where no other sigprop module is loaded
    (third-party packages stay loaded between modules, to keep this fast)."""
    names = sorted(MODULES)
    p = subprocess.run(
        [sys.executable, "-c", ALONE, *names], capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == "", p.stdout


def private_uses(path: Path) -> list[str]:
    """Names private to another module that ``path`` uses: ``from m import _x`` (not a module
    imported under a private alias, ``from . import activations as _act``), and ``m._x`` where
    ``m`` names a module imported in ``path``."""
    tree = ast.parse(path.read_text())
    modules, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for a in node.names:
                if a.name.startswith("_"):
                    found.append(f"from {'.' * node.level}{node.module or ''} import {a.name}")
                else:
                    modules.add(a.asname or a.name)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.value.id not in ("torch", "np", "os", "sys")
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    bad = {str(p.relative_to(ROOT.parent)): private_uses(p) for p in sorted(ROOT.rglob("*.py"))}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, bad


def test_the_private_name_check_catches_both_forms(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        "from . import plan as P\nfrom .bench import _data\nP._peak(1)\n"
        "from . import activations as _act\n_act.get('tanh')\n"
    )
    assert private_uses(f) == ["from .bench import _data", "P._peak"]
