# One job per shard: all its models train together as one batched model.
# A shard checkpoints every `checkpoint_every` steps and resumes after a kill.
# A shard with pruned runs (003) also reads its masks from rules/prune.smk.


rule train_shard:
    input:
        unpack(train_inputs),
    output:
        "results/{study}/runs/{shard}.parquet",
    params:
        shard=shard_json,
        device=config["device"],
        checkpoint="results/{study}/checkpoints/{shard}.pt",
    threads: config["threads_per_job"]
    resources:
        mem_mb=4000,
        runtime=120,
    log:
        "results/logs/{study}/train/{shard}.log",
    benchmark:
        "results/benchmarks/{study}/train/{shard}.tsv"
    script:
        "../scripts/train_shard.py"


rule merge_metrics:
    input:
        shard_tables,
    output:
        "results/{study}/metrics.parquet",
    params:
        manifest=lambda w: study_of(w).manifest(),
    log:
        "results/logs/{study}/merge_metrics.log",
    script:
        "../scripts/merge_metrics.py"
