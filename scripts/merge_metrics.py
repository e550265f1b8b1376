"""Merge a study's shard tables into results/{study}/metrics.parquet, each run labelled with its
grid block. Rule merge_metrics.

A missing, malformed or truncated shard table (or rows duplicated across shards) stops the job
with a TableError naming the file; the message goes to the rule's log as well as to stderr."""
from sigprop import analysis_steps
from sigprop.logs import script_log

script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
analysis_steps.merge(list(sm.input), sm.params.manifest, sm.output[0])
