"""The report's front page: per paper, the verdict matrix (claims x scales, coloured, each cell
linking to the claim's claims table and figure) comes first, then the tally figure and the
headline.  Built here from small claims tables and parsed as HTML; tests/test_workflow.py builds
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
        return C.beyond("s", cid, "a statement", "ours", 1.0, "1", 0.0, verdict, test="t",
                        detectable=0.1)
    return C.row("s", cid, "a statement", "000 Eq. 1", 1.0, "1", 0.0, verdict, test="t",
                 detectable=0.1)


def outline(html: str) -> Outline:
    o = Outline()
    o.feed(html)
    return o


@pytest.fixture()
def block():
    run = reading.apply(C.frame([_row("a", "pass"), _row("b", "fail"), _row("c", "fail"),
                                 _row("k", "pass", "beyond")]), "quick",
                        {"depth": "L = 40, not 200"}, {"b": ["depth"], "c": []})
    paper = reading.apply(C.frame([_row("a", "pass"), _row("b", "pass")]), "paper", {}, {})
    m = verdict_matrix(run, paper)
    figures = {"s": {"fig_a": Figure("f", "cap", claims=("a",)), "fig_b": Figure("g", "cap")}}
    return m, front_block("000", "000 A paper", m, "quick scale: ...", b"\x89PNG fake",
                          {"s": "quick"}, figures, {"s"})


def test_the_verdict_matrix_comes_first_with_a_coloured_linked_cell_per_scale(block):
    m, html = block
    o = outline(html)
    order = [t for t, _ in o.tags]
    assert order[:3] == ["div", "h2", "table"]                 # the matrix first
    assert order.index("table") < order.index("img")
    assert ("table", {"class": "sigprop-verdicts",
                      "style": "border-collapse:collapse;font-size:12px"}) in o.tags
    texts = [c["text"].strip() for c in o.cells]
    assert "supported ▣" in texts and "contradicts ▣" in texts and "–" in texts
    assert any(t.startswith("not at quick scale") for t in texts)
    assert all("background:" in c["style"] for c in o.cells if c["text"].strip() in
               ("supported ▣", "contradicts ▣", "–"))
    first = next(c for c in o.cells if c["text"].strip() == "supported ▣")
    assert first["links"] == ["../../s/claims.html", "../../s/figures/fig_a.png"]
    paper_cells = [c for c in o.cells if c["links"] == ["../../s/scales.html"]]
    assert {c["text"].strip() for c in paper_cells} == {"supported"}
    assert "(beyond the paper)" in html
    assert len(m) == 4 and set(m.kind) == {"claim", "beyond"}
    assert "\n\n" not in html                      # fits a reStructuredText raw directive


def test_a_fail_outside_the_paper_regime_is_not_coloured_as_a_contradiction(block):
    m, html = block
    by = m.set_index("claim_id")
    assert by.run_reading["b"] == "not reproduced at quick scale"
    assert by.run_reading["c"] == "contradicts the paper"
    counts = tally_counts(m).set_index("scale")
    assert counts.loc["run"].tolist() == [1, 1, 1, 0]          # beyond rows are not counted
    assert counts.loc["paper"].tolist() == [2, 0, 0, 0]


def test_tally_figure_draws_both_scales(block):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    m, _ = block
    fig = tally_figure(m, "000 A paper", "quick")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["quick scale\n(this run)",
                                                            "paper scale\n(committed)"]
    assert len(ax.patches) >= 4
    plt.close(fig)


def test_matrix_keeps_claims_of_one_scale_only():
    run = C.frame([_row("a", "pass")])
    paper = C.frame([_row("z", "fail")])
    m = verdict_matrix(run, paper)
    assert m.claim_id.tolist() == ["a", "z"]
    assert m.set_index("claim_id").paper_verdict.to_dict() == {"a": "-", "z": "fail"}
    assert pd.isna(m.set_index("claim_id").run_measured["z"])
