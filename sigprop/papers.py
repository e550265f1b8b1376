"""The five papers: one place for their titles and the paper-level tables built from claims.

A paper's study is the set of configured studies whose config says ``paper: "<id>"``;
the workflow merges their claims into ``results/papers/<id>/claims.{parquet,html}``,
files their figures under the paper in the report, and builds the paper's tables
(``TABLES``) from the merged claims.
"""

from __future__ import annotations

import importlib

TITLES = {
    "000": "000 Huang et al., Mean field theory for deep dropout networks",
    "001": "001 Littwin & Wolf, Residual tangent kernels",
    "002": "002 Baldi & Sadowski, The dropout learning algorithm",
    "003": "003 Hayou et al., Robust pruning at initialization",
    "004": "004 Chen et al., The effect of network width on large-batch training",
}

# paper -> {table name: "module:function"}; the function maps the paper's merged
# claims to named DataFrames; the first is the table's CSV, all go to its Markdown.
TABLES = {
    "000": {"table1": "sigprop.claims.depth_scales:table1"},
    "003": {"table7": "sigprop.claims.critical_sparsity:table7"},
}


def title(paper: str) -> str:
    return TITLES.get(paper, f"paper {paper}")


def table_function(paper: str, name: str):
    try:
        target = TABLES[paper][name]
    except KeyError:
        raise KeyError(f"paper {paper} has no table '{name}' (known: {sorted(TABLES.get(paper, {}))})") from None
    module, fn = target.split(":")
    return getattr(importlib.import_module(module), fn)
