"""Merge the claims of one paper's studies. Rule paper_claims."""
from sigprop import papers, tables
from sigprop.claims.render import to_html
from sigprop.logs import script_log

log = script_log(snakemake)  # noqa: F821
sm = snakemake  # noqa: F821
df = tables.concat_claims(list(sm.input))
tables.write_atomic(df, sm.output.table)
with open(sm.output.html, "w") as f:
    f.write(to_html(df, title=f"Claims: {papers.title(sm.wildcards.paper)}"))
log.info("%d claims from %d studies: %s", len(df), df.study.nunique(),
         df.verdict.value_counts().to_dict())
