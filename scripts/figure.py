"""Build one figure from Parquet tables. Rule figure."""
from sigprop import studies, tables
from sigprop.figures import save
from sigprop.logs import script_log

script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
module = studies.get(sm.params.kind)
fig = module.FIGURES[sm.wildcards.figure](tables.read(sm.input.runs, tables.RUN_COLUMNS),
                                          tables.read(sm.input.theory, tables.THEORY_COLUMNS),
                                          dict(sm.params.cfg))
save(fig, sm.output.png, sm.output.pdf)
