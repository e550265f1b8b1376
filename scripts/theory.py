"""Write a study's theory table. Rule theory."""
from sigprop import studies, tables
from sigprop.logs import script_log

log = script_log(snakemake)  # noqa: F821
p = snakemake.params  # noqa: F821
df = studies.get(p.kind).theory_table(snakemake.wildcards.study, dict(p.theory), [dict(x) for x in p.settings])  # noqa: F821
tables.write_atomic(df, snakemake.output[0])  # noqa: F821
log.info("%d theory rows", len(df))
