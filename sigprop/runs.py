"""Runs are values; shards are the unit of work.

A :class:`RunSpec` is a frozen set of hyperparameters.  Its id hashes only the
fields that differ from their defaults, so adding a new field *with a default*
keeps every old id (and every cached result) valid.  Never change a default
value: add a field instead.

A :class:`Shard` is a list of runs that share tensor shapes (architecture,
widths, depth, batch size, data set, step budget) and so train together as one
batched model.  Its id hashes its member run ids in order, so editing one grid
value changes the ids of the shards that contain it and of no other, and shards
already computed are kept when a grid grows (:func:`make_shards`).

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import hashlib
import json
import operator
from dataclasses import dataclass, field, fields

# Fields that must be equal for runs to be stacked into one shard.
SHAPE_FIELDS = (
    "arch",
    "dataset",
    "width",
    "depth",
    "branch_depth",
    "head_depth",
    "head_width",
    "activation",
    "optimizer",
    "steps",
    "eval_every",
    "precision",
    "micro_batch",
    "eval_max",
)
# Families without BatchNorm stack models of different batch sizes: batches are
# padded to the largest and padded samples get zero weight in the loss.  With
# BatchNorm, padding would change the batch statistics, so batch_size is a shape.
MIXED_BATCH_ARCHS = (
    "fc",
    "resnet_fc",
    "stable_resnet_fc",
    "densenet_fc",
    "vcnn",
    "lenet",
    "fc_loop",
)


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One training run (one model) of a study grid.

    ``seed`` is a replicate index; the random key actually used is derived from
    the run id (:attr:`key`), so two runs never share random numbers by accident.

    Schedules: ``lr_milestones`` is a comma-separated list of steps (values < 1
    are fractions of ``steps``) at which the learning rate is multiplied by
    ``lr_gamma``; ``lr_step_every`` > 0 does the same every that many steps.
    ``target_acc`` > 0 stops a model when its test accuracy reaches it,
    ``target_loss`` > 0 when its training loss falls to it; the step is
    recorded as the ``target_step`` metric.

    Pruning at initialization (003 Hayou et al., Sec. 2): ``pruner`` (empty:
    dense, the default) names a :data:`sigprop.prune.PRUNERS` criterion that
    removes the fraction ``sparsity`` of the prunable weights, ranked over the
    whole network (``prune_scope`` ``global``, the order statistic of 003
    Sec. 2.1) or the same fraction of every layer (``layerwise``);
    ``prune_rescale`` applies the rescaling trick (003 Prop. 1, Alg. 1) to the
    pruned FFNN/CNN; ``prune_batch`` is the number of training examples *per
    class* of the scoring batch (the authors' ``samples_per_class: 10``),
    ``prune_rounds`` the iterations of an iterative pruner (SynFlow's 100).
    Masks are made by the prune stage (``rules/prune.smk``).

    Batch-size sweeps (004 Chen et al., Sec. 5): ``micro_batch`` c > 0 makes every step of the
    shard a micro-step of c examples per model; a model with ``batch_size`` b (a multiple of c)
    accumulates b / c micro-steps, then takes one SGD step on their mean gradient.  Models of
    different batch sizes then share a shard and each processes c examples per step, so a shard
    of ``steps`` micro-steps gives every model the same number of examples (epochs) with no
    padding; ``steps``, ``eval_every`` and the learning-rate milestones count micro-steps.
    """

    arch: str = "fc"
    dataset: str = "digits"
    width: int = 64
    depth: int = 10
    activation: str = "tanh"
    sigma_w2: float = 1.0
    sigma_b2: float = 0.05
    keep_rate: float = 1.0
    init: str = "gaussian"
    optimizer: str = "sgd"
    lr: float = 1e-3
    momentum: float = 0.0
    batch_size: int = 128
    steps: int = 300
    eval_every: int = 100
    precision: str = "float32"
    seed: int = 0
    # added after the skeleton; defaults keep earlier run ids
    branch_depth: int = 1
    alpha: float = 1.0
    weight_decay: float = 0.0
    nesterov: bool = False
    lr_milestones: str = ""
    lr_step_every: int = 0
    lr_gamma: float = 0.1
    target_acc: float = 0.0
    target_loss: float = 0.0
    head_depth: int = 0
    head_width: int = 0
    pruner: str = ""
    sparsity: float = 0.0
    prune_scope: str = "global"
    prune_rescale: bool = False
    prune_batch: int = 10
    prune_rounds: int = 100
    micro_batch: int = 0
    eval_max: int = 0  # examples of each split an evaluation scores, at most (0: no cap)
    prune_max: int = 0  # examples of the class-balanced scoring batch, at most (0: all)
    # not a run field: the run id, computed on first use (a slot, so a grid of 10^6 runs
    # holds ~0.4 KB per run; see docs/faults.md)
    _id: str = field(default="", init=False, repr=False, compare=False, hash=False)

    @classmethod
    def from_dict(cls, d: dict) -> RunSpec:
        unknown = sorted(set(d) - set(FIELD_TYPES))
        if unknown:
            raise ValueError(f"unknown run field(s) {unknown}; known: {sorted(FIELD_TYPES)}")
        return cls(**{k: coerce_value(k, FIELD_TYPES[k], v) for k, v in d.items()})

    def non_default(self) -> dict:
        return {name: v for (name, default), v in zip(_DEFAULTS, _values(self)) if v != default}

    @property
    def run_id(self) -> str:
        """``r`` + 12 hex digits of the hash of the non-default fields (computed once per run:
        a grid of 10^5 runs asks for every id several times while the DAG is built)."""
        if not self._id:
            object.__setattr__(self, "_id", "r" + _digest(self.non_default())[:12])
        return self._id

    @property
    def key(self) -> int:
        """31-bit random key derived from the run id (seeds derive from run ids)."""
        return int(_digest({"run": self.run_id})[:8], 16) & 0x7FFFFFFF

    @property
    def prune_data_key(self) -> int:
        """31-bit key of the pruning scoring batch (003 Sec. 2.1: "we randomly sample a batch").

        It depends on the data set, ``seed`` and ``prune_batch`` only, not on
        the run id: every run of one replicate is scored on the same examples
        (pruners and sparsities are compared on equal data), and a run's batch
        does not depend on the shard it is in.
        """
        return (
            int(_digest({"prune_batch": [self.dataset, self.seed, self.prune_batch]})[:8], 16)
            & 0x7FFFFFFF
        )

    def shape_key(self) -> tuple:
        key = _shape_values(self)
        return key if self.arch in MIXED_BATCH_ARCHS else key + (self.batch_size,)

    def as_dict(self) -> dict:
        """The run's fields (not the cached id)."""
        return dict(zip(RUN_FIELDS, _values(self)))


