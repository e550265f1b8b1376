"""Parse and normalize one dataset into results/data/{dataset}.npz. Rule prepare_dataset."""
from sigprop.data.prepare import prepare
from sigprop.logs import script_log

log = script_log(snakemake)  # noqa: F821
w, p = snakemake.wildcards, snakemake.params  # noqa: F821
out = prepare(w.dataset, snakemake.output[0], raw_dir=p.raw_dir, options=dict(p.options),
              sha256_overrides=dict(p.sha256_overrides))  # noqa: F821
log.info("wrote %s", out)
