"""The study contract: what a study package declares, and what each job receives.

A study is a package ``sigprop/studies/<kind>/`` (found automatically by
:mod:`sigprop.registry`).  Its ``__init__.py`` holds ``SPEC``, a :class:`StudySpec`, and
the parameter dataclasses its sections use, and imports nothing heavy (no torch, pandas or
matplotlib: it is read while Snakemake builds the DAG).  Its code lives in modules beside it,
each imported only by the job that needs it:

============  ========================================================================
module        contract
============  ========================================================================
measure.py    ``measure(shard, params, buffers, p, device, data_path, masks_path)`` ->
              run rows (:func:`sigprop.tables.run_rows`); only when ``task="measure"``
theory.py     ``theory_table(study, p, settings)`` -> theory rows
figures.py    one function per :class:`Figure`: ``(runs, theory, p[, layers])`` ->
              a matplotlib figure
claims.py     ``claims_table(runs, theory, p[, layers])`` -> claim rows
              (:func:`sigprop.claims.row`)
tables.py     ``build_table(name, runs, p)`` -> ``(DataFrame, title)`` for each of
              ``SPEC.tables``
analysis.py   helpers shared by figures and claims (summaries of the run table)
============  ========================================================================

``p`` is a :class:`Params`: the study's name and the parsed sections that the job is allowed
to read.  Each job receives exactly the sections its outputs depend on (:data:`JOB_SECTIONS`),
so that Snakemake reruns a job when, and only when, one of them changes: a claim tolerance
(``claims:``) reruns the claims and nothing else, a theory parameter reruns theory, figures
and claims, never a shard.  Reading a section a job does not receive raises
:class:`WithheldSection`, so a study cannot depend on a parameter silently.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from . import params as params_module

SECTIONS = ("measure", "theory", "analysis", "claims")
EVAL_SPLITS = ("train", "test")  # the splits a training shard can score at an evaluation

# which sections each job reads (and so which edits rerun it)
JOB_SECTIONS = {
    "measure": ("measure",),
    "theory": ("measure", "theory"),
    "figure": ("measure", "theory", "analysis"),
    "table": ("measure", "analysis"),
    "claims": ("measure", "theory", "analysis", "claims"),
    "all": SECTIONS,  # tests and direct calls
}


@dataclass(frozen=True)
class Figure:
    """One figure: the name of its function in the study's ``figures.py``, its caption, and the
    claim-id patterns (shell-style) of the claims it shows: the report's verdict matrix links
    each claim to the first figure that shows it (to the study's first figure when none
    does)."""

    function: str
    caption: str
    claims: tuple[str, ...] = ()

    def shows(self, claim_id: str) -> bool:
        import fnmatch

        return any(fnmatch.fnmatchcase(str(claim_id), p) for p in self.claims)


CLAIM_KINDS = ("claim", "beyond", "sanity", "control", "summary")


@dataclass(frozen=True)
class Claim:
    """One claim as a study declares it (``CLAIMS = {claim_id: Claim(...)}`` in its
    ``__init__.py``): what the paper states, how it is tested, what a pass expects and what
    the row reports, as text with ``{field}`` slots that the study's claims code fills with
    its statistics (:func:`sigprop.claims.declared.build`); ``kind`` is one of
    :data:`CLAIM_KINDS`; ``source`` the item of the paper (the study's ``SOURCE`` when
    empty).  The tolerance's source is declared in the study file (``tolerance_sources:``),
    the figure that shows the claim in ``SPEC.figures``."""

    statement: str
    test: str
    expected: str = ""
    detail: str = ""
    kind: str = "claim"
    source: str = ""

    def __post_init__(self):
        if self.kind not in CLAIM_KINDS:
            raise ValueError(f"claim kind must be one of {CLAIM_KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class StudySpec:
    """What a study declares in its ``__init__.py`` as ``SPEC``.

    - ``task``: what a shard job does, ``"train"`` (the shard trainer) or ``"measure"``
      (the study's ``measure`` on the freshly initialized models);
    - ``figures``: figure name -> :class:`Figure`; each becomes
      ``results/<study>/figures/<name>.{png,pdf}``;
    - ``tables``: names of the study's own tables (``tables.py``);
    - ``measure``, ``theory``, ``analysis``, ``claims``: the parameter dataclass of each config
      section (:mod:`sigprop.params`; :class:`~sigprop.params.NoParams` when unused);
    - ``source``: the paper and the part of it the study reproduces, for docs and errors;
    - ``measure_reads_labels``: the measurement depends on each run's block label (the label
      names what to simulate); the measure job then receives its shard's labels as
      ``p.labels`` (one per run, in order), so renaming a block reruns its shards.  Leave it
      False when labels only name panels: renaming one then reruns the merge and after;
    - ``check``: an optional ``check(params, labels)`` run when the DAG is built, with the
      study's parsed parameters and the set of its block labels; it raises
      :class:`sigprop.params.ParamError` naming the key when they do not fit together;
    - ``eval_splits``: the data splits a training shard scores at each evaluation
      (``train``: up to 2048 training examples; ``test``: the test set).  A study whose figures
      and claims read only test metrics declares ``("test",)`` and saves the training-set pass
      (τ of Huang et al. 2019, arXiv:1912.09132, Fig. 6 needs test accuracy every few steps and
      nothing else);
    - ``theory_fields``: run fields beyond :data:`sigprop.runs.SETTING_FIELDS` (activation,
      σ_w², σ_b², keep rate) whose values the theory job's settings carry, e.g. ``("init",)``
      for a theory that depends on the weight distribution (orthogonal against Gaussian
      weights); the theory table then has a column for each.
    """

    task: Literal["train", "measure"]
    figures: Mapping[str, Figure]
    source: str
    tables: tuple[str, ...] = ()
    measure: type = params_module.NoParams
    theory: type = params_module.NoParams
    analysis: type = params_module.NoParams
    claims: type = params_module.NoParams
    measure_reads_labels: bool = False
    check: Callable[[Any, set], None] | None = None
    eval_splits: tuple[str, ...] = ("train", "test")
    theory_fields: tuple[str, ...] = ()

    def __post_init__(self):
        if self.task not in ("train", "measure"):
            raise ValueError(f"task must be 'train' or 'measure', got {self.task!r}")
        if not self.eval_splits or set(self.eval_splits) - set(EVAL_SPLITS):
            raise ValueError(
                f"eval_splits must be a non-empty subset of {EVAL_SPLITS}, got {self.eval_splits!r}"
            )
        for s in SECTIONS:
            if not dataclasses.is_dataclass(getattr(self, s)):
                raise TypeError(f"section '{s}' must be a parameter dataclass")
            _check_defaults(getattr(self, s), s)

    def section_type(self, section: str) -> type:
        return getattr(self, section)


def _check_defaults(cls: type, where: str) -> None:
    """Every parameter has a default, so a study file may leave any key out."""
    import typing

    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise TypeError(f"parameter '{where}.{f.name}' of {cls.__name__} has no default")
        if dataclasses.is_dataclass(hints[f.name]):
            _check_defaults(hints[f.name], f"{where}.{f.name}")


class WithheldSection(AttributeError):
    """A job read a parameter section that it does not receive (see :data:`JOB_SECTIONS`)."""


@dataclass(frozen=True)
class _Withheld:
    section: str
    job: str

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise WithheldSection(
            f"the {self.job} job does not receive the '{self.section}' parameters (it reads "
            f"{', '.join(JOB_SECTIONS[self.job])}; sigprop.contract.JOB_SECTIONS): "
            f"'{self.section}.{name}' cannot be used here"
        )


@dataclass(frozen=True)
class Params:
    """The parameters one job sees: the study's name and its parsed sections."""

    study: str
    measure: Any = None
    theory: Any = None
    analysis: Any = None
    claims: Any = None
    job: str = "all"
    labels: tuple[str, ...] | None = None  # a measure job's run labels (measure_reads_labels)

    def to_json(self) -> str:
        """The job's parameters as canonical JSON: the only study settings a job gets, and so
        the value Snakemake compares to decide whether the job reruns.  Mappings keep their
        order (a study may list things in a mapping in the order it draws them)."""
        import json

        d = {"study": self.study, "job": self.job}
        for s in JOB_SECTIONS[self.job]:
            d[s] = params_module.to_dict(getattr(self, s))
        if self.labels is not None:
            d["labels"] = list(self.labels)
        return json.dumps(d)

    def digest(self, sections=("measure", "theory")) -> str:
        """SHA-256 (16 hex digits) of the given parameter sections: what a table made from them
        is stamped with, so that its reader can check it was made with the sections it has
        (e.g. the theory table, made from ``measure`` and ``theory``)."""
        import hashlib
        import json

        d = {s: params_module.to_dict(getattr(self, s)) for s in sections}
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]

    @classmethod
    def from_json(cls, spec: StudySpec, text: str) -> Params:
        """The inverse of :meth:`to_json`, with the withheld sections marked."""
        import json

        d = json.loads(text)
        job = d["job"]
        kw = {}
        for s in SECTIONS:
            kw[s] = (
                params_module.parse(spec.section_type(s), d[s], s)
                if s in JOB_SECTIONS[job]
                else _Withheld(s, job)
            )
        labels = tuple(d["labels"]) if "labels" in d else None
        return cls(study=d["study"], job=job, labels=labels, **kw)

    def for_job(self, job: str) -> Params:
        """A copy that carries only what ``job`` reads."""
        if job not in JOB_SECTIONS:
            raise ValueError(f"unknown job '{job}' (known: {', '.join(JOB_SECTIONS)})")
        kw = {
            s: (getattr(self, s) if s in JOB_SECTIONS[job] else _Withheld(s, job)) for s in SECTIONS
        }
        return dataclasses.replace(self, job=job, **kw)


RUNG_SCALE = re.compile(r"^ladder[0-9]+$")
"""How a ladder rung's scale is named (:mod:`sigprop.config.ladder`; the lowest rung is
``quick``)."""


def is_rung(scale: str) -> bool:
    """Whether ``scale`` names a ladder rung above the quick scale."""
    return bool(RUNG_SCALE.match(scale or ""))


def base_scales(scale: str) -> tuple[str, ...]:
    """The scales whose sections and design changes a study at ``scale`` takes, lowest first:
    a ladder rung is grown from the quick design."""
    return ("quick", scale) if is_rung(scale) else (scale,)