@dataclass(frozen=True)
class Shard:
    study: str
    runs: tuple[RunSpec, ...] = field(default_factory=tuple)

    @property
    def pruned(self) -> bool:
        """Whether a run has a ``pruner``: then the shard has a prune job and a mask file (003)."""
        return any(r.pruner for r in self.runs)

    @property
    def shard_id(self) -> str:
        try:
            return self.__dict__["_shard_id"]
        except KeyError:
            sid = shard_id_of(self.study, [r.run_id for r in self.runs])
            object.__setattr__(self, "_shard_id", sid)
            return sid

    def to_json(self) -> str:
        return json.dumps(
            {
                "study": self.study,
                "shard_id": self.shard_id,
                "runs": [r.non_default() for r in self.runs],
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Shard:
        d = json.loads(text)
        shard = cls(d["study"], tuple(RunSpec.from_dict(r) for r in d["runs"]))
        if "shard_id" in d and d["shard_id"] != shard.shard_id:
            raise ValueError(
                f"shard id mismatch: file says {d['shard_id']}, members hash to {shard.shard_id}"
            )
        return shard


def shard_id_of(study: str, run_ids) -> str:
    """The id of the shard of ``study`` whose members have these run ids, in this order."""
    return "s" + _digest({"study": study, "runs": list(run_ids)})[:12]


def make_shards(study: str, runs: list[RunSpec], shard_size, computed=()) -> list[Shard]:
    """Group runs by shape, keep the grid's order, cut each group into chunks.

    ``shard_size`` is an int, or a function of a group's first run returning one
    (memory-based sizing, :mod:`sigprop.sizing`).  ``computed`` lists shards already computed,
    each as its member run ids in order (:func:`sigprop.tables.computed_shards`): one whose runs
    are all still in a group, and no more than its size, is kept as it is, so a longer grid
    list (more seeds, a new depth or sigma_w^2) adds shards of the new runs and leaves the
    computed ones alone.  The rest of a group is chunked in the order the grid lists its
    values, so without computed shards changing one value in place changes only the chunks
    that hold the affected runs.  Duplicate runs (same id) are dropped with their first
    occurrence kept.  Shards come out in the grid order of their first run.
    """
    size_of = shard_size if callable(shard_size) else (lambda run: shard_size)
    groups: dict[tuple, list[RunSpec]] = {}
    seen: dict[str, None] = {}
    for r in runs:
        if r.run_id in seen:
            continue
        seen[r.run_id] = None
        groups.setdefault(r.shape_key(), []).append(r)
    position = {rid: i for i, rid in enumerate(seen)}
    group_of = {r.run_id: key for key, members in groups.items() for r in members}
    candidates: dict[tuple, list[tuple]] = {}
    for ids in sorted({tuple(c) for c in computed if c}, key=lambda c: (-len(c), c)):
        if ids[0] in group_of:
            candidates.setdefault(group_of[ids[0]], []).append(ids)
    shards = []
    for key, members in groups.items():
        size = int(size_of(members[0]))
        if size < 1:
            raise ValueError(f"shard_size must be >= 1, got {size}")
        by_id = {r.run_id: r for r in members}
        taken: set[str] = set()
        group = []
        for ids in candidates.get(key, ()):
            if (
                len(ids) <= size
                and len(set(ids)) == len(ids)
                and all(i in by_id and i not in taken for i in ids)
            ):
                group.append(Shard(study, tuple(by_id[i] for i in ids)))
                taken.update(ids)
        rest = [r for r in members if r.run_id not in taken]
        group += [Shard(study, tuple(rest[i : i + size])) for i in range(0, len(rest), size)]
        shards += sorted(group, key=lambda s: min(position[r.run_id] for r in s.runs))
    return shards


_DEFAULTS = tuple((f.name, f.default) for f in fields(RunSpec) if f.init)
FIELD_TYPES = {f.name: type(f.default) for f in fields(RunSpec) if f.init}
RUN_FIELDS = tuple(FIELD_TYPES)  # the run's fields, in order
_values = operator.attrgetter(*RUN_FIELDS)
_shape_values = operator.attrgetter(*SHAPE_FIELDS)


def runs_sha256(run_ids) -> str:
    """SHA-256 of a set of run ids (sorted, newline-joined): what a committed table's
    ``provenance.json`` records of the runs its verdicts came from."""
    text = "\n".join(sorted(set(map(str, run_ids))))
    return hashlib.sha256(text.encode()).hexdigest()


def runs_digest(run_ids) -> str:
    """A short digest of a set of run ids, the first 12 hex digits of :func:`runs_sha256`: what
    a study's merged table must hold (:func:`sigprop.tables.check_runs_table`) and what a
    claims table is stamped with."""
    return runs_sha256(run_ids)[:12]


def coerce_value(name: str, typ: type, value):
    if typ is bool and isinstance(value, bool):
        return value
    if typ is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if typ is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if typ is str and isinstance(value, str):
        return value
    raise TypeError(f"run field '{name}' expects {typ.__name__}, got {value!r}")


def _digest(obj) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_canon)
    return hashlib.sha256(text.encode()).hexdigest()


def _canon(x):
    raise TypeError(f"cannot hash {type(x).__name__}")


# The hyperparameters a mean-field theory depends on: theory tables are keyed by them.
SETTING_FIELDS = ("activation", "sigma_w2", "sigma_b2", "keep_rate")


def settings(runs, extra: tuple[str, ...] = ()) -> list[dict]:
    """The distinct theory settings of some runs, sorted: :data:`SETTING_FIELDS` and the run
    fields ``extra`` (a study's ``theory_fields``, e.g. ``("init",)``).

    Raises ValueError for an ``extra`` name that is not a run field."""
    unknown = [k for k in extra if k not in FIELD_TYPES]
    if unknown:
        raise ValueError(f"theory_fields {unknown}: not run fields (known: {sorted(FIELD_TYPES)})")
    keys = SETTING_FIELDS + tuple(k for k in extra if k not in SETTING_FIELDS)
    combos = sorted({tuple(getattr(r, k) for k in keys) for r in runs})
    return [dict(zip(keys, c)) for c in combos]
