"""Check a study's claims against its tables. Rule claims."""
from sigprop import analysis_steps
from sigprop.logs import script_log

script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
analysis_steps.claims(sm.params.kind, sm.wildcards.study, sm.params.p, sm.params.expect,
                      sm.input.runs, sm.input.theory, list(sm.input.layers), sm.output.table,
                      sm.output.html)
