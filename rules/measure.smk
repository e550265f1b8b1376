# Measurements at initialization: a study whose task is "measure" runs its measure()
# (sigprop/studies/<kind>/measure.py) on each shard's freshly initialized models instead of
# training them.  It receives only the study's measure: parameters; the execution-only ones
# (batch sizes, sigprop.params.param(execution=True)) come outside params: no rerun when they change.


rule measure_shard:
    # a run: block, not script:, so that a local job starts no interpreter: it is forked from the
    # preloaded worker server (sigprop/steps/workers.py); long only by the files it names
    # (tests/test_lint.py)
    input:
        unpack(train_inputs),  # init, data, and the prune stage's masks for pruned shards
    output:
        "results/{study}/measurements/{shard}.parquet",
    log:
        "results/logs/{study}/measure/{shard}.log",
    benchmark:
        "results/benchmarks/{study}/measure/{shard}.tsv"
    priority: 2  # ahead of init: a shard's temp init file goes soon (rules/init.smk)
    threads: config["threads_per_job"]
    resources:
        mem_mb=shard_resource("measure", "mem_mb"),
        runtime=shard_resource("measure", "runtime"),
    params:
        code=code_of("measure"),
        shard=shard_json,
        kind=lambda w: study_of(w).kind,
        p=job_params("measure"),
        device=config["device"],
        data_expect=data_expect,
    run:
        run_job(
            log,
            "sigprop.steps.shards:measure_shard",
            params.kind,
            params.shard,
            input.init,
            output[0],
            params.p,
            device=params.device,
            threads=threads,
            data_path=input.data,
            masks_path=input.get("masks"),
            gpu_locks=GPU_LOCKS,
            execution_json=study_of(wildcards).execution_json("measure"),
            data_expect=params.data_expect,
        )
