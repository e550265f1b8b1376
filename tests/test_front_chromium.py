"""The front page as a browser shows it: a paper's block rendered by headless Chromium (installed
with apt-get where missing, as the scheduler tests install their daemons) leads with the
paper's counts, then the verdict matrix with its ladder column; the tally figure is drawn.

Parsing the fragment (tests/test_front_page.py) checks the markup; this checks what a reader
sees after the browser has laid it out: the order of the rendered text and a non-blank
screenshot."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from cluster.helpers import ensure_debian_packages  # noqa: E402
from test_front_page import SOURCES, _row, _trend  # noqa: E402

from sigprop import claims as C  # noqa: E402
from sigprop.claims import reading  # noqa: E402
from sigprop.claims.front import front_block, tally_figure  # noqa: E402
from sigprop.claims.matrix import verdict_matrix  # noqa: E402
from sigprop.contract import Figure  # noqa: E402

pytestmark = pytest.mark.slow


def _browser() -> str:
    ensure_debian_packages(["chromium"], ["chromium"])
    return shutil.which("chromium") or "/usr/bin/chromium"


def _page(tmp_path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run = reading.apply(
        C.frame([_row("a", "pass"), _row("b", "fail"), _row("c", "fail"), _row("d", "fail")]),
        "quick",
        {"depth": "L = 40, not 200"},
        {"b": ["depth"], "c": [], "d": []},
        SOURCES,
    )
    paper = reading.apply(C.frame([_row("a", "pass")]), "paper", {}, {}, SOURCES)
    m = verdict_matrix(run, paper)
    fig = tally_figure(m, "000 A paper", "quick", {"run": "1 of 1 study", "paper": "1 of 1 study"})
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    block = front_block(
        "000",
        "000 A paper",
        m,
        "quick scale (1 of 1 study; digits): 4 claims: COUNTS-FIRST",
        buf.getvalue(),
        {"s": "quick"},
        {"s": {"fig_a": Figure("f", "cap", claims=("a",))}},
        {"s"},
        trends={("s", "a"): _trend("a", "flat")},
    )
    page = tmp_path / "front.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'></head><body>"
        + block
        + "</body></html>\n"
    )
    return page


def _chromium(browser: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_rendered_front_page_leads_with_the_counts_and_shows_the_ladder_column(tmp_path):
    browser = _browser()
    page = _page(tmp_path)
    dom = _chromium(browser, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    counts, table = html.find("COUNTS-FIRST"), html.find("<table")
    assert 0 <= counts < table, "the counts must come before the verdict matrix"
    assert html.find("<img") < table
    assert "ladder trend (committed rungs)" in html and "flat (supported at ladder3)" in html
    assert "departs (our tol.)" in html and "contradicts" in html
    shot = tmp_path / "front.png"
    r = _chromium(browser, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri())
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    from PIL import Image

    img = Image.open(shot).convert("L")
    lo, hi = img.getextrema()
    assert hi - lo > 100, "the screenshot is blank"
