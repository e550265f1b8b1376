"""Fetch one raw dataset file (checksummed, atomic). Called by rule fetch_raw."""

from sigprop.data.fetch import fetch
from sigprop.steps.logs import script_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
log = script_log(sm)
p = sm.params
log.info("fetching %s", p.url)
fetch(
    p.url,
    sm.output[0],
    p.sha256,
    mirror=p.mirror,
    local_dir=p.local_dir,
    dataset=sm.wildcards.dataset,
)
