"""A referee's summary of one paper's claims (``results/papers/{paper}/summary.md``, and the
report's front page): what is supported, not supported and inconclusive, the sanity checks
apart, each study with the scale and data it was measured on and what differs from the
paper's setup (the study file's scale description), and which verdicts are exploratory.

The text is written so that it reads the same as Markdown and as reStructuredText (the
report's front page is reStructuredText): bold titles, ``-`` lists, identifiers in double
backticks, and free text with ``* ` | _ \\`` escaped.
"""

from __future__ import annotations

import re

import pandas as pd

from . import tally

GROUPS = [("pass", "Supported"), ("fail", "Not supported"), ("inconclusive", "Inconclusive"),
          ("smoke", "Smoke run (no verdict)")]


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


def _item(r) -> str:
    mark = " (exploratory: after a design change)" if bool(r.exploratory) else ""
    power = ("" if r.kind == "sanity" or pd.isna(r.detectable)
             else f"; detectable {_num(r.detectable)}")
    return (f"- {_lit(r.study)} {_lit(r.claim_id)}: {escape(r.claim)} — measured "
            f"{_num(r.measured)}, expected {escape(r.expected)}{mark}. Test: {escape(r.test)}"
            f"{power}.")


def referee_summary(title: str, citation: str, claims: pd.DataFrame, studies: dict) -> str:
    """``studies``: per study name, ``scale``, ``title``, ``datasets`` (list), ``description``
    (the scale's description: what is scaled down or substituted), ``fixed`` (the design date)
    and ``changes`` (the design changes at this scale, each with ``date`` and ``what``)."""
    t = tally(claims)
    head = [f"**{escape(title)}** ({escape(citation)})", "",
            f"{t['claims']} claims: {t['pass']} supported, {t['fail']} not supported, "
            f"{t['inconclusive']} inconclusive"
            + (f", {t['smoke']} smoke" if t.get("smoke") else "")
            + (f" ({t['exploratory']} exploratory: obtained after a design change)"
               if t["exploratory"] else "")
            + f". {t['sanity']} sanity checks (identities, theorems, controls), not counted"
            + (f", {t['sanity_failing']} of them not passing" if t["sanity_failing"] else
               ", all passing")
            + (f"; {t['summary']} pooled summaries of claims, not counted" if t["summary"] else "")
            + ".", ""]
    out = head
    c = claims[claims["kind"] == "claim"]
    for verdict, name in GROUPS:
        g = c[c.verdict == verdict]
        if len(g):
            out += [f"**{name} ({len(g)})**", ""] + [_item(r) for r in g.itertuples()] + [""]
    pooled = claims[claims["kind"] == "summary"]
    if len(pooled):
        out += [f"**Pooled summaries, not counted ({len(pooled)})**", ""]
        out += [f"- {_lit(r.study)} {_lit(r.claim_id)}: {r.verdict} — {escape(r.claim)}, measured "
                f"{_num(r.measured)}" for r in pooled.itertuples()] + [""]
    s = claims[claims["kind"] == "sanity"]
    if len(s):
        out += [f"**Sanity checks, not counted ({len(s)})**", ""]
        out += [f"- {_lit(r.study)} {_lit(r.claim_id)}: {r.verdict} — {escape(r.claim)}"
                for r in s.itertuples()] + [""]
    out += ["**Measured on, and what differs from the paper's setup**", ""]
    for name, info in studies.items():
        changes = info.get("changes") or []
        hist = ("; design changed after verdicts: " + "; ".join(
            f"{escape(ch.get('date', ''))} {escape(ch.get('what', ''))}" for ch in changes)
            if changes else "")
        out.append(f"- {_lit(name)} ({escape(info.get('title', ''))}): scale "
                   f"{_lit(info.get('scale', ''))}, data "
                   f"{', '.join(_lit(d) for d in info.get('datasets') or []) or '–'}; "
                   f"design fixed {escape(info.get('fixed', '') or 'not recorded')}{hist}. "
                   f"{escape(info.get('description', ''))}")
    return "\n".join(out).rstrip() + "\n"
