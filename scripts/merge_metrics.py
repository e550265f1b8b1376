"""Merge a study's shard tables into results/{study}/metrics.parquet. Rule merge_metrics.

A missing, malformed or truncated shard table (or rows duplicated across shards) stops the job
with a TableError naming the file; the message goes to the rule's log as well as to stderr."""
from sigprop import tables
from sigprop.logs import script_log

log = script_log(snakemake)  # noqa: F821
try:
    df = tables.merge_runs(list(snakemake.input))  # noqa: F821
except tables.TableError as e:
    log.error("%s", e)
    raise
tables.write_atomic(df, snakemake.output[0])  # noqa: F821
log.info("%d rows from %d shards, %d runs", len(df), len(snakemake.input), df.run_id.nunique())  # noqa: F821
