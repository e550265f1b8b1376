"""The command-line tools beside the workflow: the cost plan, benchmarks and shard profiles
(``sigprop bench <what>``), the GPU check, run comparison, the study parameters' tables and the
theory commands.  Each command's module registers it (``register``), listed in
:data:`sigprop.cli.COMMAND_MODULES`."""
