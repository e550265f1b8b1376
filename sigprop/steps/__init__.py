"""The workflow's steps: what each rule's job runs (:mod:`~sigprop.steps.shards` for a shard's
init, prune, train and measure; :mod:`~sigprop.steps.analysis` for merge, theory, figures,
claims and the paper pages), the worker server jobs are forked from and the job helpers."""
