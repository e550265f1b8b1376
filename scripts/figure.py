"""Build one figure from Parquet tables. Rule figure."""
from sigprop import analysis_steps
from sigprop.logs import script_log

script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
analysis_steps.figure(sm.params.kind, sm.wildcards.figure, sm.params.p, sm.params.expect,
                      sm.input.runs, sm.input.theory, list(sm.input.layers), sm.output.png,
                      sm.output.pdf)
