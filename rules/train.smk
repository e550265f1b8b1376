# One job per shard: all its models train together as one batched model.
# A shard checkpoints every `checkpoint_every` steps and resumes after a kill, under the same
# code only (the checkpoint records the `code` param, the train step's code digest).
# A shard with pruned runs (003) also reads its masks from rules/prune.smk.


rule train_shard:
    # a run: block, not script:, so that a local job starts no interpreter: it is forked from the
    # preloaded worker server (sigprop/steps/workers.py); long only by the files it names
    # (tests/test_lint.py)
    input:
        unpack(train_inputs),
    output:
        "results/{study}/runs/{shard}.parquet",
    log:
        "results/logs/{study}/train/{shard}.log",
    benchmark:
        "results/benchmarks/{study}/train/{shard}.tsv"
    priority: 2  # ahead of init: a shard's temp init file goes soon (rules/init.smk)
    threads: config["threads_per_job"]
    resources:
        mem_mb=shard_resource("train", "mem_mb"),
        runtime=shard_resource("train", "runtime"),
    params:
        code=code_of("train"),
        shard=shard_json,
        device=config["device"],
        checkpoint="results/{study}/checkpoints/{shard}.pt",
        eval_splits=lambda w: ",".join(study_of(w).eval_splits),
        data_expect=data_expect,
    run:
        run_job(
            log,
            "sigprop.steps.shards:train_shard",
            params.shard,
            input.init,
            input.data,
            output[0],
            checkpoint=params.checkpoint,
            checkpoint_every=config["checkpoint_every"],
            device=params.device,
            threads=threads,
            eval_splits=tuple(params.eval_splits.split(",")),
            masks_path=input.get("masks"),
            gpu_locks=GPU_LOCKS,
            code=params.code,
            data_expect=params.data_expect,
        )


rule merge_metrics:
    input:
        shard_tables,
    output:
        "results/{study}/metrics.parquet",
    log:
        "results/logs/{study}/merge_metrics.log",
    resources:
        mem_mb=light_memory,
    params:
        code=code_of("merge"),
        manifest=lambda w: study_of(w).manifest(),
    run:
        run_job(log, "sigprop.steps.analysis:merge", list(input), params.manifest, output[0])
