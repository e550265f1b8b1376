"""Configuration: validation messages that name the file and the key, the expansion of a
study's grid blocks into runs and shards, and the study's typed parameters.

The JSON Schemas live in ``workflow/schemas``; the Snakefile validates with
``snakemake.utils.validate`` and passes failures through :func:`explain` so the
user sees ``config/studies/x.yaml: key 'scales.quick.blocks[0].grid.sigma_w2':
...`` instead of a bare schema dump.  Checks a schema cannot express (known
data sets, activations, architectures; consistent shapes) are in
:func:`check_runs`; the study's own parameters (``measure:``, ``theory:``, ``analysis:``,
``claims:``) are parsed into its declared types by :func:`sigprop.registry.resolve`.

This module sits above the study registry: it reads a study's declaration (its task and its
parameter types), and nothing below it imports it.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132; 003 = Hayou,
Ton, Doucet, Teh (2021), arXiv:2002.08797; 004 = Chen, Wang, Zhao, Papailiopoulos, Koutris
(2018), arXiv:1806.03791.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import math
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from . import registry
from .contract import Params
from .data.sizes import fc_input_dim, train_size, width_for_params  # noqa: F401 (re-exported)
from .params import ParamError
from .runs import MIXED_BATCH_ARCHS, RunSpec, Shard, make_shards, runs_digest

# names of sigprop.nets.families.FAMILIES, kept here so parsing a config needs no torch
KNOWN_ARCHS = ("fc", "resnet_fc", "stable_resnet_fc", "densenet_fc", "resnet18", "resnet34",
               "resnet32", "resnet50", "resnet104", "stable_resnet32", "stable_resnet50",
               "stable_resnet104", "vgg16", "vgg16x3", "vcnn", "lenet", "fc_loop")
# the convolutional ones (sigprop.nets.convnets.families): they need image data (C, H, W)
IMAGE_ARCHS = ("resnet18", "resnet34", "resnet32", "resnet50", "resnet104", "stable_resnet32",
               "stable_resnet50", "stable_resnet104", "vgg16", "vgg16x3", "vcnn", "lenet")
# names of sigprop.nets.activations.ACTIVATIONS, kept here so parsing a config needs no torch
KNOWN_ACTIVATIONS = ("linear", "tanh", "relu", "hard_tanh", "erf", "sigmoid", "elu")
# names of sigprop.prune.PRUNERS (003 pruning at initialization), kept here so parsing needs no torch
KNOWN_PRUNERS = ("random", "magnitude", "snip", "grasp", "synflow", "sbp_sr")
# scopes of sigprop.prune.compute_masks: one threshold over the network, or one per layer
KNOWN_PRUNE_SCOPES = ("global", "layerwise")


class ConfigError(ValueError):
    """A configuration problem; the message names the file and the key."""


MESSAGE_CHARS = 300
"""The most characters of a value an error message quotes."""

NODE_BUDGET = 200_000
"""The most values (mapping entries and list items, counted through YAML aliases) a config or
study file may hold: a file of nested aliases (a "billion laughs") is refused before
validation, which would otherwise expand it while building its error message."""


def check_size(obj, source, budget: int = NODE_BUDGET) -> None:
    """Stop, naming ``source``, when ``obj`` holds more than ``budget`` values counted as a tree
    (aliases expand: one list referenced nine times counts nine times)."""
    n, stack = 0, [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            n += len(o)
            stack.extend(o.values())
        elif isinstance(o, (list, tuple)):
            n += len(o)
            stack.extend(o)
        if n > budget:
            raise ConfigError(f"{source}: holds more than {budget:,} values once its YAML aliases "
                              "are expanded (aliases nested inside aliases?); refused before "
                              "validation")


def key_path(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def explain(exc: BaseException, filename) -> str:
    """Turn a jsonschema ValidationError (possibly wrapped by Snakemake) into one line;
    ``filename`` is a file name or a :class:`ConfigSources`."""
    err = _find_validation_error(exc)
    if err is None:
        return f"{filename}: {exc}"
    where = key_path(err.absolute_path)
    filename = source_of(filename, list(err.absolute_path))
    msg = err.message
    if len(msg) > MESSAGE_CHARS:         # jsonschema quotes the value: never print it whole
        msg = msg[:MESSAGE_CHARS] + f"... ({len(msg) - MESSAGE_CHARS} more characters)"
    if err.validator == "additionalProperties":
        known = sorted(err.schema.get("properties", {}))
        msg += f" (known keys: {', '.join(known)})" if known else ""
    return f"{filename}: key '{where}': {msg}"


def _find_validation_error(exc):
    import jsonschema
    seen = set()
    stack = [exc]
    while stack:
        e = stack.pop()
        if id(e) in seen or e is None:
            continue
        seen.add(id(e))
        if isinstance(e, jsonschema.ValidationError):
            return e
        stack += [a for a in getattr(e, "args", ()) if isinstance(a, BaseException)]
        stack += [e.__cause__, e.__context__]
    return None


def load_yaml(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: file not found")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    check_size(data, path)
    return data


@dataclass(frozen=True)
class Study:
    """A study at one scale: its file, its runs and shards, the block label of every run and its
    typed parameters (:class:`sigprop.contract.Params`)."""

    name: str
    path: str
    cfg: dict
    scale: str
    runs: tuple[RunSpec, ...]
    shards: tuple[Shard, ...]
    labels: dict
    params: Params
    smoke: bool = False     # a smoke run (sigprop.smoke): a few models per block, a few steps

    @property
    def kind(self) -> str:
        return self.cfg["kind"]

    @property
    def task(self) -> str:
        return registry.task(self.kind)

    def shard(self, shard_id: str) -> Shard:
        """The shard with this id (a dict lookup: the rules' input functions call it once or
        more per job, and a shard id hashes all its run ids, so a scan over the shards made
        a 10,000-run DAG take minutes)."""
        try:
            return self._shard_index[shard_id]
        except KeyError:
            raise KeyError(f"study {self.name} has no shard {shard_id}") from None

    @functools.cached_property
    def _shard_index(self) -> dict[str, Shard]:
        return {s.shard_id: s for s in self.shards}

    @property
    def eval_splits(self) -> tuple[str, ...]:
        """What the study's training shards score at each evaluation (its declaration)."""
        return registry.spec(self.kind).eval_splits

    @property
    def datasets(self) -> list[str]:
        return sorted({r.dataset for r in self.runs})

    def job_params(self, job: str, shard_id: str | None = None) -> str:
        """What one of the study's jobs (``measure``, ``theory``, ``figure``, ``table``,
        ``claims``) receives as JSON: only the parameter sections it reads
        (:data:`sigprop.contract.JOB_SECTIONS`), so Snakemake reruns it when one of them
        changes and for nothing else; a measure job of a study that declares
        ``measure_reads_labels`` also gets the block labels of its shard's runs."""
        p = self.params.for_job(job)
        if job == "measure" and registry.spec(self.kind).measure_reads_labels:
            if shard_id is None:
                raise ValueError(f"study {self.name}: the measure job's labels need its shard")
            p = dataclasses.replace(p, labels=tuple(self.labels[r.run_id]
                                                    for r in self.shard(shard_id).runs))
        return p.to_json()

    @property
    def regime(self) -> dict:
        """What differs at this scale from the paper's setup, by axis (the scale's ``regime``)."""
        return dict(((self.cfg.get("scales") or {}).get(self.scale) or {}).get("regime") or {})

    def design(self) -> str:
        """The study's ``design:`` for the claims job, as JSON: the date the design was fixed and
        the changes made since that apply to this scale (their ``affects`` patterns mark
        claims ``exploratory``, :func:`sigprop.claims.mark_exploratory`), the scale, its regime
        and the axes each claim depends on (:mod:`sigprop.claims.reading`), and the paper
        (a claim's source must lie in it)."""
        from .claims import design_changes
        from .claims.reading import pairs
        d = self.cfg.get("design") or {}
        out = {"fixed": str(d.get("fixed", "")), "scale": self.scale,
               "changes": design_changes(d, self.scale), "regime": self.regime,
               "depends_on": pairs(self.cfg.get("depends_on")),
               "paper": str(self.cfg.get("paper", ""))}
        if self.smoke:
            out["smoke"] = True      # every verdict 'smoke' (sigprop.smoke.smoke_verdicts)
        return json.dumps(out, sort_keys=True, default=str)

    def summary_info(self) -> dict:
        """What a referee's summary says of the study (:mod:`sigprop.claims.summary`): its
        scale, data, the scale's description of what differs from the paper and its regime by
        axis, and the design's date and changes."""
        from .claims import design_changes
        from .claims.reading import pairs
        d = self.cfg.get("design") or {}
        desc = ((self.cfg.get("scales") or {}).get(self.scale) or {}).get("description", "")
        return {"title": self.cfg.get("title", self.name), "kind": self.kind,
                "scale": f"{self.scale} (smoke run)" if self.smoke else self.scale,
                "datasets": self.datasets, "description": str(desc).strip(),
                "regime": self.regime,
                "paper_regime": dict(((self.cfg.get("scales") or {}).get("paper") or {})
                                     .get("regime") or {}),
                "paper_datasets": block_datasets(self.cfg, "paper"),
                "depends_on": pairs(self.cfg.get("depends_on")),
                "fixed": str(d.get("fixed", "")),
                "changes": [{"date": str(c.get("date", "")), "what": str(c.get("what", ""))}
                            for c in design_changes(d, self.scale)]}

    def manifest(self) -> str:
        """What the merge of the study's shard tables expects, as JSON: per shard, its runs and
        each run's block label (the ``block`` column of the merged table)."""
        return json.dumps({"study": self.name, "rule": f"{self.task}_shard", "shards": {
            s.shard_id: [[r.run_id, self.labels[r.run_id]] for r in s.runs]
            for s in self.shards}}, sort_keys=True)

    def expect(self) -> str:
        """What a reader of the study's merged run table checks it holds, as JSON: the study and
        the digest of its run ids (:func:`sigprop.tables.check_runs_table`)."""
        return json.dumps({"study": self.name, "n_runs": len(self.labels),
                           "runs": runs_digest(self.labels)}, sort_keys=True)


