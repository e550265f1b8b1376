"""The light workflow steps (theory, figures, claims, study tables, merge) as plain functions:
Parquet in, Parquet / figures / HTML out, no torch.  ``scripts/`` only unpack Snakemake's
arguments and call these; the heavy steps are in :mod:`sigprop.steps.shards`."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from sigprop import atomic, registry, tables

log = logging.getLogger("sigprop.steps")


def _layers(fn, layer_paths, study: str) -> dict:
    """``layers`` (the prune stage's per-layer reports, stacked) for functions that take it;
    each report is checked to be its study's and its shard's."""
    if not registry.takes_layers(fn):
        return {}
    import pandas as pd

    frames = []
    for p in layer_paths:
        sid = Path(p).name.removesuffix("_layers.parquet")
        df = tables.read(p)
        tables.check_study_column(df, p, study, "prune_shard")
        if len(df) and set(df.shard_id) != {sid}:
            raise tables.TableError(
                f"{p}: holds the layer report of shard(s) "
                f"{sorted(set(df.shard_id))}; the workflow expects shard {sid}: "
                f"{tables.rebuild_hint(p)}"
            )
        tables.check_stamp(p, {"kind": "layers", "study": study, "shard": sid})
        frames.append(df)
    return {"layers": pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()}


def read_inputs(
    study: str,
    expect_json: str,
    runs: str,
    theory: str | None = None,
    theory_params: str | None = None,
):
    """The study's merged run table and theory table, checked to be this study's: the merged
    table holds exactly its runs and was written by its merge
    (:func:`sigprop.tables.check_runs_table`, its stamp), the theory table was made for this
    study from the parameters the reader has (``theory_params``: their digest,
    :meth:`sigprop.contract.Params.digest`)."""
    expect = json.loads(expect_json)
    r = tables.read(runs, tables.RUN_COLUMNS, empty_ok=False)
    tables.check_runs_table(r, runs, expect)
    tables.check_stamp(runs, {"kind": "metrics", "study": expect["study"], "runs": expect["runs"]})
    if theory is None:
        return r
    t = tables.read(theory, tables.THEORY_COLUMNS)
    tables.check_study_column(t, theory, study, "theory")
    want = {"kind": "theory", "study": study}
    if theory_params is not None:
        want["params"] = theory_params
    tables.check_stamp(theory, want)
    return r, t


def merge(paths: list[str], manifest_json: str, out: str):
    """All shard tables of a study as one table, each run labelled with its block."""
    manifest = json.loads(manifest_json)
    df = tables.merge_runs(list(paths), manifest)
    from sigprop.runs import runs_digest

    tables.write_atomic(
        df,
        out,
        {"kind": "metrics", "study": manifest["study"], "runs": runs_digest(df.run_id.unique())},
    )
    log.info("%d rows from %d shards, %d runs", len(df), len(paths), df.run_id.nunique())
    return df


def theory(kind: str, study: str, params_json: str, settings: list[dict], out: str):
    """The study's theory table on its runs' settings."""
    p = registry.job_params(kind, params_json)
    df = registry.theory_function(kind)(study, p, [dict(x) for x in settings])
    tables.write_atomic(df, out, {"kind": "theory", "study": study, "params": p.digest()})
    log.info("%d theory rows", len(df))
    return df


def figure(
    kind: str,
    name: str,
    params_json: str,
    expect_json: str,
    runs: str,
    theory: str,
    layers: list[str],
    png: str,
    pdf: str,
) -> None:
    """One of the study's figures, from its run and theory tables."""
    from sigprop.figures import save, use_agg
    from sigprop.steps.jobs import FIGURE_LOCK

    use_agg()
    p = registry.job_params(kind, params_json)
    fn = registry.figure_function(kind, name)
    r, t = read_inputs(p.study, expect_json, runs, theory, p.digest())
    with FIGURE_LOCK:  # pyplot keeps global state: one figure at a time in a process
        save(fn(r, t, p, **_layers(fn, layers, p.study)), png, pdf)


def ladder_figure(study: str, trend: str, png: str, pdf: str) -> None:
    """The study's budget-ladder figure from its committed trend table
    (``docs/evidence/ladder/<study>/trend.parquet``, :mod:`sigprop.figures.ladder`)."""
    from sigprop.claims.trend import read_trend
    from sigprop.figures import save, use_agg
    from sigprop.figures.ladder import ladder_figure as draw
    from sigprop.steps.jobs import FIGURE_LOCK

    use_agg()
    if Path(trend).parent.name != study:
        raise ValueError(f"{trend}: not the trend of study {study}")
    t = read_trend(trend)
    with FIGURE_LOCK:
        save(draw(t, study), png, pdf)


def claims(
    kind: str,
    study: str,
    params_json: str,
    expect_json: str,
    runs: str,
    theory: str,
    layers: list[str],
    out: str,
    html: str,
    design_json: str = "{}",
):
    """The study's claims table, as Parquet and HTML: checked against the claims contract
    (:func:`sigprop.claims.check_table`, with the study's paper: a claim's source lies in it),
    with the rows that the study's design changes affect marked exploratory, and every row's
    scale and regime (:func:`sigprop.claims.reading.apply`)."""
    import json

    from sigprop import claims as claims_module
    from sigprop.claims import reading
    from sigprop.claims.render import to_html

    p = registry.job_params(kind, params_json)
    fn = registry.claims_function(kind)
    r, t = read_inputs(study, expect_json, runs, theory, p.digest())
    df = fn(r, t, p, **_layers(fn, layers, study))
    design = json.loads(design_json)
    where = f"study {study} ({registry.module_of(kind)}.claims)"
    claims_module.check_table(df, where, paper=design.get("paper") or None)
    df = claims_module.mark_exploratory(df, design.get("changes") or [])
    df = reading.apply(
        df,
        design.get("scale", ""),
        design.get("regime"),
        design.get("depends_on"),
        design.get("tolerance_sources"),
        design.get("corroborations"),
    )
    claims_module.check_sources(df, f"{where} and its study file's tolerance_sources")
    if design.get("smoke"):
        from sigprop.config.smoke import smoke_verdicts

        df = smoke_verdicts(df)
        df["reading"] = reading.readings(df)
    tables.write_atomic(
        df,
        out,
        {
            "kind": "claims",
            "study": study,
            "scale": design.get("scale", ""),
            "runs": json.loads(expect_json)["runs"],
            "smoke": bool(design.get("smoke")),
        },
    )
    atomic.write_text(html, to_html(df, title=f"Claims: {study}", table=tables.content_digest(df)))
    for r in df.itertuples():
        log.info(
            "%s: %s (measured %s, tolerance %s)", r.claim_id, r.verdict, r.measured, r.tolerance
        )
    return df


def scales(
    study: str,
    scale: str,
    run_claims: str,
    paper_claims: str,
    provenance: str,
    html_out: str,
    regime_json: str = "{}",
):
    """This run's claims (at ``scale``) beside the committed paper-scale ones, each with how
    it reads (:func:`sigprop.claims.matrix.verdict_matrix`), as a small HTML page for the
    report; ``regime_json``: the study's paper-scale ``paper_regime`` and ``depends_on``."""
    import html
    import json

    from sigprop.claims.matrix import changed, verdict_matrix

    info = json.loads(regime_json)
    committed, prov = committed_claims([paper_claims], [provenance], {study: info})
    prov = prov[study]
    m = verdict_matrix(tables.read(run_claims, tables.CLAIM_COLUMNS), committed)
    n = int(changed(m).sum())
    cols = {
        "claim_id": "claim",
        "kind": "kind",
        "run_reading": f"{scale} scale (this run)",
        "run_measured": f"measured ({scale})",
        "paper_reading": "paper scale (committed)",
        "paper_measured": "measured (paper)",
        "paper_detectable": "detectable (paper)",
        "paper_margin": "margin",
        "paper_regime": "what differs from the paper (paper scale)",
    }
    t = m[list(cols)].rename(columns=cols)
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(f'{v:.4g}' if isinstance(v, float) else str(v))}</td>" for v in r
        )
        + "</tr>"
        for r in t.itertuples(index=False)
    )
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    wall = f"{prov['wall_s'] / 60:.1f} min" if prov.get("wall_s") else "?"
    text = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{study}: scales</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
        f"<h2>{html.escape(study)}: this run ({html.escape(scale)} scale) against paper scale"
        f"</h2><p>Paper-scale verdicts from docs/evidence/paper-scale/{html.escape(study)}/ "
        f"({prov['runs']} runs, {wall} wall on a {prov['machine']['cores']}-core CPU, commit "
        f"{prov['commit'][:10]}, {prov['date']}). Claims at both scales whose verdict "
        f"differs: {n}. Why each differs: docs/papers.md.</p>"
        f"<table><tr>{head}</tr>{rows}</table></body></html>\n"
    )
    atomic.write_text(html_out, text)
    log.info("%s: %d claims, %d verdicts differ from paper scale", study, len(t), n)
    return t


