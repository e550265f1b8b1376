# Initial weights of every model of a shard, drawn on the GPU when there is one.
#
# The file is temp(): its prune / train / measure job deletes it.  Those rules carry a higher
# priority, so a shard is consumed as soon as its init is done instead of the scheduler running
# init after init first: at paper scale gradient_universality's 1500 init files hold ~1 TB
# (400 MB to 1.6 GB each), and without the priorities a local run filled the disk with them.


rule init_shard:
    input:
        data=shard_dataset,
    output:
        temp("results/{study}/init/{shard}.pt"),
    log:
        "results/logs/{study}/init/{shard}.log",
    benchmark:
        "results/benchmarks/{study}/init/{shard}.tsv"
    threads: config["threads_per_job"]
    resources:
        mem_mb=shard_resource("init", "mem_mb"),
        runtime=shard_resource("init", "runtime"),
    params:
        code=code_of("init"),
        shard=shard_json,
        device=config["device"],
        data_expect=data_expect,
    run:
        run_job(
            log,
            "sigprop.steps.shards:init_shard",
            params.shard,
            input.data,
            output[0],
            device=params.device,
            threads=threads,
            gpu_locks=GPU_LOCKS,
            data_expect=params.data_expect,
        )
