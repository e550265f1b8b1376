"""The claims table as a small standalone HTML page (for the Snakemake report)."""

from __future__ import annotations

import html

import pandas as pd

COLOURS = {"pass": "#1a7f37", "fail": "#cf222e", "inconclusive": "#9a6700"}


def to_html(df: pd.DataFrame, title: str = "Claims") -> str:
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
