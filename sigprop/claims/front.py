"""The report's front page, one block per paper: the paper's counts first (the headline in
words, every count with its scale, data and coverage, and one figure of the tallies), then the
verdict matrix (claims x scales, coloured, each cell linking to the claim's figure and claims
table, with the claim's trend along its study's budget ladder where one is committed)
(:func:`front_block`).  The per-claim text stays on each study's claims page.

The block is an HTML fragment (``results/papers/{paper}/front.html``) that the report's
front page (``workflow/report/workflow.rst``) includes as raw HTML.  Inside the Snakemake
report a link opens the result in the report itself (``app.showResultInfo``); opened as a
file, it follows its relative path.
"""

from __future__ import annotations

import base64
import html

import pandas as pd

from .matrix import SCALES

READING_STYLE = {
    "supported": ("#d1f0d9", "supported"),
    "supported at": ("#e6f5ea", "supported at {scale}"),
    "contradicts the paper": ("#ffcdcd", "contradicts"),
    "departs beyond our tolerance": ("#ffd9e6", "departs (our tol.)"),
    "not reproduced": ("#ffe2b8", "not at {scale} scale"),
    "unverified": ("#e8defa", "unverified"),
    "inconclusive": ("#e9ebee", "inconclusive"),
    "smoke": ("#e9ebee", "smoke"),
    "-": ("#ffffff", "–"),
}
"""Cell colour and text for each reading (:func:`sigprop.claims.reading.reading`)."""

LEGEND = [
    ("supported", "supported (a pass in the paper's regime)"),
    (
        "supported at",
        "supported at that scale (a pass where the design differs from the "
        "paper's along an axis the claim depends on)",
    ),
    (
        "contradicts the paper",
        "contradicts the paper (a fail in the paper's regime beyond a "
        "tolerance the paper gives or admits)",
    ),
    (
        "departs beyond our tolerance",
        "departs beyond our tolerance (a fail in the paper's "
        "regime beyond a tolerance of the project's choice)",
    ),
    (
        "not reproduced",
        "not reproduced at that scale (a fail where the design differs from "
        "the paper's along an axis the claim depends on)",
    ),
    (
        "unverified",
        "unverified (the paper's printed formula does not reproduce its own numbers; not counted)",
    ),
    ("inconclusive", "inconclusive (the design cannot tell)"),
    ("-", "not run at that scale"),
]
TALLIED = [
    "supported",
    "contradicts the paper",
    "departs beyond our tolerance",
    "not reproduced",
    "inconclusive",
]
"""The readings the tally figure counts, in its order (unverified claims are not counted)."""


STYLE = (
    "<style>.overflow-auto:has(.sigprop-front){align-items:flex-start !important;"
    "justify-content:flex-start !important}"
    ".prose:has(.sigprop-front){max-width:none !important}"
    ".sigprop-verdicts code::before,.sigprop-verdicts code::after{content:none !important}"
    ".sigprop-verdicts td,.sigprop-verdicts th{padding:1px 6px;line-height:1.25;"
    "border-bottom:1px solid #e5e7eb;vertical-align:top}"
    ".sigprop-verdicts td.src{font-size:10px;color:#57606a;max-width:170px}"
    ".sigprop-verdicts code{font-size:11px}"
    ".sigprop-verdicts tr.study td{padding-top:8px;border-bottom:1px solid #999}"
    ".sigprop-verdicts td.cell{white-space:nowrap}</style>"
)
"""The block's look inside the Snakemake report: the report centres its front page in a
narrow prose column (a page taller than the window would lose its top) and styles code with
backquotes; the matrices need to start at the top, their width and plain code."""


def _style(reading: str) -> tuple[str, str]:
    if reading.startswith("not reproduced"):
        return READING_STYLE["not reproduced"]
    if reading.startswith("supported at"):
        return READING_STYLE["supported at"]
    if reading.startswith(("sanity", "control", "summary", "claim", "beyond")):
        return READING_STYLE["inconclusive"][0], reading
    return READING_STYLE.get(reading, READING_STYLE["inconclusive"])


def report_link(
    path: str | None, text: str, rel_from: str = "results/papers/000", title: str = ""
) -> str:
    """A link to a result of the workflow: inside the Snakemake report it opens the result
    there, in a plain browser it follows the relative path from the front page's folder."""
    if not path:
        return html.escape(text)
    import os

    rel = os.path.relpath(path, rel_from)
    t = f' title="{html.escape(title)}"' if title else ""
    js = html.escape(path, quote=True).replace("'", "\\'")
    return (
        f'<a href="{html.escape(rel)}"{t} onclick="if (window.app) '
        f"{{ app.showResultInfo('{js}'); return false; }}\">{html.escape(text)}</a>"
    )


