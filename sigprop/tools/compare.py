"""Compare two results folders value by value: every table and text output the run writes.

Used to check that a change meant to keep results (a refactor, a speed-up) kept them:
``sigprop compare results-before results-after`` prints what it compared (files of each kind),
each difference (a claim whose verdict, measured value, expected value, tolerance or detail
moved, a row only on one side, a column on one side only or whose dtype changed, a table cell,
a line of a text output) and exits 1 when there is one, 2 when either folder is missing or
holds no outputs.  Tables are compared by key (claims by study and claim id, run tables by run,
step, metric and probe / layer, theory tables by every column but the value), each column's
dtype first; numbers exactly unless ``rtol`` is given (NaN equals NaN); text columns and text
files exactly.  Figures (PNG, PDF) are not compared: they are drawn from the tables compared
here.

Where a change may move results (new arithmetic in training, say), :func:`claim_shifts` states
for every claim row how far its measured statistic moved in units of its own standard error (the
claims table's ``se``, the before run's where it has one) and whether its verdict changed;
``sigprop compare --shifts FILE`` writes that table as CSV and the report lists every row that
moved and every verdict that changed.
"""

from __future__ import annotations

import sys
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pandas as pd

COMMANDS = ("compare",)
CLAIM_KEY = ["study", "claim_id"]

KINDS = {
    "claims": ["*/claims.parquet", "papers/*/claims.parquet"],
    "merged run tables": ["*/metrics.parquet"],
    "theory tables": ["*/theory.parquet"],
    "shard tables": ["*/runs/*.parquet", "*/measurements/*.parquet"],
    "layer reports": ["*/masks/*_layers.parquet"],
    "study tables": ["*/tables/*.parquet", "*/tables/*.csv"],
    "paper tables": ["papers/*/*.csv"],
    "text outputs": [
        "papers/*/*.md",
        "*/tables/*.md",
        "*/claims.html",
        "papers/*/claims.html",
        "*/scales.html",
        "papers/*/front.html",
    ],
}
"""What ``compare`` reads, by kind (globs relative to the results folder)."""

TIMING_METRICS = ("*seconds", "*per_second", "*gflops")
"""Metrics that time a run on its machine (wall seconds, throughputs, GFLOP/s): they differ between any
two runs; ``--ignore-timing`` leaves their rows out of the run tables it compares."""


def drop_metrics(df: pd.DataFrame, patterns: tuple[str, ...]) -> pd.DataFrame:
    """``df`` without the rows whose ``metric`` matches one of ``patterns`` (shell globs);
    a table without a ``metric`` column is returned as is."""
    if not patterns or "metric" not in df.columns:
        return df
    hit = df["metric"].astype(str).map(lambda m: any(fnmatch(m, p) for p in patterns))
    return df[~hit.to_numpy(bool)].reset_index(drop=True)


class CompareError(ValueError):
    """A folder to compare is missing or holds no outputs."""


def _kind(f: Path) -> str:
    return next(k for k, pats in KINDS.items() if any(f.match(p) for p in pats))


def _files(root: Path) -> list[Path]:
    return sorted(
        {
            p.relative_to(root)
            for pats in KINDS.values()
            for pat in pats
            for p in root.glob(pat)
            if not p.relative_to(root).parts[0].startswith(".")
        }
    )


def _key(f: Path, df: pd.DataFrame) -> list[str] | None:
    """The columns that identify a row of the table ``f`` (None: compare by position)."""
    if f.name == "claims.parquet":
        return CLAIM_KEY
    if "run_id" in df and "metric" in df:
        return [c for c in ("run_id", "step", "metric", "probe", "layer") if c in df]
    if f.name == "theory.parquet":
        key = [c for c in df.columns if c != "value"]
        return key if not df.duplicated(key).any() else None
    return None


def _text_diff(a: str, b: str, limit: int = 5) -> list[str]:
    la, lb = a.splitlines(), b.splitlines()
    out = []
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<end>"
        y = lb[i] if i < len(lb) else "<end>"
        if x != y:
            out.append(f"line {i + 1}: {x[:160]!r} -> {y[:160]!r}")
            if len(out) >= limit:
                return out + ["..."]
    return out