def block_datasets(study_cfg: dict, scale: str) -> list[str]:
    """The data sets a scale's blocks name (``fixed`` or ``grid``), without expanding them."""
    out = set()
    for b in ((study_cfg.get("scales") or {}).get(scale) or {}).get("blocks") or []:
        d = (b.get("fixed") or {}).get("dataset")
        if d:
            out.add(str(d))
        out.update(str(x) for x in (b.get("grid") or {}).get("dataset") or [])
    return sorted(out)


def expand_runs(study_cfg: dict, scale: str, filename: str = "<study>",
                max_runs: int | None = None) -> list[RunSpec]:
    """The runs of one scale: for each block, fixed fields times the grid product."""
    return [r for r, _ in expand_blocks(study_cfg, scale, filename, max_runs)]


def count_runs(study_cfg: dict, scale: str) -> int:
    """Runs a scale's grid makes (the sum over blocks of the product of the grid lists), known
    without expanding it."""
    n = 0
    for block in ((study_cfg.get("scales") or {}).get(scale) or {}).get("blocks") or []:
        n += math.prod(len(v) if isinstance(v, list) else 1
                       for v in (block.get("grid") or {}).values())
    return n


def expand_blocks(study_cfg: dict, scale: str, filename: str = "<study>",
                  max_runs: int | None = None) -> list[tuple[RunSpec, str]]:
    """``(run, label)`` for every run of one scale, block by block; a block's label is its
    ``label:`` (``block N`` when it has none).  Figures and claims split a study into the
    paper's panels by it, e.g. 000 Fig. 7 (a)-(h).

    Stops, naming the key, on: a grid of more than ``max_runs`` runs (counted before anything
    is expanded), a value listed twice in one grid list, a field set twice, a value of the
    wrong type.  Fixed and grid values are checked once per block, not once per run, so a grid
    of 10^6 runs expands in seconds (docs/faults.md)."""
    try:
        blocks = study_cfg["scales"][scale]["blocks"]
    except KeyError:
        raise ConfigError(f"{filename}: key 'scales.{scale}': missing") from None
    n = count_runs(study_cfg, scale)
    if max_runs is not None and n > max_runs:
        raise ConfigError(f"{filename}: key 'scales.{scale}.blocks': the grid makes {n:,} runs, "
                          f"more than max_runs = {max_runs:,} (a key of the run's config); nothing was "
                          "expanded. Shrink the grid, or raise max_runs if you mean it")
    out = []
    for b, block in enumerate(blocks):
        where = f"scales.{scale}.blocks[{b}]"
        label = block.get("label", f"block {b}")
        grid = block["grid"]
        fixed = {k: _field(k, v, filename, f"{where}.fixed.{k}")
                 for k, v in (block.get("fixed") or {}).items()}
        clash = sorted(set(fixed) & set(grid))
        if clash:
            raise ConfigError(f"{filename}: key '{where}': {clash} set in both 'fixed' and 'grid'")
        names = list(grid)
        values = {}
        for k in names:
            if not grid[k]:
                raise ConfigError(f"{filename}: key '{where}.grid.{k}': empty list")
            vals = [_field(k, v, filename, f"{where}.grid.{k}[{i}]") for i, v in enumerate(grid[k])]
            seen = set()
            for v in vals:
                if v in seen:
                    raise ConfigError(f"{filename}: key '{where}.grid.{k}': {v!r} is listed twice "
                                      f"({len(vals)} values, {len(set(vals))} distinct); each "
                                      "value makes its runs once")
                seen.add(v)
            values[k] = vals
        derived = dict(block.get("derived") or {})
        clash = sorted(set(derived) & (set(fixed) | set(grid)))
        if clash:
            raise ConfigError(f"{filename}: key '{where}.derived': {clash} also set in 'fixed' "
                              "or 'grid'")
        for combo in itertools.product(*(values[k] for k in names)):
            kw = {**fixed, **dict(zip(names, combo))}
            try:
                if derived:
                    kw.update({k: _coerce_field(k, v) for k, v in derive(kw, derived).items()})
                out.append((RunSpec(**kw), label))
            except (TypeError, ValueError) as e:
                raise ConfigError(f"{filename}: key '{where}': {e}") from None
    if not out:
        raise ConfigError(f"{filename}: key 'scales.{scale}.blocks': the grid is empty")
    return out


