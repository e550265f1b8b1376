"""A referee's summary of one paper's claims (``results/papers/{paper}/summary.md``; the
report's front page shows its headline): the first line names the scale and data of every
count, this run's and the committed paper-scale ones; then every claim with its verdict at
both scales (:func:`sigprop.claims.matrix.verdict_matrix`), a fail outside the paper's regime
read as "not reproduced at that scale" with the difference named; the rows beyond the paper,
the pooled summaries and the sanity checks apart; and each study with the scale and data it
was measured on and what differs from the paper's setup.

The text is written so that it reads the same as Markdown and as reStructuredText (the
report's front page is reStructuredText): bold titles, ``-`` lists, identifiers in double
backticks, and free text with ``* ` | _ \\`` escaped.
"""

from __future__ import annotations

import re

import pandas as pd

from . import tally
from .matrix import verdict_matrix
from .render import tally_words


def escape(text: str) -> str:
    """Free text safe in both Markdown and reStructuredText."""
    text = re.sub(r"\s+", " ", str(text)).strip()
    return re.sub(r"([\\*`|_])", r"\\\1", text)


def _lit(text: str) -> str:
    return "``" + str(text).replace("`", "'") + "``"


def _num(v) -> str:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return escape(v)
    return "–" if v != v else f"{v:.4g}"


SCALE_OF_COMMITTED = "paper"


def _item_cell(verdict: str, reading_: str, regime: str, exploratory: bool, scale: str) -> str:
    if verdict == "-":
        return f"{scale} –"
    mark = " (exploratory)" if exploratory else ""
    why = (
        f" ({escape(regime)})"
        if reading_.startswith(("not reproduced", "supported at")) and regime
        else ""
    )
    return f"{scale} **{escape(reading_)}**{why}{mark}"


def _data_labels(names) -> str:
    from ..data.catalog import label

    return ", ".join(label(n) for n in sorted(set(names))) or "no data"


def headline(
    claims: pd.DataFrame,
    studies: dict,
    committed: pd.DataFrame | None = None,
    provenance: dict | None = None,
) -> str:
    """Every count with its scale and data: this run's per scale, then the committed
    paper-scale ones (``committed``: their claims; ``provenance``: per study, its
    ``provenance.json``)."""
    n = len(studies)
    parts = []
    scale_of = {k: str(v.get("scale", "")) for k, v in studies.items()}
    for scale in dict.fromkeys(scale_of[s] for s in studies):
        names = [s for s in studies if scale_of[s] == scale]
        rows = claims[claims.study.isin(names)]
        data = _data_labels(d for s in names for d in studies[s].get("datasets") or [])
        plain = scale.split(" ")[0]
        parts.append(
            f"{scale} scale ({len(names)} of {n} {'study' if n == 1 else 'studies'}; "
            f"{data}): {tally_words(tally(rows), plain)}"
        )
    prov = provenance or {}
    if committed is not None and len(committed):
        dates = sorted({str(p.get("date", "")) for p in prov.values()} - {""})
        when = (
            (dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}") if dates else "undated"
        )
        data = _data_labels(
            d
            for s, p in prov.items()
            for d in p.get("datasets") or studies.get(s, {}).get("paper_datasets") or []
        )
        parts.append(
            f"paper scale, committed ({committed.study.nunique()} of {n} "
            f"{'study' if n == 1 else 'studies'}, {when}; {data}): "
            f"{tally_words(tally(committed), SCALE_OF_COMMITTED)}"
        )
    else:
        parts.append(
            "paper scale: no committed verdicts for "
            + ("this study" if n == 1 else f"these {n} studies")
        )
    return "; ".join(parts)


