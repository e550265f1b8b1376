"""Pruning masks of a shard's models at initialization (003). Rule prune_shard."""
from sigprop.logs import script_log
from sigprop.workflow_steps import prune_shard

script_log(snakemake)  # noqa: F821
prune_shard(snakemake.params.shard, snakemake.input.init, snakemake.input.data,  # noqa: F821
            snakemake.output.masks, snakemake.output.report,  # noqa: F821
            device=snakemake.params.device, threads=snakemake.threads)  # noqa: F821
