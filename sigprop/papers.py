"""The five papers: one place for their titles and the paper-level tables built from claims.

A paper's study is the set of configured studies whose config says ``paper: "<id>"``;
the workflow merges their claims into ``results/papers/<id>/claims.{parquet,html}``,
files their figures under the paper in the report, and builds the paper's tables
(``TABLES``) from the merged claims.
"""

from __future__ import annotations

import importlib

# One entry per paper: how code and docs cite it in full (docs/papers.md shows the same;
# tests/test_docs.py) and the title the report and summaries show.  Adding a paper is adding
# its entry here (docs/adding-a-study.md, "A study of a new paper").
PAPERS = {
    "000": {
        "citation": "Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132",
        "title": "Huang et al., Mean field theory for deep dropout networks",
    },
    "001": {
        "citation": "Littwin, Wolf (2020), arXiv:2001.10460",
        "title": "Littwin & Wolf, Residual tangent kernels",
    },
    "002": {
        "citation": "Baldi, Sadowski (2014), doi:10.1016/j.artint.2014.02.004",
        "title": "Baldi & Sadowski, The dropout learning algorithm",
    },
    "003": {
        "citation": "Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797",
        "title": "Hayou et al., Robust pruning at initialization",
    },
    "004": {
        "citation": "Chen, Wang, Zhao, Papailiopoulos, Koutris (2018), arXiv:1806.03791",
        "title": "Chen et al., The effect of network width on large-batch training",
    },
}
CITATIONS = {k: v["citation"] for k, v in PAPERS.items()}
# the identifier a module's docstring must name when it cites the paper by its prefix
IDENTIFIERS = {k: v.rsplit(", ", 1)[1] for k, v in CITATIONS.items()}
TITLES = {k: f"{k} {v['title']}" for k, v in PAPERS.items()}

# paper -> {table name: "module:function"}; the function maps the paper's merged
# claims to named DataFrames; the first is the table's CSV, all go to its Markdown.
TABLES = {
    "000": {"table1": "sigprop.claims.depth_scales:table1"},
    "003": {"table7": "sigprop.claims.critical_sparsity:table7"},
}


def known(declared: dict | None = None) -> dict[str, dict]:
    """:data:`PAPERS` and ``declared``, the papers that study packages outside this package
    declare (:func:`sigprop.registry.declared_papers`).

    Raises ValueError when a declaration gives one of :data:`PAPERS` other text."""
    out = dict(PAPERS)
    for pid, entry in (declared or {}).items():
        if pid in PAPERS and PAPERS[pid] != entry:
            raise ValueError(
                f"paper {pid} is declared by a study package as {entry}, but it is {PAPERS[pid]}"
            )
        out[pid] = entry
    return out


def title(paper: str, declared: dict | None = None) -> str:
    """How the report and summaries title ``paper``: its id and title (``declared``: as for
    :func:`known`)."""
    entry = known(declared).get(paper)
    return f"{paper} {entry['title']}" if entry else f"paper {paper}"


def citation(paper: str, declared: dict | None = None) -> str:
    """How ``paper`` is cited in full ("" for an undeclared paper)."""
    return (known(declared).get(paper) or {}).get("citation", "")


def coverage_note(coverage: dict | None) -> str:
    """ "" when a run covers every study of the paper that the config file names, else what it
    covers (``coverage``: ``{"run": [...], "named": [...]}``): a paper's claims, tables,
    summary and front page built from fewer studies say so."""
    if not coverage:
        return ""
    run, named = list(coverage.get("run") or []), list(coverage.get("named") or [])
    missing = [n for n in named if n not in run]
    if not missing:
        return ""
    return (
        f"partial: this run covers {', '.join(run)}, {len(run)} of the {len(named)} studies "
        f"of this paper in the config (not run: {', '.join(missing)})"
    )


def table_function(paper: str, name: str):
    try:
        target = TABLES[paper][name]
    except KeyError:
        raise KeyError(
            f"paper {paper} has no table '{name}' (known: {sorted(TABLES.get(paper, {}))})"
        ) from None
    module, fn = target.split(":")
    return getattr(importlib.import_module(module), fn)