def _trend_cell(t) -> str:
    """A claim's trend along its study's budget ladder, in words (:mod:`sigprop.claims.trend`)."""
    from .trend import top_reading

    rungs = list(t.rungs)
    return (
        f"ladder {_lit(rungs[0])}→{_lit(rungs[-1])}: trend {t.trend} (slope "
        f"{_num(t.slope)} ± {_num(t.slope_se)} per ln budget, detectable "
        f"{_num(t.detectable_slope)}, needed {_num(t.needed)}); top rung: {top_reading(t)}"
    )


def referee_summary(
    title: str,
    citation: str,
    claims: pd.DataFrame,
    studies: dict,
    committed: pd.DataFrame | None = None,
    provenance: dict | None = None,
    partial: str = "",
    trends: pd.DataFrame | None = None,
) -> str:
    """``studies``: per study name, ``scale``, ``title``, ``datasets`` (list), ``description``
    (the scale's description: what is scaled down or substituted), ``regime`` (the same, by
    axis), ``fixed`` (the design date), ``changes`` (the design changes at this scale, each
    with ``date`` and ``what``) and ``fragile`` (claims whose verdict a change of training
    arithmetic alone flipped, with ``date``, ``claims`` and ``proposal``).  ``committed``: the committed paper-scale claims of the paper's
    studies that have them, ``provenance``: their ``provenance.json`` by study.  ``partial``:
    what a run narrowed to some of the paper's studies covers (:func:`sigprop.papers.
    coverage_note`), stated first.  ``trends``: the committed trend tables of the paper's
    studies that have a budget ladder (:func:`sigprop.claims.trend.read_trend`), shown after
    each claim's verdicts and never counted."""
    head = escape(headline(claims, studies, committed, provenance))
    out = [
        f"**{escape(title)}** — {escape(partial) + '; ' if partial else ''}{head}.",
        "",
        f'{escape(citation)}. A fail reads "contradicts the paper" only where the design '
        "is the paper's along every axis the claim depends on and the tolerance is the "
        "paper's own (or the statement admits none beyond sampling error); beyond a "
        'tolerance of the project\'s choice it "departs beyond our tolerance"; outside the '
        'paper\'s regime a fail is "not reproduced at that scale" and a pass "supported at '
        "that scale\", with the difference named (the study file's regime). A claim whose "
        'printed formula does not reproduce the paper\'s own numbers is "unverified". Rows '
        "beyond the paper, pooled summaries, power controls, sanity checks and unverified "
        "claims are never counted.",
        "",
    ]
    trend_of = (
        {(r.study, str(r.claim_id)): r for r in trends.itertuples()}
        if trends is not None and len(trends)
        else {}
    )
    if trend_of:
        out += [
            "Ladder trends (never counted): where a training study was run on a budget "
            "ladder from its quick design toward the paper's setup "
            "(docs/evidence/ladder/), each claim shows whether its statistic moves toward "
            "the paper's value as the budget grows (slope on ln budget, weighted by the "
            "rungs' SEs), away from it, stays flat (a slope reaching the paper's value by "
            "the paper's budget would have been seen), or cannot say; and the top rung's "
            "own verdict. A trend is not a verdict on the paper's statement.",
            "",
        ]
    t = tally(claims)
    if t["exploratory"]:
        out += [
            f"{t['exploratory']} of this run's claim verdicts are exploratory (obtained "
            "after a design change).",
            "",
        ]
    m = verdict_matrix(claims, committed)
    prov = provenance or {}
    run_scale = {k: str(v.get("scale", "")).split(" ")[0] for k, v in studies.items()}
    for kind, name in (
        ("claim", "Claims, at both scales"),
        ("beyond", "Beyond the paper, not counted"),
    ):
        g = m[m.kind == kind]
        if not len(g):
            continue
        out += [f"**{name} ({len(g)})**", ""]
        for r in g.itertuples():
            rs = run_scale.get(r.study, "run")
            cells = [_item_cell(r.run_verdict, r.run_reading, r.run_regime, r.run_exploratory, rs)]
            if r.study in prov or r.paper_verdict != "-":
                cells.append(
                    _item_cell(
                        r.paper_verdict,
                        r.paper_reading,
                        r.paper_regime,
                        r.paper_exploratory,
                        "paper",
                    )
                )
            if (r.study, str(r.claim_id)) in trend_of:
                cells.append(_trend_cell(trend_of[(r.study, str(r.claim_id))]))
            out.append(
                f"- {_lit(r.study)} {_lit(r.claim_id)} ({escape(r.source)}): "
                f"{'; '.join(cells)} — {escape(r.claim)}"
            )
        out.append("")
    pooled_rows = claims[claims["kind"] == "summary"]
    if len(pooled_rows):
        out += [f"**Pooled summaries, not counted ({len(pooled_rows)})**", ""]
        out += [
            f"- {_lit(r.study)} {_lit(r.claim_id)}: {r.verdict} — {escape(r.claim)}, measured "
            f"{_num(r.measured)}"
            for r in pooled_rows.itertuples()
        ] + [""]
    k = claims[claims["kind"] == "control"]
    if len(k):
        out += [
            f"**Power controls, not counted ({len(k)}; inconclusive: underpowered at these "
            "seeds)**",
            "",
        ]
        out += [
            f"- {_lit(r.study)} {_lit(r.claim_id)}: {r.verdict} — {escape(r.claim)}"
            for r in k.itertuples()
        ] + [""]
    s = claims[claims["kind"] == "sanity"]
    if len(s):
        out += [f"**Sanity checks, not counted ({len(s)})**", ""]
        out += [
            f"- {_lit(r.study)} {_lit(r.claim_id)}: {r.verdict} — {escape(r.claim)}"
            for r in s.itertuples()
        ] + [""]
    out += ["**Measured on, and what differs from the paper's setup**", ""]
    for name, info in studies.items():
        changes = info.get("changes") or []
        hist = (
            "; design changed after verdicts: "
            + "; ".join(
                f"{escape(ch.get('date', ''))} {escape(ch.get('what', ''))}" for ch in changes
            )
            if changes
            else ""
        )
        fragile = info.get("fragile") or []
        hist += "".join(
            f"; not robust (a change of training arithmetic alone flipped the verdict, "
            f"{escape(f.get('date', ''))}): {', '.join(_lit(c) for c in f.get('claims', []))}"
            f" — {escape(f.get('proposal', ''))}"
            for f in fragile
        )
        regime = info.get("regime") or {}
        differs = (
            "; differs from the paper in "
            + "; ".join(f"{escape(a)}: {escape(v)}" for a, v in regime.items())
            if regime
            else "; the paper's regime on every declared axis"
        )
        p = prov.get(name)
        paper = (
            f" Paper scale committed {escape(p.get('date', ''))} at commit "
            f"{_lit(str(p.get('commit', ''))[:10])} ({p.get('runs', '?')} runs, "
            f"{float(p.get('wall_s') or 0) / 60:.1f} min wall on "
            f"{(p.get('machine') or {}).get('cores', '?')} CPU cores)."
            if p
            else ""
        )
        rungs = trends[trends.study == name] if trend_of else pd.DataFrame()
        if len(rungs):
            r0 = rungs.iloc[0]
            paper += (
                " Budget ladder: rungs "
                + ", ".join(f"{_lit(n)} ({b:g})" for n, b in zip(r0.rungs, r0.budgets))
                + f", the paper's setup {r0.paper_budget:g} (docs/evidence/ladder/"
                f"{escape(name)}/trend.md)."
            )
        out.append(
            f"- {_lit(name)} ({escape(info.get('title', ''))}): scale "
            f"{_lit(info.get('scale', ''))}, data "
            f"{', '.join(_lit(d) for d in info.get('datasets') or []) or '–'}{differs}; "
            f"design fixed {escape(info.get('fixed', '') or 'not recorded')}{hist}. "
            f"{escape(info.get('description', ''))}{paper}"
        )
    return "\n".join(out).rstrip() + "\n"
