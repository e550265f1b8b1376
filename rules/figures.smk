# Figures, claims and a study's own tables read only Parquet tables, and of the study's
# parameters only the sections they use (sigprop.contract.JOB_SECTIONS).


rule figure:
    input:
        runs="results/{study}/metrics.parquet",
        theory="results/{study}/theory.parquet",
        layers=study_layer_reports,
    output:
        png=report(
            "results/{study}/figures/{figure}.png",
            caption="../workflow/report/figure.rst",
            category=report_category,
            subcategory=study_subcategory,
            labels={"study": "{study}", "figure": "{figure}"},
        ),
        pdf="results/{study}/figures/{figure}.pdf",
    log:
        "results/logs/{study}/figures/{figure}.log",
    resources:
        mem_mb=light_memory,
    params:
        code=code_of("figure"),
        kind=lambda w: study_of(w).kind,
        p=job_params("figure"),
        expect=lambda w: study_of(w).expect(),
        caption=figure_caption,
    run:
        run_job(
            log,
            "sigprop.steps.analysis:figure",
            params.kind,
            wildcards.figure,
            params.p,
            params.expect,
            input.runs,
            input.theory,
            list(input.layers),
            output.png,
            output.pdf,
        )


rule claims:
    input:
        runs="results/{study}/metrics.parquet",
        theory="results/{study}/theory.parquet",
        layers=study_layer_reports,
    output:
        table="results/{study}/claims.parquet",
        html=report(
            "results/{study}/claims.html",
            caption="../workflow/report/claims.rst",
            category=report_category,
            subcategory=study_subcategory,
            labels={"study": "{study}", "table": "claims"},
        ),
    log:
        "results/logs/{study}/claims.log",
    resources:
        mem_mb=light_memory,
    params:
        code=code_of("claims"),
        kind=lambda w: study_of(w).kind,
        p=job_params("claims"),
        expect=lambda w: study_of(w).expect(),
        design=lambda w: study_of(w).design(),
    run:
        run_job(
            log,
            "sigprop.steps.analysis:claims",
            params.kind,
            wildcards.study,
            params.p,
            params.expect,
            input.runs,
            input.theory,
            list(input.layers),
            output.table,
            output.html,
            params.design,
        )


# Quick against paper scale in the report: this run's claims beside the paper-scale verdicts
# committed under docs/evidence/paper-scale/ (sigprop evidence), for studies that have them.
rule scales:
    input:
        run="results/{study}/claims.parquet",
        paper=EVIDENCE_CLAIMS,
        provenance=EVIDENCE_PROVENANCE,
    output:
        report(
            "results/{study}/scales.html",
            caption="../workflow/report/scales.rst",
            category=report_category,
            subcategory=study_subcategory,
            labels={"study": "{study}", "table": "quick vs paper scale"},
        ),
    log:
        "results/logs/{study}/scales.log",
    resources:
        mem_mb=light_memory,
    params:
        code=code_of("scales"),
        scale=lambda w: study_of(w).scale,
        regime=lambda w: study_regime_json(w),
    run:
        run_job(
            log,
            "sigprop.steps.analysis:scales",
            wildcards.study,
            params.scale,
            input.run,
            input.paper,
            input.provenance,
            output[0],
            params.regime,
        )


# A study's budget ladder in the report: each claim's statistic against the rung's budget, from
# the trend committed under docs/evidence/ladder/ (sigprop ladder), for studies that have one.
rule ladder_figure:
    input:
        trend=LADDER_TREND,
        rungs=ladder_rungs,
    output:
        png=report(
            "results/{study}/ladder.png",
            caption="../workflow/report/ladder.rst",
            category=report_category,
            subcategory=study_subcategory,
            labels={"study": "{study}", "figure": "budget ladder"},
        ),
        pdf="results/{study}/ladder.pdf",
    log:
        "results/logs/{study}/ladder.log",
    resources:
        mem_mb=light_memory,
    params:
        code=code_of("ladder"),
    run:
        run_job(
            log,
            "sigprop.steps.analysis:ladder_figure",
            wildcards.study,
            input.trend,
            output.png,
            output.pdf,
        )


rule study_table:
    input:
        runs="results/{study}/metrics.parquet",
    output:
        parquet="results/{study}/tables/{table}.parquet",
        md=report(
            "results/{study}/tables/{table}.md",
            caption="../workflow/report/study_table.rst",
            category=report_category,
            subcategory=study_subcategory,
            labels={"study": "{study}", "table": "{table}"},
        ),
        csv="results/{study}/tables/{table}.csv",
    log:
        "results/logs/{study}/tables/{table}.log",
    resources:
        mem_mb=light_memory,
    params:
        code=code_of("table"),
        kind=lambda w: study_of(w).kind,
        p=job_params("table"),
        expect=lambda w: study_of(w).expect(),
    run:
        run_job(
            log,
            "sigprop.steps.analysis:study_table",
            params.kind,
            wildcards.table,
            params.p,
            params.expect,
            input.runs,
            output.parquet,
            output.md,
            output.csv,
        )
