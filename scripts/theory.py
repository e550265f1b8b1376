"""Write a study's theory table. Rule theory."""
from sigprop import analysis_steps
from sigprop.logs import script_log

script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
analysis_steps.theory(sm.params.kind, sm.wildcards.study, sm.params.p, sm.params.settings,
                      sm.output[0])
