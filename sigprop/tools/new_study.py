"""``sigprop new-study NAME --paper ID``: the skeleton of a study kept outside this repository.

It writes a distribution folder ``<dest>/<NAME>/`` that ``pip install -e`` installs:

- ``pyproject.toml``, declaring the package under the entry-point group ``sigprop.studies``
  (:data:`sigprop.registry.ENTRY_POINTS`), so the workflow finds the study once installed;
- ``<NAME>/``: the template study's package (``sigprop/studies/template/``: the length of the
  signal by layer against the length map of Huang, Xu, Du, Zeng, Zhao 2019, arXiv:1912.09132,
  Eq. 2) with its imports made absolute, its paper declared as ``PAPER`` in ``__init__.py`` and
  its study file ``study.yaml`` beside the code (name and paper set to the new ones).

Then ``snakemake --config 'studies=[NAME]'`` runs it with the same rules, and the report files
its figures and claims under its paper (docs/adding-a-study.md).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

COMMANDS = ("new-study",)
TEMPLATE = Path(__file__).resolve().parents[1] / "studies" / "template"
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
PAPER_ID = re.compile(r"^[0-9]{3}$")

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "A sigprop study of paper {paper}"
requires-python = ">=3.11"
dependencies = ["sigprop"]

[project.entry-points."sigprop.studies"]
{name} = "{name}"

[tool.setuptools]
packages = ["{name}"]

[tool.setuptools.package-data]
{name} = ["study.yaml"]
"""


def absolute_imports(source: str) -> str:
    """A template module's text with its imports of sigprop made absolute (``from ...x`` ->
    ``from sigprop.x``); imports within the study package (``from .x``) stay relative."""
    source = re.sub(r"from \.\.\. import ", "from sigprop import ", source)
    return re.sub(r"from \.\.\.(\w)", r"from sigprop.\1", source)


def study_text(template: str, name: str, paper: str, title: str) -> str:
    """The template's study file with the new study's name, paper and title."""
    out = []
    for line in template.splitlines():
        key = line.split(":", 1)[0]
        if key == "name":
            line = f"name: {name}"
        elif key == "paper":
            line = f'paper: "{paper}"'
        elif key == "title":
            line = f"title: {title}"
        elif line.startswith('  "*": "exact: 000 Eq. 2'):
            line = (
                '  "*": "ours: TODO: where the tolerance of each claim comes from (paper: for '
                "one your paper states; ours: for the project's choice)\""
            )
        elif line.startswith("#"):
            continue  # the template's own header
        out.append(line)
    header = (
        f"# Study {name} of paper {paper}, written by `sigprop new-study` from the template "
        "study;\n# edit the sections, grids and claims for your paper.\n"
    )
    return header + "\n".join(out) + "\n"


def write_study(
    name: str, paper: str, dest: str | Path = ".", citation: str = "", title: str = ""
) -> Path:
    """Write the distribution folder ``<dest>/<name>/`` (see the module's docstring) and return
    it.  Raises ValueError for a bad name or paper id and FileExistsError when the folder is
    there already (nothing is overwritten)."""
    if not NAME.match(name):
        raise ValueError(
            f"study name {name!r}: use lower-case letters, digits and _, starting with a letter"
        )
    if not PAPER_ID.match(paper):
        raise ValueError(f"paper id {paper!r}: three digits, e.g. 900")
    root = Path(dest) / name
    if root.exists():
        raise FileExistsError(f"{root} exists: choose another name or folder")
    pkg = root / name
    pkg.mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(name=name, paper=paper))
    title = title or f"{name} (paper {paper})"
    citation = citation or f"paper {paper}: authors (year), arXiv id"
    for src in sorted(TEMPLATE.glob("*.py")):
        text = absolute_imports(src.read_text())
        if src.name == "__init__.py":
            text = text.replace(
                "Template study: copy this package to start a new one (docs/adding-a-study.md).",
                f"Study {name} of paper {paper}, from sigprop's template study.",
            )
            text = text.replace(
                '\nSOURCE = "000 Eq. 2 (keep rate 1)"\n',
                "\n# the item of your paper that the claim tests: the template's claim is 000's length\n"
                "# map (Eq. 2), so replace the measurement, theory and claim with your paper's\n"
                f'SOURCE = "{paper} TODO: the equation or figure of paper {paper} the claim tests"\n'
                f'PAPER = {{\n    "id": {json.dumps(paper)},\n'
                f'    "citation": {json.dumps(citation, ensure_ascii=False)},\n'
                f'    "title": {json.dumps(title, ensure_ascii=False)},\n}}\n',
            )
        (pkg / src.name).write_text(text)
    (pkg / "study.yaml").write_text(
        study_text((TEMPLATE / "study.yaml").read_text(), name, paper, title)
    )
    return root


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "new-study",
        help="write the skeleton of a study kept outside this repository",
        description="Write <dest>/NAME/: an installable study package (the template study, "
        "its paper declared, its study file beside the code). Install it with "
        "`pip install -e <dest>/NAME` and run it with "
        "`snakemake --config 'studies=[NAME]'`.",
    )
    p.add_argument("name", help="the study's name (its kind)")
    p.add_argument("--paper", required=True, help="the paper's id, three digits (e.g. 900)")
    p.add_argument("--dest", default=".", help="folder to write the distribution in")
    p.add_argument("--citation", default="", help="how the paper is cited in full")
    p.add_argument("--title", default="", help="the paper's title in the report")
    p.set_defaults(func=_run)


def _run(args: dict) -> int:
    try:
        root = write_study(
            args["name"], args["paper"], args["dest"], args["citation"], args["title"]
        )
    except (ValueError, FileExistsError) as e:
        print(f"sigprop new-study: {e}", file=sys.stderr)
        return 2
    print(
        f"wrote {root}\nnext: pip install -e {root}  &&  "
        f"snakemake --config 'studies=[{args['name']}]'"
    )
    return 0
