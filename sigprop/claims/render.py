"""The claims table as a small standalone HTML page (for the Snakemake report)."""

from __future__ import annotations

import html

import pandas as pd

COLOURS = {"pass": "#1a7f37", "fail": "#cf222e", "inconclusive": "#9a6700"}


def to_html(df: pd.DataFrame, title: str = "Claims") -> str:
    df = df.drop(columns=["values"], errors="ignore")   # machine-readable; the detail says it in words
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    body = []
    for _, r in df.iterrows():
        cells = []
        for c in df.columns:
            v = r[c]
            text = f"{v:.4g}" if isinstance(v, float) else str(v)
            style = f' style="color:{COLOURS[v]};font-weight:bold"' if c == "verdict" and v in COLOURS else ""
            cells.append(f"<td{style}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}</style></head>"
            f"<body><h2>{html.escape(title)}</h2><table><tr>{head}</tr>{''.join(body)}</table>"
            "</body></html>\n")


def to_markdown(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """A GitHub-flavoured Markdown table (no extra dependency); missing numbers print as "–"."""
    def cell(v):
        if isinstance(v, float) and v != v:
            return "–"
        text = format(v, floatfmt) if isinstance(v, float) else str(v)
        return text.replace("|", "\\|").replace("\n", " ")
    head = "| " + " | ".join(cell(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"


def write_table(parts: dict[str, pd.DataFrame], md_path: str, csv_path: str, title: str) -> None:
    """A paper table: every part to one Markdown file, the first part to CSV (atomically)."""
    from .. import atomic
    text = [f"# {title}\n"]
    for name, df in parts.items():
        text += [f"\n## {name}\n\n", to_markdown(df)]
    first = next(iter(parts.values()))
    atomic.write_text(md_path, "".join(text))
    with atomic.target(csv_path) as tmp:
        first.to_csv(tmp, index=False)
