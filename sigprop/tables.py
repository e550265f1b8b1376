"""Parquet tables: the interface between stages.

Schemas (long format; documented in docs/tables.md):

* run rows (``results/{study}/runs/{shard}.parquet`` and the merged
  ``results/{study}/metrics.parquet``): ``study, shard_id, run_id, step,
  metric, value`` plus every :class:`~sigprop.runs.RunSpec` field as a column
  and ``device, tf32``; the merged table also has ``block``, the label of the grid block
  that made the run (``label:`` in the study file), which figures and claims split by.
* theory rows (``results/{study}/theory.parquet``): ``study, quantity, value``
  plus the hyperparameter columns the quantity depends on.
* claims (``results/{study}/claims.parquet``): :data:`CLAIM_COLUMNS`.

Writes are atomic (temp file in the same folder, then rename), so a killed
job never leaves a half-written table behind.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import atomic
from .runs import runs_digest, shard_id_of

RUN_KEY = ["run_id", "step", "metric"]
RUN_COLUMNS = ["study", "shard_id", "run_id", "step", "metric", "value"]
THEORY_COLUMNS = ["study", "quantity", "value"]
CLAIM_COLUMNS = [
    "study",
    "claim_id",
    "claim",
    "source",
    "measured",
    "expected",
    "tolerance",
    "verdict",
    "detail",
    "values",
    "kind",
    "test",
    "detectable",
    "exploratory",
    "margin",
    "scale",
    "regime",
    "se",
    "tolerance_source",
    "false_pass",
    "reading",
]
"""Columns of a claims table (:func:`sigprop.claims.row`): ``kind`` is ``claim`` (a paper
statement tested against measurement, which could come out either way), ``beyond`` (a statement
the paper does not make; ``source`` starts "beyond the paper"), ``sanity`` (an identity,
theorem or control that must hold if the apparatus is right) or ``summary`` (pooled over
claims); only claims are tallied.  ``test`` names the test and ``detectable`` the smallest
effect it could detect at the configured design; ``margin`` is an equivalence claim's largest
tolerated deviation (a pass needs ``detectable <= margin``; NaN for other tests);
``exploratory`` marks a verdict obtained after the study's design was changed (the study file's
``design.changes``); ``scale`` is the scale the row was measured at and ``regime`` what differs
there from the paper's setup along the axes the claim depends on (empty: the paper's regime;
:mod:`sigprop.claims.reading`); ``se`` is the standard error of ``measured`` where its test has
one (over seeds, draws or units; NaN for rank tests, counts and identities), the unit in which
``sigprop compare`` states how far a claim's statistic moved between two runs;
``tolerance_source`` says where the tolerance comes from (``paper: <where>``, ``exact: <why>``
for a statement that admits no tolerance beyond sampling error, ``ours: <why>`` for the
project's choice, ``unverified: <why>`` for a printed formula whose evaluation does not
reproduce the paper's own numbers; :mod:`sigprop.claims.reading`); ``false_pass`` is the
probability that the test passes when the claim is false (NaN where the test has no such null,
e.g. an agreement test, whose power is its ``detectable``); ``reading`` is how the verdict reads
(:func:`sigprop.claims.reading.reading`)."""


class TableError(ValueError):
    """A table is missing, malformed or inconsistent; the message names the path."""


def run_rows(
    shard, long: pd.DataFrame, device: str, tf32: bool = False, order: tuple[str, ...] = ("step",)
) -> pd.DataFrame:
    """Long rows of a shard in the run-table schema.

    ``long`` has a ``model`` column (index into ``shard.runs``) plus ``metric``,
    ``value`` and any keys (``step``, ``probe``, ``layer``); missing ``step``
    is 0 (a measurement at initialization).  Each run's id and hyperparameters
    are joined as columns, ``study``/``shard_id`` lead, ``device``/``tf32`` close.
    """
    hp = pd.DataFrame([{"run_id": r.run_id, **r.as_dict()} for r in shard.runs])
    df = long.merge(hp, left_on="model", right_index=True).drop(columns="model")
    if "step" not in df.columns:
        df["step"] = 0
    df["metric"] = df["metric"].astype("string")
    df.insert(0, "study", shard.study)
    df.insert(1, "shard_id", shard.shard_id)
    df["device"] = device
    df["tf32"] = bool(tf32)
    return df.sort_values(["run_id", "metric", *order], kind="stable").reset_index(drop=True)


STAMP_KEY = b"sigprop"
"""The Parquet schema metadata key of a table's stamp (:func:`write_atomic`)."""


def content_digest(df: pd.DataFrame) -> str:
    """SHA-256 (16 hex digits) of a table's columns and values, row order included."""
    import hashlib

    h = hashlib.sha256("\0".join(map(str, df.columns)).encode())
    if len(df):
        h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]


