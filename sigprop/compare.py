"""Compare two results folders value by value: every claims table, paper table and study table.

Used to check that a change meant to keep results (a refactor, a speed-up) kept them:
``sigprop compare results-before results-after`` prints each difference (a claim whose verdict,
measured value, expected value, tolerance or detail moved, a claim only on one side, a table
cell) and exits 1 when there is one.  Numbers are compared exactly unless ``rtol`` is given
(NaN equals NaN); text columns exactly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

CLAIM_KEY = ["study", "claim_id"]


def _files(root: Path) -> list[Path]:
    pats = ["*/claims.parquet", "papers/*/claims.parquet", "*/tables/*.parquet",
            "papers/*/*.csv"]
    return sorted({p.relative_to(root) for pat in pats for p in root.glob(pat)})


def _missing(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and np.isnan(v))


def _same(a, b, rtol: float) -> bool:
    if _missing(a) or _missing(b):
        return _missing(a) and _missing(b)
    num = (int, float, np.integer, np.floating)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, (bool, np.bool_)):
        x, y = float(a), float(b)
        return x == y or (rtol > 0 and abs(x - y) <= rtol * max(abs(x), abs(y)))
    return str(a) == str(b)


def _show(v) -> str:
    if isinstance(v, (np.floating, np.integer)):
        v = v.item()
    return repr(v)


def compare_frames(a: pd.DataFrame, b: pd.DataFrame, key: list[str] | None,
                   rtol: float = 0.0, limit: int = 20) -> list[str]:
    """Differences between two tables, row by row (by ``key`` when given, else by position)."""
    out = []
    cols_a, cols_b = list(a.columns), list(b.columns)
    if cols_a != cols_b:
        out.append(f"columns differ: {sorted(set(cols_a) ^ set(cols_b))}")
    cols = [c for c in cols_a if c in cols_b]
    if key and all(k in cols for k in key):
        a_i, b_i = a.set_index(key), b.set_index(key)
        only_a = a_i.index.difference(b_i.index)
        only_b = b_i.index.difference(a_i.index)
        out += [f"only before: {k}" for k in list(only_a)[:limit]]
        out += [f"only after: {k}" for k in list(only_b)[:limit]]
        common = a_i.index.intersection(b_i.index)
        rows = [(k, a_i.loc[k], b_i.loc[k]) for k in common]
        cols = [c for c in cols if c not in key]
    else:
        if len(a) != len(b):
            out.append(f"rows: {len(a)} before, {len(b)} after")
        rows = [(i, a.iloc[i], b.iloc[i]) for i in range(min(len(a), len(b)))]
    for k, ra, rb in rows:
        for c in cols:
            if not _same(ra[c], rb[c], rtol):
                out.append(f"{k}: {c}: {_show(ra[c])} -> {_show(rb[c])}")
                if len(out) >= limit:
                    return out + ["..."]
    return out


def compare(before: str | Path, after: str | Path, rtol: float = 0.0) -> dict[str, list[str]]:
    """Differences per file (relative path -> lines) between two results folders."""
    before, after = Path(before), Path(after)
    fa, fb = _files(before), _files(after)
    out: dict[str, list[str]] = {}
    for f in sorted(set(fa) | set(fb)):
        if f not in fb or f not in fa:
            out[str(f)] = [f"only in {'before' if f in fa else 'after'}"]
            continue
        read = pd.read_csv if f.suffix == ".csv" else pd.read_parquet
        a, b = read(before / f), read(after / f)
        key = CLAIM_KEY if f.name == "claims.parquet" else None
        diff = compare_frames(a, b, key, rtol)
        if diff:
            out[str(f)] = diff
    return out


def summary(before: str | Path, after: str | Path, rtol: float = 0.0) -> tuple[str, int]:
    """A readable report and the number of files that differ."""
    diffs = compare(before, after, rtol)
    n = len(set(_files(Path(before))) | set(_files(Path(after))))
    lines = [f"{f}:\n  " + "\n  ".join(d) for f, d in diffs.items()]
    lines.append(f"{len(diffs)} of {n} files differ")
    return "\n".join(lines), len(diffs)
