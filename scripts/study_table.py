"""Build one of a study's tables (Parquet, Markdown, CSV) from its run table. Rule study_table."""
from sigprop import studies, tables
from sigprop.logs import script_log

log = script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
module = studies.get(sm.params.kind)
df = studies.build_table(module, sm.wildcards.table, tables.read(sm.input.runs, tables.RUN_COLUMNS),
                         dict(sm.params.cfg), sm.output.parquet, sm.output.md, sm.output.csv)
log.info("%s: %d rows", sm.wildcards.table, len(df))
