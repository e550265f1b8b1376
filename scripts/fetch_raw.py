"""Fetch one raw dataset file (checksummed, atomic). Called by rule fetch_raw."""
from sigprop.data.fetch import fetch
from sigprop.steps.logs import script_log

log = script_log(snakemake)  # noqa: F821 (injected by Snakemake)
p = snakemake.params  # noqa: F821
log.info("fetching %s", p.url)
fetch(p.url, snakemake.output[0], p.sha256, mirror=p.mirror, local_dir=p.local_dir,  # noqa: F821
      dataset=snakemake.wildcards.dataset)  # noqa: F821
