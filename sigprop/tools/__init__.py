"""The command-line tools beside the workflow: the cost plan, benchmarks, shard profiles,
the GPU check and run comparison (``sigprop <tool>``)."""
