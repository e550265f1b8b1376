"""Merge a study's shard tables into results/{study}/metrics.parquet. Rule merge_metrics."""
from sigprop import tables
from sigprop.logs import script_log

log = script_log(snakemake)  # noqa: F821
df = tables.merge_runs(list(snakemake.input))  # noqa: F821
tables.write_atomic(df, snakemake.output[0])  # noqa: F821
log.info("%d rows from %d shards, %d runs", len(df), len(snakemake.input), df.run_id.nunique())  # noqa: F821