def _coerce_field(name: str, value):
    from .runs import FIELD_TYPES, coerce_value
    if name not in FIELD_TYPES:
        raise ValueError(f"unknown run field '{name}'")
    return coerce_value(name, FIELD_TYPES[name], value)


def _field(name: str, value, filename: str, key: str):
    """A run field's value, coerced to the field's type and finite, or a ConfigError at ``key``."""
    try:
        v = _coerce_field(name, value)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{filename}: key '{key}': {e}") from None
    if isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"{filename}: key '{key}': {v!r} is not a finite number")
    return v


def run_labels(pairs: list[tuple[RunSpec, str]], filename: str = "<study>",
               scale: str = "quick") -> dict[str, str]:
    """``run_id -> label`` from :func:`expand_blocks`; a run made twice (by two blocks, or
    twice by one) is an error naming the blocks."""
    out: dict[str, str] = {}
    for r, label in pairs:
        rid = r.run_id
        if rid in out:
            raise ConfigError(f"{filename}: key 'scales.{scale}.blocks': run {rid} is made by the "
                              f"blocks '{out[rid]}' and '{label}' (the same fields twice): "
                              "keep it in one block")
        out[rid] = label
    return out


def derive(run: dict, derived: dict) -> dict:
    """Run fields computed from the others (a block's ``derived:`` mapping).

    - ``sigma_w2: {chi1: v}``: σ_w² on the line χ1 = v for the run's activation,
      σ_b² and keep rate (000 Eq. 10; v = 1 is the critical line of 000 §5.1 and
      Fig. 6), solved by :func:`sigprop.theory.meanfield.sigma_w2_for_chi1`;
    - ``lr: {per_depth: c}``: learning rate c / L (000 §5.2, Fig. 7(d));
    - ``width: {params: p}``: the width K of the ``depth`` L fully connected layers with about p
      weights, ``d_in K + (L-1) K^2 + K d_out = p`` rounded to the nearest integer (004 Sec. 5;
      fc and LeNet's FC part, d_in from :func:`fc_input_dim`, biases not counted, as in the
      paper); ``head_width: {params: p}`` the same for a ResNet's FC head of ``head_depth``;
    - ``steps: {epochs: E}`` / ``eval_every: {epochs: E}``: E passes over the data set's
      training split (:func:`train_size` with the generator's default options), in steps of
      ``batch_size`` examples, or of ``micro_batch`` examples when that is set (004 batch-size
      sweeps: the smallest batch then gets exactly E epochs, larger ones E up to their dropped
      last partial batch).

    Values are rounded to 10 significant digits so that run ids do not depend
    on the last bits of a root finder.
    """
    out = {}
    defaults = RunSpec()
    for field, spec in derived.items():
        (how, v), = spec.items()
        if field == "sigma_w2" and how == "chi1":
            from .theory import meanfield
            x = meanfield.sigma_w2_for_chi1(float(v), run.get("sigma_b2", defaults.sigma_b2),
                                            run.get("keep_rate", defaults.keep_rate),
                                            run.get("activation", defaults.activation))
            if not np.isfinite(x):
                raise ValueError(f"derived sigma_w2: no sigma_w2 gives chi1 = {v} for {run}")
        elif field == "lr" and how == "per_depth":
            x = float(v) / run.get("depth", defaults.depth)
        elif field == "width" and how == "params":
            out[field] = width_for_params(float(v), run.get("depth", defaults.depth),
                                          run.get("dataset", defaults.dataset),
                                          run.get("arch", defaults.arch))
            continue
        elif field == "head_width" and how == "params":
            out[field] = width_for_params(float(v), run.get("head_depth", defaults.head_depth),
                                          run.get("dataset", defaults.dataset),
                                          run.get("arch", defaults.arch),
                                          run.get("width", defaults.width))
            continue
        elif field in ("steps", "eval_every") and how == "epochs":
            out[field] = steps_for_epochs(float(v), run, defaults)
            continue
        else:
            raise ValueError(f"derived {field}: unknown rule '{how}' (known: sigma_w2: {{chi1: v}}, "
                             "lr: {per_depth: c}, width/head_width: {params: p}, steps/eval_every: {epochs: E})")
        out[field] = float(f"{float(x):.10g}")
    return out


