# Paper level: a paper's studies (configs with the same `paper:`) merged into one claims
# table, and the paper's own tables (sigprop.papers.TABLES) built from those claims.


rule paper_claims:
    input:
        paper_claims,
    output:
        table="results/papers/{paper}/claims.parquet",
        html=report(
            "results/papers/{paper}/claims.html",
            caption="../workflow/report/paper_claims.rst",
            category=paper_category,
            subcategory="All claims",
            labels={"paper": "{paper}", "table": "claims"},
        ),
        summary="results/papers/{paper}/summary.md",
    params:
        studies=paper_studies,
        info=paper_summary_info,
    log:
        "results/logs/papers/{paper}/claims.log",
    run:
        from sigprop import analysis_steps as light

        run_job(log, light.paper_claims, wildcards.paper, list(input), list(params.studies),
                output.table, output.html, output.summary, params.info)


rule paper_table:
    input:
        "results/papers/{paper}/claims.parquet",
    output:
        md=report(
            "results/papers/{paper}/{table}.md",
            caption="../workflow/report/paper_table.rst",
            category=paper_category,
            subcategory="Tables",
            labels={"paper": "{paper}", "table": "{table}"},
        ),
        csv="results/papers/{paper}/{table}.csv",
    params:
        studies=paper_studies,
    log:
        "results/logs/papers/{paper}/{table}.log",
    run:
        from sigprop import analysis_steps as light

        run_job(log, light.paper_table, wildcards.paper, wildcards.table, input[0],
                list(params.studies), output.md, output.csv)
