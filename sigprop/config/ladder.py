"""A training study's budget ladder: rungs between its quick design and the paper's setup.

A study file's ``ladder:`` section lists rungs, lowest first, each a scale of the study and a
budget: the quick scale itself, then scales named ``ladder2``, ``ladder3``, ... declared under
``scales:`` like ``quick`` and ``paper`` (a description, a regime, blocks), grown along the axes
the study's claims depend on (steps, depth range, width, samples) toward the paper's setup::

    ladder:
      fixed: "2026-11-26"          # the rungs were declared on this date, before any of them ran
      budget: "hidden units (width x depth)"      # what a rung's budget counts
      paper_budget: 4800           # the paper's setup in the same units
      targets:                     # per claim: the side of its pass region and its threshold
        "dropout_learns": {side: up, value: 0.85}
      rungs:
        - {scale: quick, budget: 300}
        - {scale: ladder2, budget: 1200}
        - {scale: ladder3, budget: 2400}

A rung runs with ``snakemake --config 'scale_overrides={<study>: ladder2}'``.  Its claims and
their tolerances are the quick scale's: a rung's parameters are the study's sections with the
quick scale's merged over them, then the rung's own (:func:`sigprop.registry.resolve`), and the
quick scale's design changes apply to it.  :mod:`sigprop.claims.trend` reads the rungs'
claims tables (``docs/evidence/ladder/<study>/<scale>/``) as one trend per claim.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sigprop.contract import base_scales, is_rung  # noqa: F401  (the rung naming, re-exported)

from .files import ConfigError

MIN_RUNGS = 3


@dataclass(frozen=True)
class Rung:
    scale: str
    budget: float


@dataclass(frozen=True)
class Ladder:
    fixed: str
    budget: str
    paper_budget: float
    rungs: tuple[Rung, ...]
    targets: dict = field(default_factory=dict)

    @property
    def scales(self) -> list[str]:
        return [r.scale for r in self.rungs]


def ladder_of(study_cfg: dict, path: str = "") -> Ladder | None:
    """The study's ladder, checked, or None when it has none.  Raises :class:`ConfigError`
    naming the file and key for fewer than :data:`MIN_RUNGS` rungs, a lowest rung other than
    ``quick``, a rung scale that is not declared under ``scales:`` or not named ``ladder<k>``,
    budgets that do not grow, or a paper budget below the top rung's."""
    lad = study_cfg.get("ladder")
    if not lad:
        return None
    where = f"{path}: key 'ladder"
    rungs = tuple(Rung(str(r["scale"]), float(r["budget"])) for r in lad.get("rungs") or [])
    if len(rungs) < MIN_RUNGS:
        raise ConfigError(f"{where}.rungs': {len(rungs)} rungs; a ladder needs at least "
                          f"{MIN_RUNGS}, the lowest the quick scale")
    if rungs[0].scale != "quick":
        raise ConfigError(f"{where}.rungs[0].scale': {rungs[0].scale!r}; the lowest rung is the "
                          "quick design itself ('quick')")
    scales = (study_cfg.get("scales") or {})
    for i, r in enumerate(rungs[1:], 1):
        if not is_rung(r.scale):
            raise ConfigError(f"{where}.rungs[{i}].scale': {r.scale!r} is not a rung's name "
                              "(ladder2, ladder3, ...)")
        if r.scale not in scales:
            raise ConfigError(f"{where}.rungs[{i}].scale': no scale {r.scale!r} under 'scales:'")
    if len({r.scale for r in rungs}) != len(rungs):
        raise ConfigError(f"{where}.rungs': a scale appears twice")
    budgets = [r.budget for r in rungs]
    if any(b <= 0 for b in budgets) or any(b >= c for b, c in zip(budgets, budgets[1:])):
        raise ConfigError(f"{where}.rungs': budgets {budgets} must be positive and grow rung "
                          "by rung")
    paper = float(lad["paper_budget"])
    if paper < budgets[-1]:
        raise ConfigError(f"{where}.paper_budget': {paper:g} is below the top rung's budget "
                          f"{budgets[-1]:g}")
    undeclared = sorted(s for s in scales if is_rung(s) and s not in {r.scale for r in rungs})
    if undeclared:
        raise ConfigError(f"{path}: key 'scales.{undeclared[0]}': a rung scale that "
                          "'ladder.rungs' does not list")
    return Ladder(str(lad["fixed"]), str(lad["budget"]), paper, rungs,
                  dict(lad.get("targets") or {}))
