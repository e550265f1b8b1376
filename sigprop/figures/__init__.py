"""One function per figure: DataFrames in, matplotlib figure out (no file I/O)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")


def save(fig, png: str, pdf: str | None = None, dpi: int = 150) -> None:
    """Write a figure as PNG (and PDF), atomically."""
    import os
    from pathlib import Path
    for path, kw in ((png, {"dpi": dpi}), (pdf, {})):
        if path is None:
            continue
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.stem}.tmp{os.getpid()}{p.suffix}")
        fig.savefig(tmp, bbox_inches="tight", **kw)
        os.replace(tmp, p)


def rst_literal_text(text: str) -> str:
    """A caption as reStructuredText that renders as written (the report's captions are RST):
    ``|x|``, ``*``, ``_`` and backquotes are escaped so they are not substitutions or markup."""
    out = text.replace("\\", "\\\\")
    for ch in "|*_`":
        out = out.replace(ch, "\\" + ch)
    return out
