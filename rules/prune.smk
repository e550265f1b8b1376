# The prune stage (003 Hayou et al., pruning at initialization): one job per shard that has
# runs with a `pruner`, between init and train.
#
# - Masks are computed once per shard from the shard's initial weights (the init file that
#   all its runs share) and a class-balanced scoring batch of `prune_batch` training examples
#   per class, then reused by the shard's training job (and any later job that needs them).
# - A run's initial weights are keyed by its run id, which includes its pruner, sparsity and
#   training fields: the masks of one (initialization, pruner, sparsity) are made exactly once,
#   but two runs that differ only in sparsity (or learning rate) start from different weights.
# - Output: results/{study}/masks/{shard}.pt, a torch.save'd {"shard_id", "run_ids", "masks"}
#   with masks a list aligned with the shard's parameters of None (not pruned) or [M, ...]
#   bool tensors (all ones for the shard's dense runs); load it with weights_only=True
#   (sigprop.train.engine.load_masks).  results/{study}/masks/{shard}_layers.parquet: per
#   pruned run and prunable layer: n_weights, n_kept, kept_fraction, collapsed
#   (sigprop.prune.layer_report), with the run's id and pruning fields.
# - train_shard of a pruned shard gets the mask file as an extra input (train_inputs in
#   common.smk) and reads it at Shard.masks_path.  Shards without pruned runs have no prune
#   job and no mask file: their DAG is unchanged.


rule prune_shard:
    input:
        init="results/{study}/init/{shard}.pt",
        data=shard_dataset,
    output:
        masks=MASKS,
        report="results/{study}/masks/{shard}_layers.parquet",
    log:
        "results/logs/{study}/prune/{shard}.log",
    benchmark:
        "results/benchmarks/{study}/prune/{shard}.tsv"
    priority: 1  # ahead of init: a shard's temp init file goes soon (rules/init.smk)
    threads: config["threads_per_job"]
    resources:
        mem_mb=shard_resource("prune", "mem_mb"),
        runtime=shard_resource("prune", "runtime"),
    params:
        code=code_of("prune"),
        shard=shard_json,
        device=config["device"],
        data_expect=data_expect,
    run:
        run_job(
            log,
            "sigprop.steps.shards:prune_shard",
            params.shard,
            input.init,
            input.data,
            output.masks,
            output.report,
            device=params.device,
            threads=threads,
            gpu_locks=GPU_LOCKS,
            data_expect=params.data_expect,
        )