def links_for(study: str, claim_id: str, figures: dict, committed: set[str]) -> dict:
    """Where a claim's cells link: its figure (``figures``: name -> :class:`Figure`, the first
    that shows the claim, else the first), the study's claims page, and for the paper-scale
    cell the page that puts the committed verdicts beside this run's."""
    fig = next((n for n, f in figures.items() if f.shows(claim_id)), next(iter(figures), None))
    return {
        "figure": f"results/{study}/figures/{fig}.png" if fig else None,
        "claims": f"results/{study}/claims.html",
        "paper": f"results/{study}/scales.html" if study in committed else None,
    }


def trend_cell(t) -> tuple[str, str]:
    """A claim's trend along its study's budget ladder (a row of
    :func:`sigprop.claims.trend.read_trend`): the cell's text and its tooltip."""
    from .trend import top_reading

    rungs = list(t.rungs)
    tip = (
        f"{rungs[0]} to {rungs[-1]}: slope {t.slope:.3g} ± {t.slope_se:.3g} per ln budget, "
        f"resolves {t.detectable_slope:.3g}, needed {t.needed:.3g}"
    )
    return f"{t.trend} ({top_reading(t)})", tip


def matrix_html(
    m: pd.DataFrame,
    paper: str,
    scale_names: dict,
    figures: dict,
    committed: set[str],
    trends: dict | None = None,
) -> str:
    """The verdict matrix as an HTML table: a header row per study, one row per claim (beyond
    the paper marked), a coloured cell per scale, and the claim's ladder trend (``trends``:
    ``(study, claim id)`` -> trend row; "–" where the study has no committed ladder)."""
    here = f"results/papers/{paper}"
    trends = trends or {}
    run_label = "/".join(dict.fromkeys(scale_names.values())) or "this run"
    rows = [
        f"<tr><th>claim</th><th>source</th><th>{html.escape(run_label)} scale</th>"
        "<th>paper scale (committed)</th><th>ladder trend (committed rungs)</th></tr>"
    ]
    for study, g in m.groupby("study", sort=False):
        figs = " · ".join(
            report_link(f"results/{study}/figures/{n}.png", n, here) for n in figures.get(study, {})
        )
        extra = (
            " · " + report_link(f"results/{study}/scales.html", "both scales", here)
            if study in committed
            else ""
        )
        rows.append(
            f'<tr class="study"><td colspan="5"><b>{html.escape(study)}</b> — '
            f"{report_link(f'results/{study}/claims.html', 'claims table', here)}"
            f"{extra}{' · figures: ' + figs if figs else ''}</td></tr>"
        )
        for r in g.itertuples():
            link = links_for(study, r.claim_id, figures.get(study, {}), committed)
            label = html.escape(r.claim_id) + (
                " <i>(beyond the paper)</i>" if r.kind == "beyond" else ""
            )
            cells = []
            for s in SCALES:
                reading = getattr(r, f"{s}_reading")
                colour, text = _style(reading)
                scale = scale_names.get(study, "this") if s == "run" else "paper"
                text = text.format(scale=scale)
                if getattr(r, f"{s}_exploratory"):
                    text += "*"
                regime = getattr(r, f"{s}_regime")
                tip = reading + (f" — {regime}" if regime else "")
                if reading == "-":
                    body = html.escape(text)
                elif s == "run":
                    body = report_link(link["claims"], text, here, tip)
                    if link["figure"]:
                        body += " " + report_link(link["figure"], "▣", here, "figure")
                else:
                    body = report_link(link["paper"], text, here, tip)
                cells.append(f'<td class="cell" style="background:{colour}">{body}</td>')
            t = trends.get((study, r.claim_id))
            if t is None:
                cells.append('<td class="cell" style="background:#ffffff">–</td>')
            else:
                text, tip = trend_cell(t)
                cells.append(
                    f'<td class="cell" style="background:#ffffff" '
                    f'title="{html.escape(tip)}">{html.escape(text)}</td>'
                )
            rows.append(
                f'<tr><td title="{html.escape(str(r.claim))}"><code>{label}</code></td>'
                f'<td class="src">{html.escape(str(r.source))}</td>{"".join(cells)}</tr>'
            )
    return (
        '<table class="sigprop-verdicts" style="border-collapse:collapse;font-size:12px">\n'
        + "\n".join(rows)
        + "\n</table>"
    )


def legend_html() -> str:
    items = []
    for key, text in LEGEND:
        colour = READING_STYLE[key][0]
        items.append(
            f'<span style="background:{colour};border:1px solid #ccc;'
            f'padding:0 6px;margin-right:4px">&nbsp;</span>{html.escape(text)}'
        )
    return (
        '<p style="font-size:12px">'
        + "; ".join(items)
        + "; * exploratory (after a design change); ▣ the figure.</p>"
    )


