"""Parse and normalize one dataset into results/data/{dataset}.npz. Rule prepare_dataset."""

from sigprop.data.prepare import prepare
from sigprop.steps.logs import script_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
log = script_log(sm)
out = prepare(
    sm.wildcards.dataset,
    sm.output[0],
    raw_dir=sm.params.raw_dir,
    options=dict(sm.params.options),
    sha256_overrides=dict(sm.params.sha256_overrides),
    sizes=dict(sm.params.sizes),
    code=sm.params.code,
)
log.info("wrote %s", out)