def check_runs(runs: list[RunSpec], filename: str, scale: str, study_cfg: dict | None = None,
               data_options: dict | None = None) -> None:
    """Semantic checks the schema cannot make, so that a bad grid stops before any job runs:

    - names exist in the registries (architecture, activation, data set, pruner);
    - shapes fit together: a convolutional architecture (:data:`IMAGE_ARCHS`) needs an image
      data set (inputs ``(C, H, W)``); in a study that trains (task "train", see
      :mod:`sigprop.studies`) a ``batch_size`` must not exceed the training set
      (:func:`train_size`, with the data sets' generator options ``data_options``, the
      config's ``data.options``; their defaults when not given); ``eval_every`` must not
      exceed ``steps``; a ``micro_batch`` divides the ``batch_size`` and needs a family without
      BatchNorm.

    Errors name the file and the key of the block that sets the value when ``study_cfg`` is
    given (``...blocks[0].grid.pruner``), else ``scales.<scale>.blocks``.
    """
    from .data import registry
    trains = _trains(study_cfg)
    sizes: dict[str, int | None] = {}
    for r in runs:
        def fail(field, msg, r=r):
            raise ConfigError(f"{filename}: key "
                              f"'{_block_key(study_cfg, scale, field, getattr(r, field))}': {msg}")
        _check_pruning(r, filename, scale, study_cfg)
        if r.arch not in KNOWN_ARCHS:
            fail("arch", f"unknown arch '{r.arch}' (known: {', '.join(KNOWN_ARCHS)})")
        if r.activation not in KNOWN_ACTIVATIONS:
            fail("activation", f"unknown activation '{r.activation}' "
                               f"(known: {', '.join(KNOWN_ACTIVATIONS)})")
        if r.dataset not in registry.DATASETS:
            fail("dataset", f"unknown dataset '{r.dataset}' "
                            f"(known: {', '.join(sorted(registry.DATASETS))})")
        shape = registry.get(r.dataset).input_shape
        if r.arch in IMAGE_ARCHS and len(shape) != 3:
            fail("arch", f"arch '{r.arch}' is convolutional and needs image inputs (C, H, W), but "
                         f"dataset '{r.dataset}' has inputs of shape {tuple(shape)} (use an image "
                         "data set such as digits_images, or a fully connected arch)")
        if r.eval_every > r.steps:
            fail("eval_every", f"eval_every ({r.eval_every}) exceeds steps ({r.steps})")
        if r.micro_batch and r.batch_size % r.micro_batch:
            fail("micro_batch", f"batch_size {r.batch_size} is not a multiple of micro_batch "
                                f"{r.micro_batch}")
        if r.micro_batch and r.arch not in MIXED_BATCH_ARCHS:
            fail("micro_batch", f"arch '{r.arch}' has BatchNorm, whose statistics a micro-batch "
                                f"would change: set micro_batch 0 (micro-batching families: "
                                f"{', '.join(MIXED_BATCH_ARCHS)})")
        if trains:
            if r.dataset not in sizes:
                sizes[r.dataset] = train_size(r.dataset, (data_options or {}).get(r.dataset))
            n = sizes[r.dataset]
            if n is not None and r.batch_size > n:
                fail("batch_size", f"batch_size {r.batch_size} exceeds the {n} training examples "
                                   f"of dataset '{r.dataset}'")


