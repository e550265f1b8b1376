"""Train every model of a shard as one batched model. Rule train_shard."""
from sigprop.logs import script_log
from sigprop.workflow_steps import train_shard

script_log(snakemake)  # noqa: F821
train_shard(snakemake.params.shard, snakemake.input.init, snakemake.input.data,  # noqa: F821
            snakemake.output[0], checkpoint=snakemake.params.checkpoint,  # noqa: F821
            checkpoint_every=snakemake.config["checkpoint_every"],  # noqa: F821
            device=snakemake.params.device, threads=snakemake.threads)  # noqa: F821