def tally_counts(m: pd.DataFrame) -> pd.DataFrame:
    """Per scale, the claims (kind ``claim`` only, unverified ones left out) by reading: the
    numbers the tally figure draws (:data:`TALLIED`)."""
    out = []
    for s in SCALES:
        k = m[f"{s}_kind"] if f"{s}_kind" in m else m.kind
        c = m[(k == "claim") & (m[f"{s}_verdict"] != "-")]
        rd = c[f"{s}_reading"].astype(str)
        out.append(
            {
                "scale": s,
                "supported": int(rd.str.startswith("supported").sum()),
                "contradicts the paper": int((rd == "contradicts the paper").sum()),
                "departs beyond our tolerance": int((rd == "departs beyond our tolerance").sum()),
                "not reproduced": int(rd.str.startswith("not reproduced").sum()),
                "inconclusive": int(rd.isin(["inconclusive", "smoke"]).sum()),
            }
        )
    return pd.DataFrame(out)


def tally_figure(m: pd.DataFrame, title: str, run_label: str, coverage: dict | None = None):
    """The tallies of the claims at both scales as stacked horizontal bars (claims only);
    ``coverage``: per scale (``run``, ``paper``) the studies it covers, e.g. "3 of 5
    studies", named on its bar."""
    import matplotlib.pyplot as plt

    counts = tally_counts(m)
    cov = coverage or {}
    fig, ax = plt.subplots(figsize=(7.0, 1.9))
    labels = {
        "run": f"{run_label} scale\n(this run{', ' + cov['run'] if cov.get('run') else ''})",
        "paper": f"paper scale\n(committed{', ' + cov['paper'] if cov.get('paper') else ''})",
    }
    for i, r in enumerate(counts.itertuples(index=False)):
        left = 0
        vals = dict(zip(counts.columns, r))
        for k in TALLIED:
            v = vals[k]
            if v:
                ax.barh(
                    i,
                    v,
                    left=left,
                    color=READING_STYLE[k][0],
                    edgecolor="#555555",
                    linewidth=0.6,
                    label=k if i == 0 else None,
                )
                ax.text(left + v / 2, i, str(v), ha="center", va="center", fontsize=8)
            left += v
        if not left:
            ax.text(0.5, i, "no verdicts", va="center", fontsize=8, color="#555555")
    ax.set_yticks(range(len(counts)), [labels[s] for s in counts.scale], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(
        "claims (beyond-the-paper rows, controls, sanity checks, summaries and "
        "unverified claims not counted)",
        fontsize=8,
    )
    ax.tick_params(axis="x", labelsize=8)
    ax.set_title(title, fontsize=9)
    handles = [
        plt.Rectangle((0, 0), 1, 1, facecolor=READING_STYLE[k][0], edgecolor="#555555")
        for k in TALLIED
    ]
    ax.legend(
        handles,
        [
            "supported",
            "contradicts the paper",
            "departs beyond our tolerance",
            "not reproduced at that scale",
            "inconclusive",
        ],
        fontsize=7,
        ncol=3,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.45),
        frameon=False,
    )
    return fig


def front_block(
    paper: str,
    title: str,
    m: pd.DataFrame,
    headline: str,
    png: bytes,
    scale_names: dict,
    figures: dict,
    committed: set[str],
    notes: str = "",
    trends: dict | None = None,
) -> str:
    """One paper's block of the front page: title, the counts (the headline: every count with
    its scale, data and coverage; the tally figure), then the verdict matrix with its ladder
    column (``trends``, :func:`matrix_html`), its legend and short notes.  No blank lines and no
    line longer than a few thousand characters, so that it can sit in a reStructuredText
    ``raw`` directive as it is."""
    b64 = base64.b64encode(png).decode()
    img = "\n".join(b64[i : i + 76] for i in range(0, len(b64), 76))  # a URL parser drops newlines
    parts = [
        f'<div class="sigprop-front" id="paper-{html.escape(paper)}">',
        f"<h2>{html.escape(title)}</h2>",
        f'<p class="sigprop-counts">{html.escape(headline)}.</p>',
        f'<img alt="tallies of {html.escape(title)}" style="max-width:640px" '
        f'src="data:image/png;base64,{img}"/>',
        matrix_html(m, paper, scale_names, figures, committed, trends),
        legend_html(),
    ]
    if notes:
        parts.append(f"<p>{html.escape(notes)}</p>")
    parts += ["</div>", STYLE]
    return "\n".join(p for p in parts if p.strip()) + "\n"
