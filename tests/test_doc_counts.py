"""Counts written out in the docs ("five papers", "fourteen studies", "Seven studies ... at
paper scale") match what they count, so adding a paper or a study cannot leave them stale."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from sigprop.papers import PAPERS

REPO = Path(__file__).resolve().parents[1]
WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()


def counts(text: str, noun: str) -> list[int]:
    """Each number written before ``noun`` in ``text`` (a word or digits, at most one word such
    as "deep-learning-theory" between them, across line breaks)."""
    pattern = rf"\b({'|'.join(WORDS)}|\d+)\s+(?:[\w-]+\s+)?{noun}\b"
    out = []
    for m in re.finditer(pattern, text, flags=re.IGNORECASE):
        word = m.group(1).lower()
        out.append(int(word) if word.isdigit() else WORDS.index(word))
    return out


def _default_studies() -> list[str]:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())["studies"]


def test_the_reader_finds_counts_across_line_breaks():
    assert counts("of five\ndeep-learning-theory papers on", "papers") == [5]
    assert counts("Fourteen studies, 12 studies", "studies") == [14, 12]
    assert counts("the studies of five", "papers") == []


def test_the_number_of_papers_is_the_papers_declared():
    readme = (REPO / "README.md").read_text()
    papers_md = (REPO / "docs" / "papers.md").read_text()
    found = counts(readme.split("\n## ", 1)[0], "papers") + counts(
        papers_md.splitlines()[0], "papers"
    )
    assert found and set(found) == {len(PAPERS)}, found


def test_the_number_of_studies_of_the_default_run_is_the_configs():
    top = (REPO / "README.md").read_text().split("\n## Set-up", 1)[1].split("\n## ", 1)[0]
    found = counts(top, "studies")
    assert found and set(found) == {len(_default_studies())}, found


def test_the_number_of_paper_scale_studies_is_the_committed_evidence():
    text = (REPO / "docs" / "papers.md").read_text()
    m = re.search(r"\b(\w+) studies need neither a GPU nor a download at paper scale", text)
    assert m, "docs/papers.md no longer states how many studies have paper-scale verdicts"
    committed = [
        d
        for d in (REPO / "docs" / "evidence" / "paper-scale").iterdir()
        if (d / "claims.parquet").is_file()
    ]
    assert WORDS.index(m.group(1).lower()) == len(committed)
