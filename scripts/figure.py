"""Build one figure from Parquet tables. Rule figure."""
from sigprop import studies, tables
from sigprop.figures import save
from sigprop.logs import script_log

script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
fn = studies.get(sm.params.kind).FIGURES[sm.wildcards.figure]
fig = fn(tables.read(sm.input.runs, tables.RUN_COLUMNS),
         tables.read(sm.input.theory, tables.THEORY_COLUMNS),
         dict(sm.params.cfg), **studies.analysis_kwargs(fn, sm.input.layers))
save(fig, sm.output.png, sm.output.pdf)