def _show(v) -> str:
    if isinstance(v, (np.floating, np.integer)):
        v = v.item()
    return repr(v)


def _equal(x: pd.Series, y: pd.Series, rtol: float) -> np.ndarray:
    """Element-wise equality of two aligned columns: numbers exactly or within ``rtol``, NaN
    equal to NaN, anything else by its text."""
    miss_x, miss_y = x.isna().to_numpy(), y.isna().to_numpy()
    num = (
        pd.api.types.is_numeric_dtype(x)
        and pd.api.types.is_numeric_dtype(y)
        and not pd.api.types.is_bool_dtype(x)
        and not pd.api.types.is_bool_dtype(y)
    )
    if num:
        a, b = x.to_numpy(float, na_value=np.nan), y.to_numpy(float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            eq = (a == b) | (
                (rtol > 0) & (np.abs(a - b) <= rtol * np.maximum(np.abs(a), np.abs(b)))
            )
    else:
        eq = x.astype(str).to_numpy() == y.astype(str).to_numpy()
    return np.where(miss_x | miss_y, miss_x & miss_y, eq)


def compare_frames(
    a: pd.DataFrame, b: pd.DataFrame, key: list[str] | None, rtol: float = 0.0, limit: int = 20
) -> list[str]:
    """Differences between two tables: a column on one side only, a column whose dtype changed
    (``x: dtype float64 -> object``, even where every value reads the same as text), then row
    by row (by ``key`` when given, else by position), vectorised per column; at most ``limit``
    lines."""
    out = []
    cols_a, cols_b = list(a.columns), list(b.columns)
    if cols_a != cols_b:
        out.append(f"columns differ: {sorted(set(cols_a) ^ set(cols_b))}")
    cols = [c for c in cols_a if c in cols_b]
    out += [
        f"{c}: dtype {a[c].dtype} -> {b[c].dtype}"
        for c in cols
        if str(a[c].dtype) != str(b[c].dtype)
    ]
    if (
        key
        and all(k in cols for k in key)
        and not a.duplicated(key).any()
        and not b.duplicated(key).any()
    ):
        a_i, b_i = a.set_index(key), b.set_index(key)
        only_a = a_i.index.difference(b_i.index)
        only_b = b_i.index.difference(a_i.index)
        out += [f"only before: {k}" for k in list(only_a)[:limit]]
        out += [f"only after: {k}" for k in list(only_b)[:limit]]
        common = a_i.index.intersection(b_i.index)
        a_c, b_c = a_i.loc[common], b_i.loc[common]
        labels = list(common)
        cols = [c for c in cols if c not in key]
    else:
        if len(a) != len(b):
            out.append(f"rows: {len(a)} before, {len(b)} after")
        n = min(len(a), len(b))
        a_c, b_c = a.iloc[:n].reset_index(drop=True), b.iloc[:n].reset_index(drop=True)
        labels = list(range(n))
    bad = []
    for c in cols:
        for i in np.flatnonzero(~_equal(a_c[c], b_c[c], rtol)):
            bad.append((int(i), c))
    for i, c in sorted(bad, key=lambda t: (t[0], cols.index(t[1]))):
        out.append(f"{labels[i]}: {c}: {_show(a_c[c].iloc[i])} -> {_show(b_c[c].iloc[i])}")
        if len(out) >= limit:
            return out + ["..."]
    return out


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)


def _check_folder(root: Path, side: str) -> list[Path]:
    if not root.is_dir():
        raise CompareError(f"{root}: the {side} results folder does not exist")
    files = _files(root)
    if not files:
        raise CompareError(
            f"{root}: the {side} results folder holds no outputs to compare "
            "(no claims, run, theory or paper tables, no summaries)"
        )
    return files


