"""Build one paper table (Markdown and CSV) from the paper's claims. Rule paper_table."""
from sigprop import analysis_steps
from sigprop.logs import script_log

script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
analysis_steps.paper_table(sm.wildcards.paper, sm.wildcards.table, sm.input[0],
                           list(sm.params.studies), sm.output.md, sm.output.csv)