def study_table(
    kind: str,
    name: str,
    params_json: str,
    expect_json: str,
    runs: str,
    parquet: str,
    md: str,
    csv: str,
):
    """One of the study's own tables (``SPEC.tables``) as Parquet, Markdown and CSV."""
    from sigprop.claims.render import write_table

    p = registry.job_params(kind, params_json)
    r = read_inputs(p.study, expect_json, runs)
    df, title = registry.table_function(kind)(name, r, p)
    tables.write_atomic(df, parquet, {"kind": "study_table", "study": p.study, "table": name})
    write_table({name: df}, md, csv, title)
    log.info("%s: %d rows", name, len(df))
    return df


def committed_claims(paths: list[str], provenance: list[str], info: dict | None = None) -> tuple:
    """The committed paper-scale claims of a paper's studies (``docs/evidence/paper-scale``),
    stacked, and their provenance by study: each table checked against its provenance and its
    folder (:func:`sigprop.claims.committed.verified`: stamped for its study at paper scale, with
    the runs, content and provenance digest its ``provenance.json`` records; ``provenance``
    names those files, the rules' inputs), every row read at paper scale against the study
    file's paper-scale regime (``info``: per study, ``paper_regime``, ``depends_on`` and
    ``tolerance_sources``;
    :func:`sigprop.claims.committed.read_committed`)."""
    import pandas as pd

    from sigprop.claims.committed import read_committed

    frames, prov = [], {}
    for cp, pp in zip(paths, provenance):
        if Path(cp).parent != Path(pp).parent:
            raise ValueError(f"{cp} and {pp}: not one study's committed files")
        study = Path(cp).parent.name
        si = (info or {}).get(study, {})
        df, prov[study] = read_committed(
            Path(cp).parent,
            si.get("paper_regime"),
            si.get("depends_on"),
            si.get("tolerance_sources"),
            si.get("corroborations"),
        )
        frames.append(df)
    return (pd.concat(frames, ignore_index=True) if frames else None), prov