def write_atomic(df: pd.DataFrame, path: str | Path, stamp: dict | None = None) -> Path:
    """Write ``df`` as Parquet atomically (:mod:`sigprop.atomic`: nothing left on failure),
    stamped with what made it (``stamp``: e.g. the study, scale, shard, run digest, parameter
    digest) and its row count and content digest, which every reader checks
    (:func:`read`)."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[STAMP_KEY] = json.dumps(
        {**(stamp or {}), "rows": len(df), "content": content_digest(df)}, sort_keys=True
    ).encode()
    with atomic.target(path) as tmp:
        pq.write_table(table.replace_schema_metadata(meta), tmp)
    return Path(path)


def stamp_of(path: str | Path) -> dict | None:
    """The stamp a table was written with (:func:`write_atomic`), None when it has none."""
    import json

    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta[STAMP_KEY]) if STAMP_KEY in meta else None


def read(
    path: str | Path,
    required: list[str] | None = None,
    expect: dict | None = None,
    empty_ok: bool = True,
    hint: str | None = None,
) -> pd.DataFrame:
    """A table, checked: readable, with the ``required`` columns, untouched since it was
    written (its row count and content equal its stamp's, when it has one), made for what
    the reader expects (``expect``: stamp keys and values, e.g. ``{"study": ..., "scale":
    ...}``; a table without a stamp then is refused), and not empty unless ``empty_ok``.
    Every refusal names the file and what remakes it: ``hint``, or the Snakemake command that
    rebuilds it (:func:`rebuild_hint`) for a table the workflow writes."""
    path = Path(path)
    hint = hint or rebuild_hint(path)
    try:
        df = pd.read_parquet(path)
        stamp = stamp_of(path)
    except FileNotFoundError:
        raise TableError(f"{path}: table not found") from None
    except Exception as e:
        raise TableError(
            f"{path}: not a readable Parquet table ({type(e).__name__}: {e})"
        ) from None
    missing = [c for c in (required or []) if c not in df.columns]
    if missing:
        raise TableError(f"{path}: missing column(s) {missing}")
    if stamp is not None and (
        stamp.get("rows") != len(df) or stamp.get("content") != content_digest(df)
    ):
        raise TableError(
            f"{path}: changed after it was written ({len(df)} rows, content "
            f"{content_digest(df)}; written with {stamp.get('rows')} rows, content "
            f"{stamp.get('content')}): {hint}"
        )
    if expect:
        check_stamp(path, expect, stamp, hint)
    if not empty_ok and not len(df):
        raise TableError(f"{path}: holds no rows: {hint}")
    return df


def check_stamp(
    path: str | Path, expect: dict, stamp: dict | None = None, hint: str | None = None
) -> None:
    """The table at ``path`` was made for what ``expect`` names (its stamp's values; the stamp
    read from the file's metadata when not given); ``hint`` as in :func:`read`."""
    stamp = stamp_of(path) if stamp is None else stamp
    hint = hint or rebuild_hint(path)
    if stamp is None:
        raise TableError(
            f"{path}: carries no stamp of the workflow that wrote it (another "
            f"tool, or an older sigprop): {hint}"
        )
    for k, v in expect.items():
        if stamp.get(k) != v:
            raise TableError(
                f"{path}: was made for {k} {_short(stamp.get(k))}; the workflow "
                f"expects {k} {_short(v)}: {hint}"
            )


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 120 else text[:120] + "..."


def _holds(df: pd.DataFrame) -> str:
    studies = sorted(map(str, set(df.study))) if "study" in df else ["?"]
    shards = sorted(map(str, set(df.shard_id))) if "shard_id" in df else ["?"]
    n = df.run_id.nunique() if "run_id" in df else 0
    return (
        f"study {', '.join(studies) or '(none)'}, shard {', '.join(shards[:3]) or '(none)'}"
        f"{' ...' if len(shards) > 3 else ''}, {n} runs"
    )


def rebuild_hint(path) -> str:
    """The command that rebuilds exactly the file ``path`` (and nothing else that is up to
    date): Snakemake's ``--force`` on that target.  (``--forcerun RULE PATH`` would read RULE and
    PATH as rule names and force every job of the default target.)"""
    return f"rebuild it with `snakemake --force {path}`"


def _rebuild(rule: str, path) -> str:
    return f"it is written by rule {rule}: {rebuild_hint(path)}"


def check_shard_table(df: pd.DataFrame, path: str | Path, manifest: dict) -> None:
    """A shard table is the one the DAG expects under its name: its ``study`` and ``shard_id``
    columns and its set of run ids equal the manifest's (:meth:`sigprop.config.Study.manifest`)
    for the shard the file is named after.  A table copied from another study or another grid
    stops the merge, naming both shards and the command that rebuilds the file."""
    path = Path(path)
    sid, study = path.stem, manifest["study"]
    rule = manifest.get("rule", "measure_shard or train_shard")
    expected = manifest["shards"].get(sid)
    if expected is None:
        raise TableError(
            f"{path}: study '{study}' has no shard {sid} in the current config; "
            "the merge was given a file the workflow did not ask for"
        )
    want = {rid for rid, _ in expected}
    got = set(df.run_id)
    if set(df.study) == {study} and set(df.shard_id) == {sid} and got == want:
        return
    parts = []
    if got - want:
        parts.append(
            f"{len(got - want)} runs the shard does not have (e.g. {sorted(got - want)[0]})"
        )
    if want - got:
        parts.append(f"{len(want - got)} of its runs missing (e.g. {sorted(want - got)[0]})")
    raise TableError(
        f"{path}: holds {_holds(df)}; the workflow expects shard {sid} of study "
        f"{study} with {len(want)} runs"
        + (f" ({'; '.join(parts)})" if parts else "")
        + f". The file was not written for this shard (copied, or left from another "
        f"grid): {_rebuild(rule, path)}"
    )


def check_runs_table(df: pd.DataFrame, path: str | Path, expect: dict) -> None:
    """A study's merged run table holds exactly the study's runs (``expect``:
    :meth:`sigprop.config.Study.expect`, the study and the digest of its run ids)."""
    ok = set(df.study) == {expect["study"]} and runs_digest(df.run_id.unique()) == expect["runs"]
    if not ok:
        raise TableError(
            f"{path}: holds {_holds(df)} (run digest {runs_digest(df.run_id.unique())}); "
            f"the workflow expects the {expect['n_runs']} runs of study "
            f"{expect['study']} (digest {expect['runs']}): "
            f"{_rebuild('merge_metrics', path)}"
        )


def check_study_column(df: pd.DataFrame, path: str | Path, study: str, rule: str) -> None:
    """A table made for one study (theory, claims, layer reports) names that study (an empty
    table names none and passes)."""
    if len(df) == 0:
        return
    got = sorted(map(str, set(df.study))) if "study" in df else []
    if got != [study]:
        raise TableError(
            f"{path}: holds rows of study {', '.join(got) or '(none)'}; the workflow "
            f"expects study {study}: {_rebuild(rule, path)}"
        )


def shard_stamp(shard) -> dict:
    """What a shard table is stamped with: its study, shard id, the digest of its runs and
    their ids in order (which :func:`computed_shards` reads back)."""
    return {
        "kind": "shard",
        "study": shard.study,
        "shard": shard.shard_id,
        "runs": runs_digest(r.run_id for r in shard.runs),
        "members": [r.run_id for r in shard.runs],
    }


SHARD_FOLDERS = ("runs", "measurements")
"""Where a study's shard tables lie under ``results/{study}/``: trained, or measured at
initialization (rules/train.smk, rules/measure.smk)."""


def computed_shards(results: str | Path, study: str) -> list[tuple[str, ...]]:
    """The shards of ``study`` already computed under ``results``: the member run ids, in
    order, of each shard table whose stamp names them and hashes to its file name
    (:func:`sigprop.runs.make_shards` keeps these when a grid grows).  A table without such a
    stamp, or one that cannot be read, is left out: its runs are sharded afresh."""
    out = []
    for folder in SHARD_FOLDERS:
        for path in sorted((Path(results) / study / folder).glob("s*.parquet")):
            try:
                stamp = stamp_of(path) or {}
            except Exception:
                continue
            ids = stamp.get("members")
            if (
                stamp.get("kind") != "shard"
                or stamp.get("study") != study
                or not isinstance(ids, list)
                or not ids
            ):
                continue
            if shard_id_of(study, ids) == path.stem == stamp.get("shard"):
                out.append(tuple(ids))
    return out


def merge_runs(paths: list[str | Path], manifest: dict | None = None) -> pd.DataFrame:
    """Concatenate shard tables; refuse duplicated (run_id, step, metric) rows.

    With ``manifest`` (:meth:`sigprop.config.Study.manifest`: the study and, per shard id,
    its ``[run_id, label]`` pairs) each table is checked to be the shard it is named after
    (:func:`check_shard_table`) and every run gets its block label as the ``block`` column."""
    frames = []
    for p in paths:
        df = read(p, RUN_COLUMNS, empty_ok=False)
        if manifest is not None:
            check_shard_table(df, p, manifest)
            sid = Path(p).stem
            want = manifest["shards"].get(sid) or []
            check_stamp(
                p,
                {
                    "kind": "shard",
                    "study": manifest["study"],
                    "shard": sid,
                    "runs": runs_digest(rid for rid, _ in want),
                },
            )
        frames.append(df)
    if not frames:
        raise TableError("no shard tables to merge")
    df = pd.concat(frames, ignore_index=True)
    if manifest is not None:
        labels = {rid: label for pairs in manifest["shards"].values() for rid, label in pairs}
        df["block"] = df.run_id.map(labels).astype("string")
    key = RUN_KEY + [c for c in ("probe", "layer") if c in df.columns]
    dup = df.duplicated(key, keep=False)
    if dup.any():
        ex = df.loc[dup, key + ["shard_id"]].head(4).to_dict("records")
        raise TableError(f"duplicated rows across shard tables, e.g. {ex}")
    return df.sort_values(["run_id", "metric", "step"], kind="stable").reset_index(drop=True)


def concat_claims(
    paths: list[str | Path], studies: list[str] | None = None, expects: dict | None = None
) -> pd.DataFrame:
    """One paper's claims: the studies' claims tables stacked, in the order given.

    With ``studies`` (one per path) each table must hold that study's claims; a (study,
    claim_id) pair twice is an error naming the files (two studies sharing a name would
    otherwise hide each other's verdicts).  With ``expects`` (per study, the stamp its
    claims table must carry: scale and run digest) a table of another scale or grid, or one
    not written by the claims job, is refused; so is an empty table.
    """
    if studies is not None and len(studies) != len(paths):
        raise ValueError("concat_claims: one study name per claims table")
    frames = []
    for i, p in enumerate(paths):
        want = (expects or {}).get(studies[i]) if studies is not None else None
        df = read(p, CLAIM_COLUMNS, expect=want, empty_ok=False)
        if studies is not None:
            check_study_column(df, p, studies[i], "claims")
        frames.append(df)
    if not frames:
        raise TableError("no claims tables to merge")
    df = pd.concat(frames, ignore_index=True)[CLAIM_COLUMNS]
    dup = df.duplicated(["study", "claim_id"], keep=False)
    if dup.any():
        first = df[dup].iloc[0]
        raise TableError(
            f"claim {first.study}:{first.claim_id} appears twice in "
            f"{', '.join(str(p) for p in paths)}"
        )
    return df