def _trains(study_cfg: dict | None) -> bool:
    """Whether a study's shard jobs train (task "train"); True without a study config."""
    if not study_cfg or "kind" not in study_cfg:
        return True
    return registry.task(study_cfg["kind"]) == "train"


def check_finite(obj, source, path: tuple = ()) -> None:
    """Every number in a config is finite: NaN passes every range check of a schema (it fails
    every comparison), so it is refused here, naming the key.  ``source`` is the file name, or
    a :class:`ConfigSources` that says which file (or ``--config``) a key came from."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            check_finite(v, source, path + (k,))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            check_finite(v, source, path + (i,))
    elif isinstance(obj, float) and not math.isfinite(obj):
        raise ConfigError(f"{source_of(source, path)}: key '{key_path(path)}': {obj!r} is not a "
                          "finite number")


class ConfigSources:
    """Where each top-level key of the run's config came from: ``--config`` on the command line,
    or the config file(s); error messages name the right one."""

    def __init__(self, files, cli: dict | None = None):
        self.files = ", ".join(str(f) for f in files) or "the config"
        self.cli = set(cli or {})

    def of(self, path) -> str:
        top = path[0] if path else None
        return "--config" if top in self.cli else self.files

    def __str__(self) -> str:
        return self.files


def source_of(source, path) -> str:
    return source.of(path) if isinstance(source, ConfigSources) else str(source)


def check_kind(study_cfg: dict, filename: str) -> None:
    """The study's ``kind`` names a study package (:func:`sigprop.registry.kinds`)."""
    kind = study_cfg.get("kind")
    if kind not in registry.kinds():
        raise ConfigError(f"{filename}: key 'kind': unknown study kind '{kind}' "
                          f"(known: {', '.join(registry.kinds())}; a study is a package "
                          "sigprop/studies/<kind>/, see docs/adding-a-study.md)")