def check_claims_pages(paths: list[str], pages: list[str]) -> None:
    """Each study's claims page (``claims.html``) was rendered from the claims table beside it:
    it names that table's content digest (:func:`sigprop.claims.render.to_html`), so a page
    copied from another study or run is refused before the report files it."""
    import re

    for table, page in zip(paths, pages):
        text = Path(page).read_text(errors="replace")
        m = re.search(r'<meta name="sigprop-table" content="([0-9a-f]+)"', text)
        stamp = tables.stamp_of(table) or {}
        if not m or m.group(1) != stamp.get("content"):
            raise tables.TableError(
                f"{page}: was not rendered from {table} (it names table "
                f"{m.group(1) if m else 'none'}, the table is {stamp.get('content')}): "
                f"{tables.rebuild_hint(page)}"
            )


def paper_claims(
    paper: str,
    paths: list[str],
    studies: list[str],
    out: str,
    html: str,
    summary: str | None = None,
    info_json: str = "{}",
    evidence: list[str] = (),
    provenance: list[str] = (),
    coverage_json: str = "{}",
    expects_json: str = "{}",
    pages: list[str] = (),
    trends: list[str] = (),
):
    """All claims of one paper's studies (each file checked to be its study's, of this run's
    scale and runs: ``expects_json``, per study its claims table's stamp; each study's claims
    page rendered from it: ``pages``), as Parquet and HTML, and the referee's summary
    (:mod:`sigprop.claims.summary`) as Markdown, with the committed paper-scale verdicts of the
    studies that have them beside this run's (refused when two counted claims share a measured
    value, :func:`sigprop.claims.twin_pairs`), and the committed ladder trends (``trends``:
    ``docs/evidence/ladder/<study>/trend.parquet``) of those that have a budget ladder."""
    import json

    from sigprop import papers
    from sigprop.claims import tally, twin_pairs
    from sigprop.claims.render import to_html
    from sigprop.claims.summary import referee_summary

    df = tables.concat_claims(list(paths), list(studies), json.loads(expects_json) or None)
    if pages:
        check_claims_pages(list(paths), list(pages))
    twins = twin_pairs(df)
    if twins:
        raise ValueError(
            f"paper {paper}: counted claims with the same measured value (one "
            "measurement counted twice; make all but one a summary row): "
            + "; ".join(f"{a} = {b} = {v:.12g}" for a, b, v in twins)
        )
    tables.write_atomic(
        df, out, {"kind": "paper_claims", "paper": paper, "studies": sorted(studies)}
    )
    note = papers.coverage_note(json.loads(coverage_json))
    atomic.write_text(
        html,
        to_html(
            df,
            title=f"Claims: {papers.title(paper, registry.declared_papers())}"
            + (f" ({note})" if note else ""),
        ),
    )
    if summary is not None:
        committed, prov = committed_claims(list(evidence), list(provenance), json.loads(info_json))
        trend = None
        if trends:
            import pandas as pd

            from sigprop.claims.trend import read_trend

            trend = pd.concat([read_trend(t) for t in trends], ignore_index=True)
        atomic.write_text(
            summary,
            referee_summary(
                papers.title(paper, registry.declared_papers()),
                papers.citation(paper, registry.declared_papers()),
                df,
                json.loads(info_json),
                committed,
                prov,
                partial=note,
                trends=trend,
            ),
        )
    log.info("%d rows from %d studies: %s", len(df), df.study.nunique(), tally(df))
    return df


