"""sigprop: signal propagation at initialization, regenerated and checked.

The root holds the shared vocabulary: the study contract and typed parameters (``contract``,
``params``), runs and shards (``runs``), tables (``tables``), atomic writes, memory sizing, the
papers and the study registry.  Packages by subject: ``data`` (dataset catalog and parsers),
``nets`` (stacked models), ``train`` (the shard trainer), ``prune`` (pruners), ``theory`` (mean
field and kernels), ``measure`` (measurements that several studies use), ``figures`` and
``claims`` (shared helpers), ``studies`` (one package per study).  Above them: ``config`` (the
run's config and study files), ``steps`` (what the rules' jobs run), ``tools`` (the
command-line tools), ``publish`` (committing evidence) and ``cli``.  See ``docs/`` and the
README.
"""

__version__ = "0.1.0"
