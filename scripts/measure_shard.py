"""Measure statistics of a shard's initialized models. Rule measure_shard."""
from sigprop.logs import script_log
from sigprop.workflow_steps import measure_shard

script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
measure_shard(sm.params.kind, sm.params.shard, sm.input.init, sm.output[0], sm.params.p,
              device=sm.params.device, threads=sm.threads, data_path=sm.input.data)