def read_paper_claims(paper: str, claims_path: str, studies: list[str]):
    """A paper's merged claims table (:func:`paper_claims`), checked to hold exactly the paper's
    configured studies and to be stamped for them."""
    claims = tables.read(claims_path, tables.CLAIM_COLUMNS)
    got = sorted(map(str, set(claims.study)))
    if got != sorted(studies):
        raise tables.TableError(
            f"{claims_path}: holds the claims of studies {got}; the workflow expects those of "
            f"paper {paper}'s studies {sorted(studies)}: {tables.rebuild_hint(claims_path)}"
        )
    tables.check_stamp(
        claims_path, {"kind": "paper_claims", "paper": paper, "studies": sorted(studies)}
    )
    return claims


def ladder_trends(paths: list[str]) -> dict:
    """The committed ladder trends (``docs/evidence/ladder/<study>/trend.parquet``, each checked
    against its rungs, :func:`sigprop.claims.trend.read_trend`) as ``(study, claim id)`` ->
    trend row."""
    from sigprop.claims.trend import read_trend

    out = {}
    for p in paths:
        for t in read_trend(p).itertuples(index=False):
            out[(t.study, t.claim_id)] = t
    return out


def paper_front(
    paper: str,
    claims_path: str,
    studies: list[str],
    info_json: str,
    evidence: list[str],
    provenance: list[str],
    png: str,
    pdf: str,
    front: str,
    coverage_json: str = "{}",
    trends: list[str] | None = None,
):
    """The paper's block of the report's front page (:func:`sigprop.claims.front.front_block`):
    the headline in words and the figure of its tallies (also written as PNG and PDF), each
    scale with the studies it covers, then its verdict matrix at both scales with the ladder
    trend of each claim (``trends``: the committed trend tables of its studies)."""
    import io
    import json

    from sigprop import papers
    from sigprop.claims.front import front_block, tally_figure
    from sigprop.claims.matrix import verdict_matrix
    from sigprop.claims.summary import headline
    from sigprop.figures import save, use_agg
    from sigprop.steps.jobs import FIGURE_LOCK

    use_agg()
    claims = read_paper_claims(paper, claims_path, studies)
    info = json.loads(info_json)
    committed, prov = committed_claims(list(evidence), list(provenance), info)
    m = verdict_matrix(claims, committed)
    scale_names = {k: str(v.get("scale", "")).split(" ")[0] for k, v in info.items()}
    run_label = "/".join(dict.fromkeys(scale_names.values())) or "this run"
    title = papers.title(paper, registry.declared_papers())
    note = papers.coverage_note(json.loads(coverage_json))
    n = len(studies)
    of = "study" if n == 1 else "studies"
    ran = claims.study.nunique() if len(claims) else 0
    coverage = {"run": f"{ran} of {n} {of}", "paper": f"{len(prov)} of {n} {of}"}
    with FIGURE_LOCK:
        fig = tally_figure(m, title, run_label, coverage)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        save(fig, png, pdf)
    figures = {n: registry.spec(v["kind"]).figures for n, v in info.items() if v.get("kind")}
    head = headline(claims, info, committed, prov)
    text = front_block(
        paper,
        title,
        m,
        f"{note}; {head}" if note else head,
        buf.getvalue(),
        scale_names,
        figures,
        set(prov),
        notes=(
            "Full text of every claim, its test and its detectable effect: "
            "each study's claims table; the referee's summary: "
            f"results/papers/{paper}/summary.md. The ladder column: the "
            "claim's trend along its study's budget ladder "
            "(docs/evidence/ladder/) and its reading at the top rung."
        ),
        trends=ladder_trends(list(trends or [])),
    )
    atomic.write_text(front, text)
    log.info("front page block of paper %s: %d claim rows", paper, len(m))
    return m


def paper_table(
    paper: str,
    table: str,
    claims_path: str,
    studies: list[str],
    md: str,
    csv: str,
    coverage_json: str = "{}",
):
    """One of a paper's tables (:data:`sigprop.papers.TABLES`) from the paper's claims, which
    must be those of the paper's configured studies."""
    from sigprop import papers
    from sigprop.claims.render import write_table

    claims = read_paper_claims(paper, claims_path, studies)
    parts = papers.table_function(paper, table)(claims)
    note = papers.coverage_note(json.loads(coverage_json))
    write_table(
        parts,
        md,
        csv,
        title=f"{papers.title(paper, registry.declared_papers())}: {table}"
        + (f" ({note})" if note else ""),
    )
    log.info("%s: %s", table, {k: len(v) for k, v in parts.items()})
    return parts
