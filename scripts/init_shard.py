"""Draw the initial weights of a shard's models. Rule init_shard."""
from sigprop.logs import script_log
from sigprop.workflow_steps import init_shard

script_log(snakemake)  # noqa: F821
init_shard(snakemake.params.shard, snakemake.input.data, snakemake.output[0],  # noqa: F821
           device=snakemake.params.device, threads=snakemake.threads)  # noqa: F821
