"""The report's front page: per paper, the counts come first (the headline with every count's
scale, data and coverage, and the tally figure), then the verdict matrix (claims x scales,
coloured, each cell linking to the claim's claims table and figure) with a ladder-trend
column.  Built here from small claims tables and parsed as HTML; tests/test_workflow.py builds
it from a small run and finds it in the Snakemake report."""

from __future__ import annotations

from html.parser import HTMLParser

import pandas as pd
import pytest

from sigprop import claims as C
from sigprop.claims import reading
from sigprop.claims.front import front_block, tally_counts, tally_figure
from sigprop.claims.matrix import verdict_matrix
from sigprop.contract import Figure


class Outline(HTMLParser):
    """The tags of a fragment in order, with the table cells' style, text and links."""

    def __init__(self):
        super().__init__()
        self.tags, self.cells, self._cell = [], [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "td":
            self._cell = {"style": a.get("style", ""), "text": "", "links": []}
        if tag == "a" and self._cell is not None:
            self._cell["links"].append(a.get("href", ""))

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.cells.append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data


def _row(cid, verdict, kind="claim"):
    if kind == "beyond":
        return C.beyond(
            "s", cid, "a statement", "ours", 1.0, "1", 0.0, verdict, test="t", detectable=0.1
        )
    return C.row(
        "s", cid, "a statement", "000 Eq. 1", 1.0, "1", 0.0, verdict, test="t", detectable=0.1
    )


def outline(html: str) -> Outline:
    o = Outline()
    o.feed(html)
    return o


SOURCES = [
    ["c", "exact: an equality within sampling error"],
    ["d", "ours: 0.1"],
    ["*", "exact: a direction"],
]


def _trend(claim_id, trend="flat", top="pass"):
    from types import SimpleNamespace

    return SimpleNamespace(
        study="s",
        claim_id=claim_id,
        rungs=["quick", "ladder2", "ladder3"],
        trend=trend,
        top_verdict=top,
        top_rung="ladder3",
        slope=0.01,
        slope_se=0.002,
        detectable_slope=0.04,
        needed=0.1,
    )


@pytest.fixture()
def block():
    run = reading.apply(
        C.frame(
            [
                _row("a", "pass"),
                _row("b", "fail"),
                _row("c", "fail"),
                _row("d", "fail"),
                _row("k", "pass", "beyond"),
            ]
        ),
        "quick",
        {"depth": "L = 40, not 200"},
        {"b": ["depth"], "c": [], "d": []},
        SOURCES,
    )
    paper = reading.apply(C.frame([_row("a", "pass"), _row("b", "pass")]), "paper", {}, {}, SOURCES)
    m = verdict_matrix(run, paper)
    figures = {"s": {"fig_a": Figure("f", "cap", claims=("a",)), "fig_b": Figure("g", "cap")}}
    return m, front_block(
        "000",
        "000 A paper",
        m,
        "quick scale (1 of 1 study): 4 claims",
        b"\x89PNG fake",
        {"s": "quick"},
        figures,
        {"s"},
        trends={("s", "a"): _trend("a")},
    )


def test_the_counts_come_first_then_the_matrix_with_a_ladder_column(block):
    m, html = block
    o = outline(html)
    order = [t for t, _ in o.tags]
    assert order[:4] == ["div", "h2", "p", "img"]  # the counts first
    assert order.index("img") < order.index("table")
    assert html.index("quick scale (1 of 1 study): 4 claims") < html.index("<table")
    assert "ladder trend (committed rungs)" in html
    texts = [c["text"].strip() for c in o.cells]
    assert "flat (supported at ladder3)" in texts  # a's trend, top rung's reading
    assert texts.count("–") >= 4  # no ladder for b, c, d, k
    assert (
        "table",
        {"class": "sigprop-verdicts", "style": "border-collapse:collapse;font-size:12px"},
    ) in o.tags
    texts = [c["text"].strip() for c in o.cells]
    # a depends on every axis, so its pass at quick scale (depth differs) is qualified
    assert "supported at quick ▣" in texts and "contradicts ▣" in texts and "–" in texts
    assert any(t.startswith("not at quick scale") for t in texts)
    assert all(
        "background:" in c["style"]
        for c in o.cells
        if c["text"].strip() in ("supported at quick ▣", "contradicts ▣", "–")
    )
    first = next(c for c in o.cells if c["text"].strip() == "supported at quick ▣")
    assert first["links"] == ["../../s/claims.html", "../../s/figures/fig_a.png"]
    paper_cells = [c for c in o.cells if c["links"] == ["../../s/scales.html"]]
    assert {c["text"].strip() for c in paper_cells} == {"supported"}
    assert "(beyond the paper)" in html
    assert len(m) == 5 and set(m.kind) == {"claim", "beyond"}
    assert "\n\n" not in html  # fits a reStructuredText raw directive


def test_a_fail_outside_the_paper_regime_is_not_coloured_as_a_contradiction(block):
    m, html = block
    by = m.set_index("claim_id")
    assert by.run_reading["b"] == "not reproduced at quick scale (depth)"
    assert by.run_reading["c"] == "contradicts the paper"
    assert by.run_reading["d"] == "departs beyond our tolerance"  # our tolerance, not the paper's
    counts = tally_counts(m).set_index("scale")
    # supported, contradicts, departs, not reproduced, inconclusive; beyond rows are not counted
    assert counts.loc["run"].tolist() == [1, 1, 1, 1, 0]
    assert counts.loc["paper"].tolist() == [2, 0, 0, 0, 0]
    texts = [c["text"].strip() for c in outline(html).cells]
    assert "departs (our tol.) ▣" in texts and "contradicts ▣" in texts


def test_tally_figure_draws_both_scales(block):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m, _ = block
    fig = tally_figure(m, "000 A paper", "quick", {"run": "1 of 1 study", "paper": "1 of 1 study"})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "quick scale\n(this run, 1 of 1 study)",
        "paper scale\n(committed, 1 of 1 study)",
    ]
    assert len(ax.patches) >= 5
    plt.close(fig)


def test_matrix_keeps_claims_of_one_scale_only():
    run = C.frame([_row("a", "pass")])
    paper = C.frame([_row("z", "fail")])
    m = verdict_matrix(run, paper)
    assert m.claim_id.tolist() == ["a", "z"]
    assert m.set_index("claim_id").paper_verdict.to_dict() == {"a": "-", "z": "fail"}
    assert pd.isna(m.set_index("claim_id").run_measured["z"])
