"""The claims table as a small standalone HTML page (for the Snakemake report)."""

from __future__ import annotations

import html

import pandas as pd

COLOURS = {"pass": "#1a7f37", "fail": "#cf222e", "inconclusive": "#9a6700", "smoke": "#57606a"}
SHOWN = [
    "study",
    "claim_id",
    "claim",
    "source",
    "scale",
    "reading",
    "measured",
    "expected",
    "tolerance",
    "tolerance_source",
    "verdict",
    "test",
    "detectable",
    "false_pass",
    "margin",
    "regime",
    "exploratory",
    "detail",
]


def _rows_html(df: pd.DataFrame) -> str:
    from .reading import readings

    if "reading" not in df or (df["reading"].fillna("").astype(str) == "").any():
        df = df.assign(reading=readings(df)) if len(df) else df.assign(reading=[])
    cols = [c for c in SHOWN if c in df.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = []
    for _, r in df.iterrows():
        cells = []
        for c in cols:
            v = r[c]
            if c == "exploratory":
                text = "exploratory" if bool(v) else ""
            else:
                text = f"{v:.4g}" if isinstance(v, float) else str(v)
            style = (
                f' style="color:{COLOURS[v]};font-weight:bold"'
                if c == "verdict" and v in COLOURS
                else ""
            )
            cells.append(f"<td{style}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def tally_words(t: dict, scale: str = "") -> str:
    """A tally (:func:`sigprop.claims.tally`) in words: claims only, the fails split by how they
    read (contradict the paper: beyond a tolerance the paper gives or admits; depart beyond our
    tolerance: the project's choice; not reproduced at this scale: outside the paper's regime),
    the passes outside the paper's regime named, unverified claims counted apart."""
    at = f"{scale} scale" if scale else "this scale"
    fails = f"{t['fail']} not supported"
    parts = [f"{t.get('fail_contradicts', 0)} contradict the paper"]
    for key, words in (
        ("fail_departs", "depart beyond our tolerance"),
        ("fail_out_of_regime", f"not reproduced at {at}"),
    ):
        if t.get(key):
            parts.append(f"{t[key]} {words}")
    if t["fail"] and parts:
        fails += f" ({', '.join(parts)})"
    passes = f"{t['pass']} supported"
    if t.get("pass_out_of_regime"):
        passes += f" ({t['pass_out_of_regime']} of them outside the paper's regime)"
    text = f"{t['claims']} claims: {passes}, {fails}, {t['inconclusive']} inconclusive"
    if t.get("smoke"):
        text += f", {t['smoke']} smoke (no verdict)"
    if t.get("unverified"):
        text += (
            f"; {t['unverified']} unverified (the paper's printed formula does not "
            "reproduce its own numbers), not counted"
        )
    return text


def tally_line(df: pd.DataFrame) -> str:
    """The tally in words: claims only; beyond-the-paper rows, sanity checks and pooled
    summaries are counted apart."""
    from . import tally

    t = tally(df)
    scales = sorted({s for s in df.get("scale", pd.Series(dtype=str)).fillna("") if s})
    parts = [tally_words(t, "/".join(scales))]
    if t["exploratory"]:
        parts.append(
            f"{t['exploratory']} of the claims exploratory (obtained after a design change)"
        )
    if t.get("beyond"):
        parts.append(f"{t['beyond']} beyond the paper, not counted ({t['beyond_pass']} pass)")
    parts.append(f"{t['sanity']} sanity checks, not counted ({t['sanity_failing']} not passing)")
    if t.get("control"):
        parts.append(
            f"{t['control']} power control{'s' if t['control'] != 1 else ''}, not counted "
            f"({t['control_pass']} pass, "
            f"{t['control_underpowered']} underpowered, {t['control_failing']} fail)"
        )
    if t.get("summary"):
        parts.append(
            f"{t['summary']} pooled summaries, not counted (their measurements are claims above)"
        )
    return "; ".join(parts) + "."


def to_html(df: pd.DataFrame, title: str = "Claims", table: str = "") -> str:
    """Claims first, with the tally; beyond-the-paper rows, pooled summaries, power controls and
    sanity checks (identities, theorems) in their own sections, never tallied.  ``table``: the
    content digest of the claims table the page renders, named in the page so that a reader
    can check the two belong together."""
    kinds = df["kind"] if "kind" in df.columns else pd.Series("claim", index=df.index)
    claims, checks = df[kinds == "claim"], df[kinds == "sanity"]
    pooled, ours, controls = df[kinds == "summary"], df[kinds == "beyond"], df[kinds == "control"]
    sections = [
        f"<p>{html.escape(tally_line(df))}</p>",
        "<h3>Claims (tested against measurement)</h3>",
        _rows_html(claims),
    ]
    if len(ours):
        sections += [
            "<h3>Beyond the paper (statements the paper does not make; not counted)</h3>",
            _rows_html(ours),
        ]
    if len(pooled):
        sections += [
            "<h3>Pooled summaries (over measurements the claims above test; not counted)</h3>",
            _rows_html(pooled),
        ]
    if len(controls):
        sections += [
            "<h3>Power controls (the tests above reject what they must; inconclusive: "
            "underpowered at these seeds; not counted)</h3>",
            _rows_html(controls),
        ]
    if len(checks):
        sections += [
            "<h3>Sanity checks (identities, theorems; not counted)</h3>",
            _rows_html(checks),
        ]
    meta = f'<meta name="sigprop-table" content="{html.escape(table)}">' if table else ""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'>{meta}"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}</style></head>"
        f"<body><h2>{html.escape(title)}</h2>{''.join(sections)}</body></html>\n"
    )


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
