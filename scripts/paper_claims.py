"""Merge the claims of one paper's studies. Rule paper_claims."""
from sigprop import analysis_steps
from sigprop.logs import script_log

script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
analysis_steps.paper_claims(sm.wildcards.paper, list(sm.input), list(sm.params.studies),
                            sm.output.table, sm.output.html)