def compare(
    before: str | Path, after: str | Path, rtol: float = 0.0, ignore: tuple[str, ...] = ()
) -> dict[str, list[str]]:
    """Differences per file (relative path -> lines) between two results folders, leaving out
    the run-table rows of the metrics that match ``ignore`` (:func:`drop_metrics`); raises
    :class:`CompareError` when either folder is missing or empty."""
    before, after = Path(before), Path(after)
    fa, fb = _check_folder(before, "before"), _check_folder(after, "after")
    out: dict[str, list[str]] = {}
    for f in sorted(set(fa) | set(fb)):
        if f not in fb or f not in fa:
            out[str(f)] = [f"only in {'before' if f in fa else 'after'}"]
            continue
        if _kind(f) == "text outputs":
            diff = _text_diff(
                (before / f).read_text(errors="replace"), (after / f).read_text(errors="replace")
            )
        else:
            a, b = drop_metrics(_read(before / f), ignore), drop_metrics(_read(after / f), ignore)
            diff = compare_frames(a, b, _key(f, a), rtol)
        if diff:
            out[str(f)] = diff
    return out


SHIFT_COLUMNS = [
    "study",
    "claim_id",
    "kind",
    "measured_before",
    "measured_after",
    "shift",
    "se",
    "shift_se",
    "verdict_before",
    "verdict_after",
]


def _study_claims(root: Path) -> pd.DataFrame:
    """Every study's claims rows of a results folder (``<study>/claims.parquet``; the papers'
    merged tables, ``papers/<id>/claims.parquet``, repeat them)."""
    frames = [pd.read_parquet(p) for p in sorted(root.glob("*/claims.parquet"))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=CLAIM_KEY)


def claim_shifts(before: str | Path, after: str | Path) -> pd.DataFrame:
    """One row per claim row on both sides (:data:`SHIFT_COLUMNS`): the measured value before
    and after, ``shift`` = after - before, ``se`` the before run's standard error of the
    measured value (the after run's where the before table has none, e.g. a table written
    before the column existed), ``shift_se`` = shift / se (0 when the value did not move, NaN
    when it moved and the row has no SE or a value is not a number), and both verdicts."""
    a, b = _study_claims(Path(before)), _study_claims(Path(after))
    if not len(a) or not len(b):
        return pd.DataFrame(columns=SHIFT_COLUMNS)
    cols = CLAIM_KEY + ["kind", "measured", "verdict", "se"]
    a, b = (d.assign(se=d["se"] if "se" in d else np.nan)[cols] for d in (a, b))
    m = a.merge(b, on=CLAIM_KEY, suffixes=("_before", "_after"))
    x = pd.to_numeric(m["measured_before"], errors="coerce").to_numpy(float)
    y = pd.to_numeric(m["measured_after"], errors="coerce").to_numpy(float)
    se_a, se_b = m["se_before"].to_numpy(float), m["se_after"].to_numpy(float)
    se = np.where(np.isfinite(se_a) & (se_a > 0), se_a, se_b)
    same = (x == y) | (np.isnan(x) & np.isnan(y))
    with np.errstate(invalid="ignore", divide="ignore"):
        shift = y - x
        z = np.where(same, 0.0, np.where(np.isfinite(se) & (se > 0), shift / se, np.nan))
    return pd.DataFrame(
        {
            "study": m["study"],
            "claim_id": m["claim_id"],
            "kind": m["kind_after"],
            "measured_before": x,
            "measured_after": y,
            "shift": np.where(same, 0.0, shift),
            "se": se,
            "shift_se": z,
            "verdict_before": m["verdict_before"],
            "verdict_after": m["verdict_after"],
        }
    )[SHIFT_COLUMNS]


