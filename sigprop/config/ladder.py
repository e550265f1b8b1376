"""A training study's budget ladder: rungs between its quick design and the paper's setup.

A study file's ``ladder:`` section lists rungs, lowest first, each a scale of the study and a
budget: the quick scale itself, then scales named ``ladder2``, ``ladder3``, ... declared under
``scales:`` like ``quick`` and ``paper`` (a description, a regime, blocks), grown along the axes
the study's claims depend on (steps, depth range, width, samples) toward the paper's setup::

    ladder:
      fixed: {commit: <commit>, date: "<YYYY-MM-DD>"}   # the commit that declared the rungs
      redeclared:                  # rungs declared again after some ran (optional)
        - {commit: <commit>, date: "<YYYY-MM-DD>", what: "what changed after which rungs ran"}
      budget: "hidden units (width x depth)"      # what a rung's budget counts
      paper_budget: 4800           # the paper's setup in the same units
      targets:                     # per claim: its pass side, threshold and the paper's value
        "dropout_learns": {side: up, value: 0.85}
        "sigma_prime_of_mean*": {side: down, value: 0.02, paper: 0.0}
      rungs:                       # seeds: the seeds behind each rung's standard errors
        - {scale: quick, budget: 300, seeds: 3}
        - {scale: ladder2, budget: 900, seeds: 3}
        - {scale: ladder3, budget: 1800, seeds: 3}

``fixed`` names the commit that declared the rungs; a rung declared again after rungs had run
(a redesign recorded in the study's ``design.changes``) is listed under ``redeclared`` with its
commit and what changed, and every place that shows the ladder says so
(:func:`declared_words`).  A target's ``value`` is the pass threshold of the claim's test in
its measured statistic; ``paper``, where the paper reports a number in the same units, is that
number (it lies on the pass side of the threshold), and :mod:`sigprop.claims.trend` reads the
trend against it.  A rung's ``seeds`` must be the number of seeds its scale's blocks run (the
smallest over its blocks): every committed standard error is one over seeds, and the trend's
critical value is a Student t quantile with that many seeds less one degrees of freedom.

A rung runs with ``snakemake --config 'scale_overrides={<study>: ladder2}'``.  Its claims and
their tolerances are the quick scale's: a rung's parameters are the study's sections with the
quick scale's merged over them, then the rung's own (:func:`sigprop.registry.resolve`), and the
quick scale's design changes apply to it.  :mod:`sigprop.claims.trend` reads the rungs'
claims tables (``docs/evidence/ladder/<study>/<scale>/``) as one trend per claim.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from sigprop.contract import base_scales, is_rung  # noqa: F401  (the rung naming, re-exported)

from .files import ConfigError

MIN_RUNGS = 3
COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


@dataclass(frozen=True)
class Rung:
    scale: str
    budget: float
    seeds: int


@dataclass(frozen=True)
class Declaration:
    """The commit (7 to 40 hex digits) and date at which rungs were declared, and, for a
    re-declaration, what changed."""

    commit: str
    date: str
    what: str = ""


@dataclass(frozen=True)
class Ladder:
    fixed: Declaration
    budget: str
    paper_budget: float
    rungs: tuple[Rung, ...]
    targets: dict = field(default_factory=dict)
    redeclared: tuple[Declaration, ...] = ()

    @property
    def scales(self) -> list[str]:
        return [r.scale for r in self.rungs]


def declared_words(lad: Ladder) -> str:
    """How a ladder's rungs were declared, in a sentence: the declaring commit and date, and each
    re-declaration after rungs had run, with what changed."""
    words = f"Rungs declared at commit `{lad.fixed.commit}` ({lad.fixed.date})"
    if not lad.redeclared:
        return words + "."
    again = "; ".join(
        f"re-declared after rungs had run, at commit `{d.commit}` ({d.date}): {d.what}"
        for d in lad.redeclared
    )
    return f"{words}; {again}."


def _declaration(d, where: str, what: bool) -> Declaration:
    if not isinstance(d, dict):
        raise ConfigError(
            f"{where}': {d!r}; give {{commit: <7+ hex digits>, date: YYYY-MM-DD"
            + (", what: ...}" if what else "}")
        )
    commit, date = str(d.get("commit", "")), str(d.get("date", ""))
    if not COMMIT.match(commit):
        raise ConfigError(
            f"{where}.commit': {d.get('commit')!r} is not a commit (7 to 40 lower-case hex digits)"
        )
    if not DATE.match(date):
        raise ConfigError(f"{where}.date': {d.get('date')!r} is not a date (YYYY-MM-DD)")
    text = str(d.get("what") or "").strip()
    if what and not text:
        raise ConfigError(f"{where}.what': a re-declaration says what changed")
    extra = sorted(set(d) - {"commit", "date"} - ({"what"} if what else set()))
    if extra:
        raise ConfigError(f"{where}.{extra[0]}': not a key of this entry")
    return Declaration(commit, date, text)


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _targets(targets, where: str) -> dict:
    if not isinstance(targets, dict):
        raise ConfigError(f"{where}.targets': claim-id patterns to {{side, value, paper}}")
    for pattern, t in targets.items():
        at = f"{where}.targets.{pattern}"
        if not isinstance(t, dict):
            raise ConfigError(f"{at}': {t!r}; give {{side: up|down, value: <threshold>}}")
        extra = sorted(set(t) - {"side", "value", "paper"})
        if extra:
            raise ConfigError(f"{at}.{extra[0]}': not a key of a target (side, value, paper)")
        if t.get("side") not in ("up", "down"):
            raise ConfigError(f"{at}.side': {t.get('side')!r}; 'up' or 'down'")
        if not _finite(t.get("value")):
            raise ConfigError(f"{at}.value': {t.get('value')!r} is not a finite number")
        if "paper" in t:
            paper = t["paper"]
            if not _finite(paper):
                raise ConfigError(
                    f"{at}.paper': {paper!r} is not a finite number (leave the key "
                    "out where the paper reports no number)"
                )
            if (paper - t["value"]) * (1 if t["side"] == "up" else -1) < 0:
                raise ConfigError(
                    f"{at}.paper': {paper:g} lies on the fail side of the "
                    f"threshold {t['value']:g} (side {t['side']})"
                )
    return dict(targets)


def block_seeds(scale_cfg: dict) -> int:
    """The number of seeds a scale's blocks run: per block, the length of its ``grid.seed`` list
    (one seed where the block fixes or omits it), the smallest over the blocks."""
    counts = []
    for b in (scale_cfg or {}).get("blocks") or []:
        seeds = (b.get("grid") or {}).get("seed")
        counts.append(len(set(seeds)) if isinstance(seeds, list) else 1)
    return min(counts) if counts else 0


def ladder_of(study_cfg: dict, path: str = "") -> Ladder | None:
    """The study's ladder, checked, or None when it has none.  Raises :class:`ConfigError`
    naming the file and key for fewer than :data:`MIN_RUNGS` rungs, a lowest rung other than
    ``quick``, a rung scale that is not declared under ``scales:`` or not named ``ladder<k>``,
    budgets that do not grow, a paper budget below the top rung's, a rung's ``seeds`` other than
    the seeds its scale's blocks run (or below 2), a ``fixed`` or ``redeclared`` entry without a
    commit and date, and a target without a side and finite threshold or with a ``paper`` value
    that is not a finite number on the pass side of the threshold."""
    lad = study_cfg.get("ladder")
    if not lad:
        return None
    where = f"{path}: key 'ladder"
    scales = study_cfg.get("scales") or {}
    rungs = []
    for i, r in enumerate(lad.get("rungs") or []):
        seeds = r.get("seeds")
        if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 2:
            raise ConfigError(
                f"{where}.rungs[{i}].seeds': {seeds!r}; the number of seeds behind "
                "the rung's standard errors (an integer, at least 2)"
            )
        rungs.append(Rung(str(r["scale"]), float(r["budget"]), seeds))
    rungs = tuple(rungs)
    if len(rungs) < MIN_RUNGS:
        raise ConfigError(
            f"{where}.rungs': {len(rungs)} rungs; a ladder needs at least "
            f"{MIN_RUNGS}, the lowest the quick scale"
        )
    if rungs[0].scale != "quick":
        raise ConfigError(
            f"{where}.rungs[0].scale': {rungs[0].scale!r}; the lowest rung is the "
            "quick design itself ('quick')"
        )
    for i, r in enumerate(rungs[1:], 1):
        if not is_rung(r.scale):
            raise ConfigError(
                f"{where}.rungs[{i}].scale': {r.scale!r} is not a rung's name "
                "(ladder2, ladder3, ...)"
            )
        if r.scale not in scales:
            raise ConfigError(f"{where}.rungs[{i}].scale': no scale {r.scale!r} under 'scales:'")
    if len({r.scale for r in rungs}) != len(rungs):
        raise ConfigError(f"{where}.rungs': a scale appears twice")
    for i, r in enumerate(rungs):
        runs = block_seeds(scales.get(r.scale) or {})
        if runs and runs != r.seeds:
            raise ConfigError(
                f"{where}.rungs[{i}].seeds': {r.seeds}, but the blocks of scale "
                f"{r.scale!r} run {runs} seeds"
            )
    budgets = [r.budget for r in rungs]
    if any(b <= 0 for b in budgets) or any(b >= c for b, c in zip(budgets, budgets[1:])):
        raise ConfigError(
            f"{where}.rungs': budgets {budgets} must be positive and grow rung by rung"
        )
    paper = float(lad["paper_budget"])
    if paper < budgets[-1]:
        raise ConfigError(
            f"{where}.paper_budget': {paper:g} is below the top rung's budget {budgets[-1]:g}"
        )
    undeclared = sorted(s for s in scales if is_rung(s) and s not in {r.scale for r in rungs})
    if undeclared:
        raise ConfigError(
            f"{path}: key 'scales.{undeclared[0]}': a rung scale that 'ladder.rungs' does not list"
        )
    fixed = _declaration(lad.get("fixed"), f"{where}.fixed", what=False)
    again = lad.get("redeclared") or []
    if not isinstance(again, list):
        raise ConfigError(f"{where}.redeclared': a list of {{commit, date, what}}")
    redeclared = tuple(
        _declaration(d, f"{where}.redeclared[{i}]", what=True) for i, d in enumerate(again)
    )
    if any(d.date < fixed.date for d in redeclared):
        raise ConfigError(
            f"{where}.redeclared': a re-declaration dated before 'fixed' ({fixed.date})"
        )
    return Ladder(
        fixed,
        str(lad["budget"]),
        paper,
        rungs,
        _targets(lad.get("targets") or {}, where),
        redeclared,
    )
