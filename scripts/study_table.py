"""Build one of a study's tables (Parquet, Markdown, CSV) from its run table. Rule study_table."""
from sigprop import analysis_steps
from sigprop.logs import script_log

script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
analysis_steps.study_table(sm.params.kind, sm.wildcards.table, sm.params.p, sm.params.expect,
                           sm.input.runs, sm.output.parquet, sm.output.md, sm.output.csv)