def shift_report(shifts: pd.DataFrame) -> list[str]:
    """Lines for :func:`summary`: how many claim rows moved, the largest shift in SE units, each
    row that moved and each verdict that changed."""
    if not len(shifts):
        return []
    moved = shifts[shifts["shift"].ne(0) | shifts.verdict_before.ne(shifts.verdict_after)]
    z = shifts.shift_se.abs()
    lines = [
        f"claim rows: {len(shifts)} on both sides, {len(moved)} moved"
        + (f", largest |shift| {z.max():.2f} SE" if z.notna().any() and len(moved) else "")
        + f", {int(moved.shift_se.isna().sum())} moved without an SE"
    ]
    for r in moved.itertuples():
        zs = f"{r.shift_se:+.2f} SE" if np.isfinite(r.shift_se) else "no SE"
        v = (
            f"; verdict {r.verdict_before} -> {r.verdict_after}"
            if r.verdict_before != r.verdict_after
            else f"; verdict {r.verdict_after}"
        )
        lines.append(
            f"  {r.study} {r.claim_id} ({r.kind}): {r.measured_before:.6g} -> "
            f"{r.measured_after:.6g} ({zs}){v}"
        )
    changed = moved[moved.verdict_before != moved.verdict_after]
    lines.append(
        f"verdicts changed: {len(changed)}"
        + "".join(
            f"\n  {r.study} {r.claim_id}: {r.verdict_before} -> {r.verdict_after}"
            for r in changed.itertuples()
        )
    )
    return lines


def summary(
    before: str | Path,
    after: str | Path,
    rtol: float = 0.0,
    shifts: str | Path | None = None,
    ignore: tuple[str, ...] = (),
) -> tuple[str, int]:
    """A readable report (what was compared, by kind, every difference, and the claim rows'
    shifts in SE units) and the number of files that differ; ``shifts``: also write
    :func:`claim_shifts` there as CSV.  Raises :class:`CompareError` for a missing or empty
    folder.  ``ignore``: metrics left out of the run tables (:func:`drop_metrics`), and said
    so."""
    diffs = compare(before, after, rtol, ignore)
    files = sorted(set(_files(Path(before))) | set(_files(Path(after))))
    counts = [(k, sum(_kind(f) == k for f in files)) for k in KINDS]
    lines = [
        "compared "
        + ", ".join(f"{n} {k}" for k, n in counts if n)
        + " (figures are drawn from these and not compared)"
    ]
    if ignore:
        lines.append(f"left out of the run tables: the metrics {', '.join(ignore)}")
    lines += [f"{f}:\n  " + "\n  ".join(d) for f, d in diffs.items()]
    lines.append(f"{len(diffs)} of {len(files)} files differ")
    table = claim_shifts(before, after)
    lines += shift_report(table)
    if shifts is not None:
        Path(shifts).parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(shifts, index=False)
        lines.append(f"claim shifts written to {shifts}")
    return "\n".join(lines), len(diffs)


def register(subparsers) -> None:
    """``sigprop compare BEFORE AFTER``: :func:`summary` printed."""
    cmp = subparsers.add_parser(
        "compare",
        help="compare two results folders' tables and text outputs value by value",
        description="Compare every table the run writes (claims, merged run tables, theory, "
        "shard tables, layer reports, study and paper tables, by key) and its text "
        "outputs (summaries, claims pages, paper tables in Markdown, the front page, "
        "by content) of two results folders, e.g. before and after a change meant to "
        "keep results; print what was compared, each difference and how far each "
        "claim's measured value moved in units of its standard error (the claims "
        "table's se), with every verdict that changed; exit 1 when there is a "
        "difference, 2 when a folder is missing or holds no outputs.",
    )
    cmp.add_argument("before")
    cmp.add_argument("after")
    cmp.add_argument(
        "--rtol", type=float, default=0.0, help="relative tolerance for numbers [default: 0, exact]"
    )
    cmp.add_argument(
        "--shifts",
        metavar="CSV",
        help="write every claim row's shift (after - before), its SE and the shift "
        "in SE units, with both verdicts, to this CSV file",
    )
    cmp.add_argument(
        "--ignore-timing",
        action="store_true",
        help="leave the metrics that time the run on its machine ("
        + ", ".join(TIMING_METRICS)
        + ") out of the run tables compared; claims that read them are still compared",
    )
    cmp.set_defaults(func=main)


def main(args: dict) -> int:
    """Print the report: 0 when nothing differs, 1 when something does, 2 for a missing or
    empty folder."""
    try:
        text, n = summary(
            args["before"],
            args["after"],
            args["rtol"],
            args.get("shifts"),
            TIMING_METRICS if args.get("ignore_timing") else (),
        )
    except CompareError as e:
        print(f"sigprop compare: {e}", file=sys.stderr)
        return 2
    print(text)
    return 1 if n else 0
