"""Hayou et al. 2021 (arXiv:2002.08797) Tables 1, 2, 9 and, at paper scale, 3, 4, 5: our mean ± std
over seeds beside the paper's transcribed numbers (``analysis.paper_numbers``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import TABLES
from .analysis import GROUP, METHOD_ORDER, accuracy_table


def paper_numbers(p) -> pd.DataFrame:
    """The transcribed reference values: table, dataset, activation, net, method, sparsity,
    paper_mean, paper_std (003 Tables 1-5, 9; file ``analysis.paper_numbers``)."""
    import yaml

    rel = p.analysis.paper_numbers
    path = Path(rel)
    if not path.exists():  # the workflow runs in its working copy; tests run anywhere
        path = Path(__file__).resolve().parents[3] / rel
    rows = []
    for r in yaml.safe_load(path.read_text())["rows"]:
        for s, (m, sd) in r["acc"].items():
            rows.append(
                {
                    "table": str(r["table"]),
                    "dataset": r["dataset"],
                    "activation": r["activation"],
                    "net": r["net"],
                    "method": r["method"],
                    "sparsity": round(float(s), 6),
                    "paper_mean": float(m),
                    "paper_std": np.nan if sd is None else float(sd),
                }
            )
    return pd.DataFrame(rows)


TABLE_SPECS = {
    # table id: (methods shown, sparsities shown (None: all measured), title)
    "1": (
        ["SNIP", "SBP-SR"],
        None,
        "003 Table 1: test accuracy (%) of SNIP and SBP-SR on ResNets, CIFAR-10",
    ),
    "2": (
        METHOD_ORDER,
        None,
        "003 Table 2: test accuracy (%) after pruning, CIFAR-10 and CIFAR-100",
    ),
    "9": (["SNIP", "SBP-SR"], None, "003 Table 9: test accuracy (%) with ReLU and tanh, CIFAR-10"),
    "3": (
        ["SBP-SR", "SNIP", "GraSP", "SynFlow"],
        None,
        "003 Table 3: test accuracy (%) on Tiny ImageNet, ResNet32/50/104",
    ),
    "4": (
        ["Ordered phase Init", "EOC Init", "EOC + ReScaling"],
        None,
        "003 Table 4: test accuracy (%) of tanh V-CNN on MNIST, SNIP at 50% sparsity",
    ),
    "5": (
        ["SNIP", "SynFlow", "EOC + ReScaling"],
        None,
        "003 Table 5: test accuracy (%) of VGG16 and 3xVGG16 on CIFAR-10",
    ),
}
# Tables 3-5 exist at paper scale only (Tiny ImageNet, MNIST V-CNN, CIFAR-10 VGG): their rows
# are selected by these (data set, nets) and listed with every paper cell, ours or not.
PAPER_SCALE_TABLES = {
    "3": ("tiny_imagenet", ("resnet32", "resnet50", "resnet104")),
    "4": ("mnist", ("vcnn10", "vcnn50", "vcnn100")),
    "5": ("cifar10", ("vgg16", "vgg16x3")),
}


def paper_table(acc: pd.DataFrame, paper: pd.DataFrame, table: str) -> pd.DataFrame:
    """One of 003's Tables 1 / 2 / 9 from :func:`accuracy_table`: our cells (activation ReLU
    only for Tables 1-2) with the paper's mean/std beside them where the paper gives the cell
    (matched on data set, activation, net, method, sparsity; NaN otherwise)."""
    methods, _, _ = TABLE_SPECS[table]
    ours = acc[acc.method.isin(methods)]
    if table in ("1", "2"):
        ours = ours[ours.activation == "relu"]
    p = paper[paper.table == table].drop(columns="table")
    if table in PAPER_SCALE_TABLES:
        dataset, nets = PAPER_SCALE_TABLES[table]
        ours = ours[(ours.dataset == dataset) & ours.net.isin(nets)]
        out = ours.merge(p, on=GROUP, how="outer")
        out["n"] = out["n"].fillna(0).astype("int64")
        order = {m: i for i, m in enumerate(methods)}
        out = out.sort_values(
            ["net", "method", "sparsity"],
            key=lambda c: (
                c.map(order)
                if c.name == "method"
                else (c.map({n: i for i, n in enumerate(nets)}) if c.name == "net" else c)
            ),
            ignore_index=True,
        )
    else:
        out = ours.merge(p, on=GROUP, how="left")
    out.insert(0, "table", table)
    return out


def build_tables(runs: pd.DataFrame, p) -> dict[str, pd.DataFrame]:
    """Tables 1, 2, 9, 3, 4 and 5 as DataFrames (one per table id)."""
    acc, paper = accuracy_table(runs), paper_numbers(p)
    return {t: paper_table(acc, paper, t) for t in TABLE_SPECS}


if list(TABLES) != [f"table{t}" for t in TABLE_SPECS]:
    raise RuntimeError("pruning_resnet: SPEC.tables and TABLE_SPECS name different tables")


def build_table(name: str, runs: pd.DataFrame, p) -> tuple[pd.DataFrame, str]:
    """One of ``SPEC.tables`` (``table1`` ... ``table9``) and its title, for the
    workflow's ``study_table`` rule (Parquet, Markdown, CSV)."""
    t = name.removeprefix("table")
    if t not in TABLE_SPECS:
        raise KeyError(f"pruning_resnet has no table '{name}' (known: {list(TABLES)})")
    return build_tables(runs, p)[t], TABLE_SPECS[t][2]
