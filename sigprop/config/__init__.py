"""The run's configuration: config/config.yaml and the study files, checked and built into
studies before any job exists.

- :mod:`.files`: reading YAML, the size bound, finite numbers, and errors that name the file
  (or ``--config``) and the key: schema failures (``workflow/schemas``, validated by
  ``snakemake.utils.validate`` in the Snakefile, ``jsonschema`` in ``sigprop plan``) are
  explained as ``config/studies/x.yaml: key 'scales.quick.blocks[0].grid.sigma_w2': ...``;
- :mod:`.grid`: a study's grid blocks expanded into runs, derived fields, and the checks a schema
  cannot express (known data sets, activations, architectures, pruners; consistent shapes);
- :mod:`.data_options`: the config's ``data.options``, typed and in range;
- :mod:`.study`: a study built for the workflow (runs, shards, labels, typed parameters, parsed by
  :func:`sigprop.registry.resolve`) and :func:`load_run`, the one loader of the Snakefile and
  ``sigprop plan``;
- :mod:`.resources`: what a shard job asks a scheduler for;
- :mod:`.smoke`: the smoke run's reduced grids.

This package sits above the study registry: it reads a study's declaration (its task and its
parameter types), and nothing below it imports it.  Its public names are re-exported here.
"""

from __future__ import annotations

from sigprop.data.sizes import fc_input_dim, train_size, width_for_params

from .data_options import check_data_options
from .files import (
    MESSAGE_CHARS,
    NODE_BUDGET,
    ConfigError,
    ConfigSources,
    check_finite,
    check_size,
    explain,
    key_path,
    load_yaml,
    snakemake_validator,
    source_of,
)
from .grid import (
    IMAGE_ARCHS,
    KNOWN_ACTIVATIONS,
    KNOWN_ARCHS,
    KNOWN_PRUNE_SCOPES,
    KNOWN_PRUNERS,
    block_datasets,
    check_kind,
    check_runs,
    count_runs,
    derive,
    expand_blocks,
    expand_runs,
    run_labels,
    steps_for_epochs,
)
from .resources import (
    DEFAULT_SHARD_RESOURCES,
    MAX_MEM_MB,
    MAX_RUNTIME_MIN,
    load_resources,
    shard_request,
)
from .study import (
    DEFAULT_MAX_RUNS,
    Study,
    build_study,
    check_scale_overrides,
    load_run,
    shard_sizer,
    study_path,
)

__all__ = [
    "fc_input_dim",
    "train_size",
    "width_for_params",
    "check_data_options",
    "MESSAGE_CHARS",
    "NODE_BUDGET",
    "ConfigError",
    "ConfigSources",
    "check_finite",
    "check_size",
    "explain",
    "key_path",
    "load_yaml",
    "snakemake_validator",
    "source_of",
    "IMAGE_ARCHS",
    "KNOWN_ACTIVATIONS",
    "KNOWN_ARCHS",
    "KNOWN_PRUNE_SCOPES",
    "KNOWN_PRUNERS",
    "block_datasets",
    "check_kind",
    "check_runs",
    "count_runs",
    "derive",
    "expand_blocks",
    "expand_runs",
    "run_labels",
    "steps_for_epochs",
    "DEFAULT_SHARD_RESOURCES",
    "MAX_MEM_MB",
    "MAX_RUNTIME_MIN",
    "load_resources",
    "shard_request",
    "DEFAULT_MAX_RUNS",
    "Study",
    "build_study",
    "check_scale_overrides",
    "load_run",
    "shard_sizer",
    "study_path",
]
