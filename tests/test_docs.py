"""Docs that must match the code: config/README.md (every config key, run field and study
parameter), the papers' citations, and the README's layout."""

from __future__ import annotations

import ast
import re

import pytest
import yaml
from conftest import REPO

from sigprop import papers
from sigprop.runs import RUN_FIELDS

CONFIG_README = (REPO / "config/README.md").read_text()


def test_config_readme_names_every_config_key():
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    keys = list(schema["properties"])
    keys += [f"data.{k}" for k in schema["properties"]["data"]["properties"]]
    missing = [k for k in keys if k != "data" and f"`{k}`" not in CONFIG_README]
    assert not missing, missing


def test_config_readme_names_every_study_key_and_run_field():
    schema = yaml.safe_load((REPO / "workflow/schemas/study.schema.yaml").read_text())
    keys = [k for k in schema["properties"] if k != "scales"]
    keys += list(schema["$defs"]["scale"]["properties"])
    keys += list(schema["$defs"]["scale"]["properties"]["blocks"]["items"]["properties"])
    keys += list(
        schema["$defs"]["scale"]["properties"]["blocks"]["items"]["properties"]["derived"][
            "properties"
        ]
    )
    keys += list(RUN_FIELDS)
    missing = sorted({k for k in keys if not re.search(rf"[`.]{re.escape(k)}\b", CONFIG_README)})
    assert not missing, missing


def test_config_readme_parameter_tables_match_the_code():
    from sigprop.tools.params_doc import params_text

    m = re.search(r"<!-- params:start -->\n(.*)<!-- params:end -->", CONFIG_README, re.S)
    assert m, "config/README.md lost its params markers"
    assert m.group(1) == params_text(markdown=True), (
        "config/README.md is stale: regenerate its study parameters with `sigprop params --write`"
    )


def test_papers_doc_lists_each_citation():
    doc = (REPO / "docs/papers.md").read_text()
    for prefix, ident in papers.IDENTIFIERS.items():
        row = next((ln for ln in doc.splitlines() if ln.startswith(f"| {prefix} |")), "")
        assert ident in row, (prefix, ident)


PREFIX_CITE = re.compile(
    r"\b(00[0-4])(?:'s)? (?:Eqs?\.|Figs?\.|Secs?\.|§|Thms?\.|Tables?|Props?\.|"
    r"Def\.|Alg\.|Cor\.|Lemma|Appendix|App\.)"
)


def _modules():
    return sorted(p for p in (REPO / "sigprop").rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_a_module_that_cites_a_paper_names_it_in_its_docstring(path):
    """``000 Eq. 2`` in a module means the module's docstring names paper 000 in full (its
    arXiv id, or the DOI of 002), and nothing cites a file outside the repository."""
    text = path.read_text()
    assert (
        "shared/seeds" not in text
        and "../shared" not in text
        and not re.search(r"00[0-4]_[0-9a-f]{16}\.txt", text)
    ), f"{path}: cites a file outside the repository; cite the paper (docs/papers.md)"
    cited = sorted(set(PREFIX_CITE.findall(text)))
    if not cited:
        return
    doc = ast.get_docstring(ast.parse(text)) or ""
    missing = [c for c in cited if papers.IDENTIFIERS[c] not in doc]
    assert not missing, (
        f"{path.relative_to(REPO)} cites paper(s) {missing} but its module "
        f"docstring does not name them ({[papers.CITATIONS[c] for c in missing]})"
    )


def test_params_write_replaces_the_block_in_place(tmp_path, capsys):
    from sigprop.cli import main
    from sigprop.tools.params_doc import params_text

    f = tmp_path / "README.md"
    f.write_text("head\n<!-- params:start -->\nold tables\n<!-- params:end -->\ntail\n")
    assert main(["params", "--write", str(f)]) == 0
    assert f.read_text() == (
        "head\n<!-- params:start -->\n" + params_text(markdown=True) + "<!-- params:end -->\ntail\n"
    )
    assert main(["params", "--write", str(f)]) == 0
    assert "already up to date" in capsys.readouterr().err
    f.write_text("no markers\n")
    assert main(["params", "--write", str(f)]) == 2
    assert f"{f}: no <!-- params:start -->" in capsys.readouterr().err
