"""``snakemake --lint``: every lint it reports is one the rules justify where it fires.

Two kinds remain, each explained in a comment at the rule: the data rules have no ``conda:``
directive (every job runs in the environment the README installs from requirements.lock), and a
few ``run:`` blocks are longer than the linter's bytecode budget (they call one package function
with many named files, and stay ``run:`` blocks so that a local job is a thread of the Snakemake
process instead of a new interpreter).  Any other lint, or one of these on another rule, fails.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CONDA = "Specify a conda environment or container for each rule."
LONG_RUN = "Migrate long run directives into scripts or notebooks"
JUSTIFIED = {
    ("fetch_raw", CONDA),
    ("prepare_dataset", CONDA),
    ("train_shard", LONG_RUN),
    ("measure_shard", LONG_RUN),
    ("paper_claims", LONG_RUN),
    ("paper_front", LONG_RUN),
}


def lints(text: str) -> set[tuple[str, str]]:
    """(rule or file, title) of every lint in ``snakemake --lint``'s text output."""
    found, where = set(), None
    for line in text.splitlines():
        m = re.match(r"^Lints for (?:rule (\w+)|snakefile (\S+))", line)
        if m:
            where = m.group(1) or Path(m.group(2).rstrip(":")).name
            continue
        m = re.match(r"^    \* (.+?):?$", line)
        if m and where:
            found.add((where, m.group(1)))
    return found


def test_lints_are_the_justified_ones():
    p = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint", "--cores", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = lints(p.stdout + p.stderr)
    assert found, p.stdout + p.stderr  # the parser reads the linter's output
    assert found <= JUSTIFIED, sorted(found - JUSTIFIED)
    for rule, title in found:  # justified at the rule, in its file
        files = [f for f in (REPO / "rules").glob("*.smk") if f"rule {rule}:" in f.read_text()]
        assert files and "tests/test_lint.py" in files[0].read_text(), (rule, title)


def test_the_lint_reader_sees_each_kind():
    text = (
        "Lints for snakefile /x/workflow/Snakefile:\n    * Mixed rules and functions in same "
        "snakefile.:\n      body\nLints for rule a (line 5, /x/rules/a.smk):\n    * "
        f"{CONDA}:\n      body\n"
    )
    assert lints(text) == {
        ("Snakefile", "Mixed rules and functions in same snakefile."),
        ("a", CONDA),
    }
