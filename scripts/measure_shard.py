"""Measure statistics of a shard's initialized models. Rule measure_shard."""
from sigprop.logs import script_log
from sigprop.workflow_steps import measure_shard

script_log(snakemake)  # noqa: F821
p = snakemake.params  # noqa: F821
measure_shard(p.kind, p.shard, snakemake.input.init, snakemake.output[0], dict(p.cfg),  # noqa: F821
              device=p.device, threads=snakemake.threads,  # noqa: F821
              data_path=snakemake.input.data)  # noqa: F821
