"""Every figure caption renders in the Snakemake report (reStructuredText) without errors."""

import io

import pytest
from docutils.core import publish_doctree
from docutils.utils import Reporter

from sigprop import registry
from sigprop.figures import rst_literal_text


def _rst_problems(text: str) -> list[str]:
    """Warnings and errors docutils reports while parsing ``text`` (as the report does)."""
    stream = io.StringIO()
    publish_doctree(
        text,
        settings_overrides={
            "warning_stream": stream,
            "report_level": Reporter.WARNING_LEVEL,
            "halt_level": Reporter.SEVERE_LEVEL + 1,
        },
    )
    return [line for line in stream.getvalue().splitlines() if line.strip()]


def test_escaping_keeps_the_text():
    raw = "mean pairwise |Δ ln τ|, g_aa* and `x`"
    doc = publish_doctree(rst_literal_text(raw))
    assert doc.astext() == raw
    assert _rst_problems(raw)  # unescaped, the bars are an undefined substitution


@pytest.mark.parametrize("kind", registry.kinds())
def test_captions_are_valid_rst(kind):
    for name, fig in registry.spec(kind).figures.items():
        assert not _rst_problems(rst_literal_text(fig.caption)), name
