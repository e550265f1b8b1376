# Theory beside experiment: the study's predictions on the same keys as its runs.


rule theory:
    output:
        "results/{study}/theory.parquet",
    log:
        "results/logs/{study}/theory.log",
    benchmark:
        "results/benchmarks/{study}/theory.tsv"
    params:
        code=code_of("theory"),
        kind=lambda w: study_of(w).kind,
        p=job_params("theory"),
        settings=run_settings,
    run:
        run_job(
            log,
            "sigprop.steps.analysis:theory",
            params.kind,
            wildcards.study,
            params.p,
            params.settings,
            output[0],
        )
