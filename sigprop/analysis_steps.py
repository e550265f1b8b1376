"""The light workflow steps (theory, figures, claims, study tables, merge) as plain functions:
Parquet in, Parquet / figures / HTML out, no torch.  ``scripts/`` only unpack Snakemake's
arguments and call these; the heavy steps are in :mod:`sigprop.workflow_steps`."""

from __future__ import annotations

import json
import logging

from . import registry, tables
from .contract import Params

log = logging.getLogger("sigprop.steps")


def job_params(kind: str, params_json: str) -> Params:
    """A job's :class:`~sigprop.contract.Params` from the JSON the rule passed."""
    return Params.from_json(registry.spec(kind), params_json)


def _layers(fn, layer_paths) -> dict:
    """``layers`` (the prune stage's per-layer reports, stacked) for functions that take it."""
    if not registry.takes_layers(fn):
        return {}
    import pandas as pd
    frames = [tables.read(p) for p in layer_paths]
    return {"layers": pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()}


def merge(paths: list[str], manifest_json: str, out: str):
    """All shard tables of a study as one table, each run labelled with its block."""
    df = tables.merge_runs(list(paths), json.loads(manifest_json))
    tables.write_atomic(df, out)
    log.info("%d rows from %d shards, %d runs", len(df), len(paths), df.run_id.nunique())
    return df


def theory(kind: str, study: str, params_json: str, settings: list[dict], out: str):
    """The study's theory table on its runs' settings."""
    p = job_params(kind, params_json)
    df = registry.theory_function(kind)(study, p, [dict(x) for x in settings])
    tables.write_atomic(df, out)
    log.info("%d theory rows", len(df))
    return df


def figure(kind: str, name: str, params_json: str, runs: str, theory: str, layers: list[str],
           png: str, pdf: str) -> None:
    """One of the study's figures, from its run and theory tables."""
    from .figures import save, use_agg
    use_agg()
    p = job_params(kind, params_json)
    fn = registry.figure_function(kind, name)
    fig = fn(tables.read(runs, tables.RUN_COLUMNS), tables.read(theory, tables.THEORY_COLUMNS),
             p, **_layers(fn, layers))
    save(fig, png, pdf)


def claims(kind: str, study: str, params_json: str, runs: str, theory: str,
           layers: list[str], out: str, html: str):
    """The study's claims table, as Parquet and HTML."""
    from .claims.render import to_html
    p = job_params(kind, params_json)
    fn = registry.claims_function(kind)
    df = fn(tables.read(runs, tables.RUN_COLUMNS), tables.read(theory, tables.THEORY_COLUMNS),
            p, **_layers(fn, layers))
    tables.write_atomic(df, out)
    _write_text(html, to_html(df, title=f"Claims: {study}"))
    for r in df.itertuples():
        log.info("%s: %s (measured %s, tolerance %s)", r.claim_id, r.verdict, r.measured,
                 r.tolerance)
    return df


def study_table(kind: str, name: str, params_json: str, runs: str, parquet: str, md: str,
                csv: str):
    """One of the study's own tables (``SPEC.tables``) as Parquet, Markdown and CSV."""
    from .claims.render import write_table
    p = job_params(kind, params_json)
    df, title = registry.table_function(kind)(name, tables.read(runs, tables.RUN_COLUMNS), p)
    tables.write_atomic(df, parquet)
    write_table({name: df}, md, csv, title)
    log.info("%s: %d rows", name, len(df))
    return df


def _write_text(path: str, text: str) -> None:
    import os
    from pathlib import Path
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()
