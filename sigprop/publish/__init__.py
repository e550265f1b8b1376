"""Publishing committed evidence: command-line tools that no rule runs.

:mod:`~sigprop.publish.evidence` commits a study's paper-scale claims table with its provenance
(``sigprop evidence``); :mod:`~sigprop.publish.ladder` commits the rungs of a training study's
budget ladder and the trend of each claim across them (``sigprop ladder``).  Readers of the
committed files (the report, the front page, ``docs/papers.md``) check them with
:mod:`sigprop.claims.committed`.
"""
