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

import os
from pathlib import Path

import pandas as pd

RUN_KEY = ["run_id", "step", "metric"]
RUN_COLUMNS = ["study", "shard_id", "run_id", "step", "metric", "value"]
THEORY_COLUMNS = ["study", "quantity", "value"]
CLAIM_COLUMNS = ["study", "claim_id", "claim", "source", "measured", "expected",
                 "tolerance", "verdict", "detail", "values"]


class TableError(ValueError):
    """A table is missing, malformed or inconsistent; the message names the path."""


def run_rows(shard, long: pd.DataFrame, device: str, tf32: bool = False,
             order: tuple[str, ...] = ("step",)) -> pd.DataFrame:
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


def write_atomic(df: pd.DataFrame, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        df.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def read(path: str | Path, required: list[str] | None = None) -> pd.DataFrame:
    path = Path(path)
    try:
        df = pd.read_parquet(path)
    except FileNotFoundError:
        raise TableError(f"{path}: table not found") from None
    except Exception as e:
        raise TableError(f"{path}: not a readable Parquet table ({type(e).__name__}: {e})") from None
    missing = [c for c in (required or []) if c not in df.columns]
    if missing:
        raise TableError(f"{path}: missing column(s) {missing}")
    return df


def merge_runs(paths: list[str | Path], manifest: dict | None = None) -> pd.DataFrame:
    """Concatenate shard tables; refuse duplicated (run_id, step, metric) rows.

    With ``manifest`` (:meth:`sigprop.config.Study.manifest`: the study and, per shard id,
    its ``[run_id, label]`` pairs) every run gets its block label as the ``block`` column."""
    frames = [read(p, RUN_COLUMNS) for p in paths]
    if not frames:
        raise TableError("no shard tables to merge")
    df = pd.concat(frames, ignore_index=True)
    if manifest is not None:
        labels = {rid: label for pairs in manifest["shards"].values() for rid, label in pairs}
        missing = sorted(set(df.run_id) - set(labels))
        if missing:
            raise TableError(f"runs {missing[:4]} are in the shard tables but not in the study "
                             f"'{manifest['study']}' the workflow expects")
        df["block"] = df.run_id.map(labels).astype("string")
    key = RUN_KEY + [c for c in ("probe", "layer") if c in df.columns]
    dup = df.duplicated(key, keep=False)
    if dup.any():
        ex = df.loc[dup, key + ["shard_id"]].head(4).to_dict("records")
        raise TableError(f"duplicated rows across shard tables, e.g. {ex}")
    return df.sort_values(["run_id", "metric", "step"], kind="stable").reset_index(drop=True)


def concat_claims(paths: list[str | Path]) -> pd.DataFrame:
    """One paper's claims: the studies' claims tables stacked, in the order given.

    A (study, claim_id) pair twice is an error naming the files (two studies
    sharing a name would otherwise hide each other's verdicts).
    """
    frames = [read(p, CLAIM_COLUMNS) for p in paths]
    if not frames:
        raise TableError("no claims tables to merge")
    df = pd.concat(frames, ignore_index=True)[CLAIM_COLUMNS]
    dup = df.duplicated(["study", "claim_id"], keep=False)
    if dup.any():
        first = df[dup].iloc[0]
        raise TableError(f"claim {first.study}:{first.claim_id} appears twice in "
                         f"{', '.join(str(p) for p in paths)}")
    return df
