# Paper level: a paper's studies (configs with the same `paper:`) merged into one claims
# table, and the paper's own tables (sigprop.papers.TABLES) built from those claims.


rule paper_claims:
    # a run: block, not script:, so that a local job starts no interpreter: it is forked from the
    # preloaded worker server (sigprop/steps/workers.py); long only by the files it names
    # (tests/test_lint.py)
    input:
        claims=paper_claims,
        pages=paper_claim_pages,
        evidence=paper_evidence("claims.parquet"),
        provenance=paper_evidence("provenance.json"),
        trends=paper_ladder,
        rungs=paper_ladder_rungs,
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
    log:
        "results/logs/papers/{paper}/claims.log",
    resources:
        mem_mb=light_memory,
    params:
        code=code_of("paper"),
        studies=paper_studies,
        info=paper_summary_info,
        coverage=paper_coverage,
        expects=paper_claim_expects,
    run:
        run_job(
            log,
            "sigprop.steps.analysis:paper_claims",
            wildcards.paper,
            list(input.claims),
            list(params.studies),
            output.table,
            output.html,
            output.summary,
            params.info,
            list(input.evidence),
            list(input.provenance),
            params.coverage,
            params.expects,
            list(input.pages),
            list(input.trends),
        )


rule paper_front:
    # a run: block, not script:, so that a local job starts no interpreter: it is forked from the
    # preloaded worker server (sigprop/steps/workers.py); long only by the files it names
    # (tests/test_lint.py)
    # The paper's block of the report's front page: its verdict matrix at both scales (this
    # run and the committed paper-scale verdicts), the figure of its tallies, the headline.
    input:
        claims="results/papers/{paper}/claims.parquet",
        evidence=paper_evidence("claims.parquet"),
        provenance=paper_evidence("provenance.json"),
        trends=paper_ladder,
        rungs=paper_ladder_rungs,
    output:
        png=report(
            "results/papers/{paper}/verdicts.png",
            caption="../workflow/report/paper_verdicts.rst",
            category=paper_category,
            subcategory="All claims",
            labels={"paper": "{paper}", "figure": "verdict tallies"},
        ),
        pdf="results/papers/{paper}/verdicts.pdf",
        front="results/papers/{paper}/front.html",
    log:
        "results/logs/papers/{paper}/front.log",
    resources:
        mem_mb=light_memory,
    params:
        code=code_of("paper"),
        studies=paper_studies,
        info=paper_summary_info,
        coverage=paper_coverage,
    run:
        run_job(
            log,
            "sigprop.steps.analysis:paper_front",
            wildcards.paper,
            input.claims,
            list(params.studies),
            params.info,
            list(input.evidence),
            list(input.provenance),
            output.png,
            output.pdf,
            output.front,
            params.coverage,
            list(input.trends),
        )


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
    log:
        "results/logs/papers/{paper}/{table}.log",
    # only the paper tables' names (sigprop.papers.TABLES): results/papers/<paper>/summary.md is
    # paper_claims' output, not a table called "summary"
    wildcard_constraints:
        table=PAPER_TABLE_NAMES,
    resources:
        mem_mb=light_memory,
    params:
        code=code_of("paper"),
        studies=paper_studies,
        coverage=paper_coverage,
    run:
        run_job(
            log,
            "sigprop.steps.analysis:paper_table",
            wildcards.paper,
            wildcards.table,
            input[0],
            list(params.studies),
            output.md,
            output.csv,
            params.coverage,
        )
