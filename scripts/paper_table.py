"""Build one paper table (Markdown and CSV) from the paper's claims. Rule paper_table."""
from sigprop import papers, tables
from sigprop.claims.render import write_table
from sigprop.logs import script_log

log = script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
claims = tables.read(sm.input[0], tables.CLAIM_COLUMNS)
parts = papers.table_function(sm.wildcards.paper, sm.wildcards.table)(claims)
write_table(parts, sm.output.md, sm.output.csv,
            title=f"{papers.title(sm.wildcards.paper)}: {sm.wildcards.table}")
log.info("%s: %s", sm.wildcards.table, {k: len(v) for k, v in parts.items()})
