"""sigprop: signal propagation at initialization, regenerated and checked.

Subpackages: ``data`` (dataset registry and parsers), ``nets`` (stacked models),
``train`` (the shard trainer), ``theory`` (mean field and kernels), ``measure``
(statistics of networks), ``figures`` (one function per figure), ``claims``
(paper claims as checks).  See ``docs/`` and the README.
"""

__version__ = "0.1.0"