def steps_for_epochs(epochs: float, run: dict, defaults: RunSpec) -> int:
    """Steps for ``epochs`` passes over the training split (see :func:`derive`)."""
    name = run.get("dataset", defaults.dataset)
    n = train_size(name)
    if n is None:
        raise ValueError(f"derived steps: the training-set size of data set '{name}' is not "
                         "known before it is built")
    per = run.get("micro_batch", defaults.micro_batch) or run.get("batch_size", defaults.batch_size)
    if per > n:
        raise ValueError(f"derived steps: {per} examples per step exceed the {n} training "
                         f"examples of '{name}'")
    return max(1, int(round(epochs * (n // per))))


def check_data_options(options: dict, filename) -> dict:
    """The config's ``data.options``, checked and coerced: known embedded data sets, only their
    generator's arguments (:mod:`sigprop.data.embedded`; downloaded sets take none), each of
    the type of the argument's default and in its range (:data:`~sigprop.data.embedded.OPTION_RANGES`).
    ``--config`` gives nested values as strings: ``'-5'`` for an integer option becomes ``-5``
    (and is then refused as out of range), ``'abc'`` is refused.  Returns the coerced options;
    errors name the source (``filename``: a file or :class:`ConfigSources`) and the key."""
    from .data import embedded, registry
    out = {}
    for name, opts in (options or {}).items():
        path = ("data", "options", name)
        if name not in registry.DATASETS:
            raise ConfigError(f"{source_of(filename, path)}: key 'data.options.{name}': unknown "
                              f"dataset '{name}' (known: {', '.join(sorted(registry.DATASETS))})")
        spec = registry.get(name)
        params = (inspect.signature(getattr(embedded, spec.fmt)).parameters
                  if spec.source == "embedded" else {})
        out[name] = {}
        for key, value in (opts or {}).items():
            where = f"{source_of(filename, path)}: key 'data.options.{name}.{key}'"
            if key not in params:
                raise ConfigError(f"{where}: unknown option (allowed: "
                                  f"{', '.join(params) or 'none, it is downloaded'})")
            out[name][key] = _option_value(value, params[key].default, key, where)
    return out


def _option_value(value, default, key: str, where: str):
    """One data option coerced to the type of its default, finite and in range."""
    typ = type(default)
    v = value
    if isinstance(v, str) and typ in (int, float):
        try:
            v = float(v) if typ is float else (int(v) if v.strip().lstrip("+-").isdigit()
                                               else float(v))
        except ValueError:
            raise ConfigError(f"{where}: expected a number, got {value!r}") from None
    if typ is int and isinstance(v, float) and v.is_integer():
        v = int(v)
    if typ is float and isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    if not isinstance(v, typ) or isinstance(v, bool) != (typ is bool):
        raise ConfigError(f"{where}: expected {typ.__name__}, got {value!r}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"{where}: {value!r} is not a finite number")
    from .data.embedded import OPTION_RANGES
    lo, hi, closed = OPTION_RANGES.get(key, (None, None, True))
    low_bad = lo is not None and (v < lo if closed else v <= lo)
    high_bad = hi is not None and (v > hi if closed else v >= hi)
    if low_bad or high_bad:
        rng = (f"[{lo}, {hi if hi is not None else 'inf'}]" if closed else
               f"({lo}, {hi if hi is not None else 'inf'})")
        raise ConfigError(f"{where}: {value!r} is out of range {rng}")
    return v


def _block_key(study_cfg: dict | None, scale: str, field: str, value) -> str:
    """``scales.<scale>.blocks[b].fixed|grid.<field>`` of the first block that sets ``value``."""
    for b, block in enumerate((study_cfg or {}).get("scales", {}).get(scale, {}).get("blocks", [])):
        if (block.get("fixed") or {}).get(field, None) == value:
            return f"scales.{scale}.blocks[{b}].fixed.{field}"
        if value in ((block.get("grid") or {}).get(field) or []):
            return f"scales.{scale}.blocks[{b}].grid.{field}"
    return f"scales.{scale}.blocks"


def _check_pruning(r: RunSpec, filename: str, scale: str, study_cfg: dict | None) -> None:
    """003 pruning fields: a known pruner; sparsity and rescaling only with a pruner."""
    def fail(field, value, msg):
        raise ConfigError(f"{filename}: key '{_block_key(study_cfg, scale, field, value)}': {msg}")
    if r.pruner and r.pruner not in KNOWN_PRUNERS:
        fail("pruner", r.pruner, f"unknown pruner '{r.pruner}' (known: {', '.join(KNOWN_PRUNERS)}; "
             "leave it out for a dense network)")
    if r.prune_scope not in KNOWN_PRUNE_SCOPES:
        fail("prune_scope", r.prune_scope, f"unknown prune_scope '{r.prune_scope}' "
             f"(known: {', '.join(KNOWN_PRUNE_SCOPES)})")
    if r.prune_rescale and ("resnet" in r.arch or "densenet" in r.arch):
        fail("prune_rescale", True, f"prune_rescale is for FFNN / CNN (003 Prop. 1); {r.arch} is "
             "residual and needs none (Prop. 3)")
    if not r.pruner:
        if r.sparsity > 0:
            fail("sparsity", r.sparsity, f"sparsity {r.sparsity} without a pruner (set 'pruner')")
        if r.prune_rescale:
            fail("prune_rescale", True, "prune_rescale without a pruner (set 'pruner')")


def shard_sizer(shard_size: int, memory_budget_mb: float):
    """``shard_size`` as given, or (0) a function choosing it from the memory budget."""
    if shard_size:
        return shard_size
    from . import sizing
    from .data import registry

    def size(run: RunSpec) -> int:
        spec = registry.get(run.dataset)
        n_out = spec.n_classes or 1
        return sizing.auto_shard_size(sizing.run_bytes(run, spec.input_shape, n_out),
                                      int(memory_budget_mb * 2 ** 20))
    return size


DEFAULT_MAX_RUNS = 100_000   # per study and scale; the largest shipped grid has 10,880


DEFAULT_SHARD_RESOURCES = {
    "init": {"mem_mb": 4000, "runtime": 30},
    "prune": {"mem_mb": 8000, "runtime": 60},
    "train": {"mem_mb": 8000, "runtime": 120},
    "measure": {"mem_mb": 8000, "runtime": 60},
}
"""What a shard job asks a scheduler for without a resources plan (runtime in minutes)."""


MAX_MEM_MB = 16 * 1024 ** 2
"""The largest memory request a resources plan may make (16 TiB), in MB."""
MAX_RUNTIME_MIN = 60 * 24 * 365
"""The longest runtime request (a year), in minutes."""


def check_scale_overrides(config: dict, sources="config") -> None:
    """Every key of ``scale_overrides`` names a configured study (a typo would silently run
    that study at the default scale)."""
    over = config.get("scale_overrides") or {}
    known = list(config.get("studies") or [])
    bad = [k for k in over if k not in known]
    if bad:
        raise ConfigError(f"{source_of(sources, ['scale_overrides'])}: key 'scale_overrides.{bad[0]}': no study {bad[0]!r} is "
                          f"configured (studies: {', '.join(known)})")


def load_resources(path: str | Path | None, studies: dict | None = None) -> dict:
    """The per-shard requests of a ``sigprop plan --resources`` file (``{}`` for None): stops,
    naming the file, when it is missing, not the plan's format, or plans none of a configured
    study's shards (a plan made for another config)."""
    if not path:
        return {}
    p = Path(path)
    where = f"resources_plan: {p}"
    if not p.exists():
        raise ConfigError(f"{where}: file not found (write it with `sigprop plan --config ... "
                          f"--resources {p}`)")
    try:
        data = json.loads(p.read_text())
        shards = data["shards"]
        assert isinstance(shards, dict)
    except (ValueError, KeyError, TypeError, AssertionError):
        raise ConfigError(f"{where}: not a resources plan (expected JSON with 'shards': "
                          "{study: {shard: {runtime, mem_mb}}})") from None
    limits = {"mem_mb": (1, MAX_MEM_MB), "gpu_mem_mb": (1, MAX_MEM_MB),
              "runtime": (1, MAX_RUNTIME_MIN)}
    for name, entries in shards.items():
        if not isinstance(entries, dict):
            raise ConfigError(f"{where}: key 'shards.{name}': expected a mapping of shard ids to "
                              "requests")
        for sid, req in entries.items():
            if not isinstance(req, dict):
                raise ConfigError(f"{where}: key 'shards.{name}.{sid}': expected "
                                  "{runtime, mem_mb}")
            for k, v in req.items():
                if k not in limits:
                    raise ConfigError(f"{where}: key 'shards.{name}.{sid}.{k}': unknown request "
                                      f"(known: {', '.join(limits)})")
                lo, hi = limits[k]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                    raise ConfigError(f"{where}: key 'shards.{name}.{sid}.{k}': {str(v)[:40]!r} "
                                      f"is not a number from {lo} to {hi:,}")
    for name, study in (studies or {}).items():
        have = shards.get(name, {})
        missing = [s.shard_id for s in study.shards if s.shard_id not in have]
        if missing:
            raise ConfigError(f"{where}: plans no requests for {len(missing)} of study {name}'s "
                              f"{len(study.shards)} shards (e.g. {missing[0]}); the plan was made "
                              "for another config: rerun `sigprop plan --resources` with this "
                              "one")
    return shards


def shard_request(plan: dict, study: str, shard: str, stage: str, name: str, attempt: int,
                  floor_mb: float | None = None, local: bool = False) -> int:
    """What a shard job of ``stage`` asks for (``mem_mb`` or ``runtime``) at ``attempt``.

    On a scheduler: the plan's value for train and measure jobs (memory also for init and
    prune, whose time is the default's), else :data:`DEFAULT_SHARD_RESOURCES`; memory never
    below the shard's floor (``floor_mb``, :func:`sigprop.plan.shard_floor_mb`) plus
    :data:`sigprop.sizing.HOST_BASE_MB`. In a ``local`` run, memory is the floor itself (all
    jobs share one process, and Snakemake runs side by side only jobs whose requests fit in the
    run's ``mem_mb``). Times the attempt."""
    if name == "mem_mb" and local:
        return max(1, math.ceil(floor_mb or 0)) * attempt
    default = DEFAULT_SHARD_RESOURCES[stage][name]
    planned = (plan.get(study) or {}).get(shard) or {}
    use_plan = name in planned and (name == "mem_mb" or stage in ("train", "measure"))
    value = planned[name] if use_plan else default
    if name == "mem_mb" and floor_mb is not None:
        from .sizing import HOST_BASE_MB
        value = max(value, math.ceil(floor_mb) + HOST_BASE_MB)
    return int(value * attempt)


def build_study(name: str, path: str | Path, study_cfg: dict, scale: str, shard_size,
                memory_budget_mb: float = 8000, data_options: dict | None = None,
                max_runs: int | None = DEFAULT_MAX_RUNS, smoke: bool = False,
                computed=()) -> Study:
    """A study's runs, shards, block labels and typed parameters, checked (:func:`check_kind`,
    :func:`check_finite`, :func:`expand_blocks`, :func:`check_runs`,
    :func:`sigprop.registry.resolve`; ``data_options`` is the config's ``data.options``,
    ``max_runs`` its limit on the runs of one study); ``smoke``: reduced for the smoke run
    (:func:`sigprop.smoke.smoke_pairs`); ``computed``: the study's shards already computed,
    kept when the grid grows (:func:`sigprop.runs.make_shards`)."""
    path = str(path)
    if study_cfg.get("name") != name:
        raise ConfigError(f"{path}: key 'name': '{study_cfg.get('name')}' does not match the file "
                          f"name '{name}'")
    check_finite(study_cfg, path)
    check_kind(study_cfg, path)
    try:
        params = registry.resolve(study_cfg["kind"], study_cfg, scale)
    except ParamError as e:
        raise ConfigError(f"{path}: {e}") from None
    pairs = expand_blocks(study_cfg, scale, path, max_runs)
    if smoke:
        from .smoke import smoke_pairs
        pairs = smoke_pairs(pairs)
    labels = run_labels(pairs, path, scale)
    runs = [r for r, _ in pairs]
    check_runs(runs, path, scale, study_cfg, data_options)
    check = registry.spec(study_cfg["kind"]).check
    if check is not None:
        try:
            check(params, set(labels.values()))
        except ParamError as e:
            raise ConfigError(f"{path}: {e}") from None
    size = study_cfg["scales"][scale].get("shard_size", shard_size)
    shards = make_shards(name, runs, shard_sizer(size, memory_budget_mb), computed)
    return Study(name, path, {**study_cfg, "scale": scale}, scale, tuple(runs), tuple(shards),
                 labels, params, smoke=bool(smoke))


def snakemake_validator(schemas: str | Path):
    """The ``validate`` of :func:`load_run` for the Snakefile: Snakemake's schema check of a
    schema file in ``schemas`` (it fills the schema's defaults), a :class:`ConfigError` naming
    the file or ``--config`` the offending key came from."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    def check(obj, schema_file: str, where) -> None:
        try:
            validate(obj, str(Path(schemas) / schema_file))
        except WorkflowError as e:
            raise ConfigError(explain(e, where)) from None
    return check


def load_run(config: dict, sources: ConfigSources, validate, results: str | Path | None = None
             ) -> dict:
    """Check the run's config in place as the workflow does before building any job, then
    build its studies: ``{name: Study}``.  The one loader of the Snakefile and ``sigprop plan``.

    In order: the size bound (before validation, which would expand YAML aliases), the schema
    (``validate(obj, schema_file_name, where)``, which fills the schema's defaults and raises a
    :class:`ConfigError` naming ``where``: the Snakefile passes Snakemake's ``validate``, the plan
    ``jsonschema``), finite numbers, the data options (typed, in range, coerced), the scale
    overrides, then each study file against the study schema and :func:`build_study`.
    ``results``: the results folder whose computed shards each study keeps
    (:func:`sigprop.tables.computed_shards`); none, the grid's own sharding."""
    from .tables import computed_shards
    check_size(config, sources.files)
    validate(config, "config.schema.yaml", sources)
    check_finite(config, sources)
    config["data"]["options"] = check_data_options(config["data"]["options"], sources)
    check_scale_overrides(config, sources)
    studies = {}
    for name in config["studies"]:
        path = Path(config["studies_dir"]) / f"{name}.yaml"   # relative to the working directory
        cfg = load_yaml(path)
        validate(cfg, "study.schema.yaml", str(path))
        scale = (config.get("scale_overrides") or {}).get(name, config["scale"])
        studies[name] = build_study(name, path, cfg, scale, config["shard_size"],
                                    config["memory_budget_mb"],
                                    data_options=config["data"]["options"],
                                    max_runs=config["max_runs"], smoke=bool(config.get("smoke")),
                                    computed=computed_shards(results, name) if results else ())
    return studies
