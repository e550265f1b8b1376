"""Shared figure helpers: saving (atomic PNG and PDF) and captions as reStructuredText.

A study's figures live in its package (``sigprop/studies/<kind>/figures.py``): one function per
figure, DataFrames in, a matplotlib figure out, no file I/O.  This module does not import
matplotlib itself, so that the rules can read captions while the DAG is built.
"""

from __future__ import annotations

from pathlib import Path


def use_agg() -> None:
    """Draw off screen (the figure jobs run on machines without a display)."""
    import matplotlib

    matplotlib.use("Agg")


def save(fig, png: str, pdf: str | None = None, dpi: int = 150) -> None:
    """Write a figure as PNG (and PDF), atomically, and close it."""
    import matplotlib.pyplot as plt

    from .. import atomic

    try:
        for path, kw in ((png, {"dpi": dpi}), (pdf, {})):
            if path is not None:
                with atomic.target(path, suffix=Path(path).suffix) as tmp:
                    fig.savefig(tmp, bbox_inches="tight", **kw)
    finally:
        plt.close(fig)


def rst_literal_text(text: str) -> str:
    """A caption as reStructuredText that renders as written (the report's captions are RST):
    ``|x|``, ``*``, ``_`` and backquotes are escaped so they are not substitutions or markup."""
    out = text.replace("\\", "\\\\")
    for ch in "|*_`":
        out = out.replace(ch, "\\" + ch)
    return out
