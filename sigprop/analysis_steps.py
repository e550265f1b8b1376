"""The light workflow steps (theory, figures, claims, study tables, merge) as plain functions:
Parquet in, Parquet / figures / HTML out, no torch.  ``scripts/`` only unpack Snakemake's
arguments and call these; the heavy steps are in :mod:`sigprop.workflow_steps`."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from . import atomic, registry, tables
from .contract import Params

log = logging.getLogger("sigprop.steps")


def job_params(kind: str, params_json: str) -> Params:
    """A job's :class:`~sigprop.contract.Params` from the JSON the rule passed."""
    return Params.from_json(registry.spec(kind), params_json)


def _layers(fn, layer_paths, study: str) -> dict:
    """``layers`` (the prune stage's per-layer reports, stacked) for functions that take it;
    each report is checked to be its study's and its shard's."""
    if not registry.takes_layers(fn):
        return {}
    import pandas as pd
    frames = []
    for p in layer_paths:
        df = tables.read(p)
        tables.check_study_column(df, p, study, "prune_shard")
        sid = Path(p).name.removesuffix("_layers.parquet")
        if len(df) and set(df.shard_id) != {sid}:
            raise tables.TableError(f"{p}: holds the layer report of shard(s) "
                                    f"{sorted(set(df.shard_id))}; the workflow expects shard {sid}: "
                                    f"rebuild it with `snakemake --forcerun prune_shard {p}`")
        frames.append(df)
    return {"layers": pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()}


def read_inputs(study: str, expect_json: str, runs: str, theory: str | None = None):
    """The study's merged run table and theory table, checked to be this study's
    (:func:`sigprop.tables.check_runs_table`, :func:`sigprop.tables.check_study_column`)."""
    r = tables.read(runs, tables.RUN_COLUMNS)
    tables.check_runs_table(r, runs, json.loads(expect_json))
    if theory is None:
        return r
    t = tables.read(theory, tables.THEORY_COLUMNS)
    tables.check_study_column(t, theory, study, "theory")
    return r, t


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


def figure(kind: str, name: str, params_json: str, expect_json: str, runs: str, theory: str,
           layers: list[str], png: str, pdf: str) -> None:
    """One of the study's figures, from its run and theory tables."""
    from .figures import save, use_agg
    from .jobs import FIGURE_LOCK
    use_agg()
    p = job_params(kind, params_json)
    fn = registry.figure_function(kind, name)
    r, t = read_inputs(p.study, expect_json, runs, theory)
    with FIGURE_LOCK:   # pyplot keeps global state: one figure at a time in a process
        save(fn(r, t, p, **_layers(fn, layers, p.study)), png, pdf)


def claims(kind: str, study: str, params_json: str, expect_json: str, runs: str, theory: str,
           layers: list[str], out: str, html: str, design_json: str = "{}"):
    """The study's claims table, as Parquet and HTML: checked against the claims contract
    (:func:`sigprop.claims.check_table`), with the rows that the study's design changes affect
    marked exploratory."""
    import json

    from . import claims as C
    from .claims.render import to_html
    p = job_params(kind, params_json)
    fn = registry.claims_function(kind)
    r, t = read_inputs(study, expect_json, runs, theory)
    df = fn(r, t, p, **_layers(fn, layers, study))
    C.check_table(df, f"study {study} (sigprop/studies/{kind}/claims.py)")
    design = json.loads(design_json)
    df = C.mark_exploratory(df, design.get("changes") or [])
    if design.get("smoke"):
        from .smoke import smoke_verdicts
        df = smoke_verdicts(df)
    tables.write_atomic(df, out)
    atomic.write_text(html, to_html(df, title=f"Claims: {study}"))
    for r in df.itertuples():
        log.info("%s: %s (measured %s, tolerance %s)", r.claim_id, r.verdict, r.measured,
                 r.tolerance)
    return df


