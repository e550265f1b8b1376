"""Check a study's claims against its tables. Rule claims."""
from sigprop import studies, tables
from sigprop.claims.render import to_html
from sigprop.logs import script_log

log = script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
fn = studies.get(sm.params.kind).claims_table
df = fn(tables.read(sm.input.runs, tables.RUN_COLUMNS),
        tables.read(sm.input.theory, tables.THEORY_COLUMNS),
        dict(sm.params.cfg), **studies.analysis_kwargs(fn, sm.input.layers))
tables.write_atomic(df, sm.output.table)
with open(sm.output.html, "w") as f:
    f.write(to_html(df, title=f"Claims: {sm.wildcards.study}"))
for r in df.itertuples():
    log.info("%s: %s (measured %s, tolerance %s)", r.claim_id, r.verdict, r.measured, r.tolerance)