def scales(study: str, scale: str, run_claims: str, paper_claims: str, provenance: str,
           html_out: str) -> pd.DataFrame:
    """This run's claims (at ``scale``) beside the committed paper-scale ones
    (:func:`sigprop.evidence.scales_table`), as a small HTML page for the report."""
    import html
    import json

    from .evidence import scales_table
    t = scales_table(tables.read(run_claims, tables.CLAIM_COLUMNS),
                     tables.read(paper_claims, tables.CLAIM_COLUMNS))
    prov = json.loads(Path(provenance).read_text())
    t = t.rename(columns={"verdict_quick": f"verdict ({scale})",
                          "measured_quick": f"measured ({scale})",
                          "verdict_paper": "verdict (paper, committed)",
                          "measured_paper": "measured (paper, committed)"})
    n = int((t.changed & t.both & (t.kind == "claim")).sum())
    one = int((~t.both & t.kind.str.contains("claim")).sum())
    t = t.drop(columns="both")
    rows = "".join("<tr>" + "".join(
        f"<td>{html.escape(f'{v:.4g}' if isinstance(v, float) else str(v))}</td>" for v in r)
        + "</tr>" for r in t.itertuples(index=False))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    wall = f"{prov['wall_s'] / 60:.1f} min" if prov.get("wall_s") else "?"
    text = (f"<!doctype html><html><head><meta charset='utf-8'><title>{study}: scales</title>"
            "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
            f"<h2>{html.escape(study)}: this run ({html.escape(scale)} scale) against paper scale"
            f"</h2><p>Paper-scale verdicts from docs/evidence/paper-scale/{html.escape(study)}/ "
            f"({prov['runs']} runs, {wall} wall on a {prov['machine']['cores']}-core CPU, commit "
            f"{prov['commit'][:10]}, {prov['date']}). Claims at both scales whose verdict differs: "
            f"{n}; claims at one scale only (or a sanity check at the other): {one}. Why "
            "each differs: docs/papers.md.</p>"
            f"<table><tr>{head}</tr>{rows}</table></body></html>\n")
    atomic.write_text(html_out, text)
    log.info("%s: %d claims, %d verdicts differ from paper scale", study, len(t), n)
    return t


def study_table(kind: str, name: str, params_json: str, expect_json: str, runs: str,
                parquet: str, md: str, csv: str):
    """One of the study's own tables (``SPEC.tables``) as Parquet, Markdown and CSV."""
    from .claims.render import write_table
    p = job_params(kind, params_json)
    r = read_inputs(p.study, expect_json, runs)
    df, title = registry.table_function(kind)(name, r, p)
    tables.write_atomic(df, parquet)
    write_table({name: df}, md, csv, title)
    log.info("%s: %d rows", name, len(df))
    return df


def paper_claims(paper: str, paths: list[str], studies: list[str], out: str, html: str,
                 summary: str | None = None, info_json: str = "{}"):
    """All claims of one paper's studies (each file checked to be its study's), as Parquet and
    HTML, and the referee's summary (:mod:`sigprop.claims.summary`) as Markdown."""
    import json

    from . import papers
    from .claims import tally
    from .claims.render import to_html
    from .claims.summary import referee_summary
    df = tables.concat_claims(list(paths), list(studies))
    tables.write_atomic(df, out)
    atomic.write_text(html, to_html(df, title=f"Claims: {papers.title(paper)}"))
    if summary is not None:
        atomic.write_text(summary, referee_summary(papers.title(paper),
                                                   papers.CITATIONS.get(paper, ""), df,
                                                   json.loads(info_json)))
    log.info("%d rows from %d studies: %s", len(df), df.study.nunique(), tally(df))
    return df


def paper_table(paper: str, table: str, claims_path: str, studies: list[str], md: str, csv: str):
    """One of a paper's tables (:data:`sigprop.papers.TABLES`) from the paper's claims, which
    must be those of the paper's configured studies."""
    from . import papers
    from .claims.render import write_table
    claims = tables.read(claims_path, tables.CLAIM_COLUMNS)
    got = sorted(map(str, set(claims.study)))
    if got != sorted(studies):
        raise tables.TableError(
            f"{claims_path}: holds the claims of studies {got}; the workflow expects those of "
            f"paper {paper}'s studies {sorted(studies)}: rebuild it with "
            f"`snakemake --forcerun paper_claims {claims_path}`")
    parts = papers.table_function(paper, table)(claims)
    write_table(parts, md, csv, title=f"{papers.title(paper)}: {table}")
    log.info("%s: %s", table, {k: len(v) for k, v in parts.items()})
    return parts
