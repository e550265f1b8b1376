"""A study's grid blocks expanded into runs (fixed fields times the product of the grid lists,
derived fields), and the checks a schema cannot express: known data sets, activations,
architectures, pruners; consistent shapes.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132; 003 = Hayou, Ton,
Doucet, Teh (2021), arXiv:2002.08797; 004 = Chen, Wang, Zhao, Papailiopoulos, Koutris (2018),
arXiv:1806.03791.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from sigprop import registry
from sigprop.data.sizes import train_size, width_for_params
from sigprop.runs import MIXED_BATCH_ARCHS, RunSpec

from .files import ConfigError

# names of sigprop.nets.families.FAMILIES, kept here so parsing a config needs no torch
KNOWN_ARCHS = (
    "fc",
    "resnet_fc",
    "stable_resnet_fc",
    "densenet_fc",
    "resnet18",
    "resnet34",
    "resnet32",
    "resnet50",
    "resnet104",
    "stable_resnet32",
    "stable_resnet50",
    "stable_resnet104",
    "vgg16",
    "vgg16x3",
    "vcnn",
    "lenet",
    "fc_loop",
)


# the convolutional ones (sigprop.nets.convnets.families): they need image data (C, H, W)
IMAGE_ARCHS = (
    "resnet18",
    "resnet34",
    "resnet32",
    "resnet50",
    "resnet104",
    "stable_resnet32",
    "stable_resnet50",
    "stable_resnet104",
    "vgg16",
    "vgg16x3",
    "vcnn",
    "lenet",
)


# names of sigprop.nets.activations.ACTIVATIONS, kept here so parsing a config needs no torch
KNOWN_ACTIVATIONS = ("linear", "tanh", "relu", "hard_tanh", "erf", "sigmoid", "elu")


# names of sigprop.prune.PRUNERS (003 pruning at initialization), kept here so parsing needs no torch
KNOWN_PRUNERS = ("random", "magnitude", "snip", "grasp", "synflow", "sbp_sr")


# scopes of sigprop.prune.compute_masks: one threshold over the network, or one per layer
KNOWN_PRUNE_SCOPES = ("global", "layerwise")


def block_datasets(study_cfg: dict, scale: str) -> list[str]:
    """The data sets a scale's blocks name (``fixed`` or ``grid``), without expanding them."""
    out = set()
    for b in ((study_cfg.get("scales") or {}).get(scale) or {}).get("blocks") or []:
        d = (b.get("fixed") or {}).get("dataset")
        if d:
            out.add(str(d))
        out.update(str(x) for x in (b.get("grid") or {}).get("dataset") or [])
    return sorted(out)


def expand_runs(
    study_cfg: dict, scale: str, filename: str = "<study>", max_runs: int | None = None
) -> list[RunSpec]:
    """The runs of one scale: for each block, fixed fields times the grid product."""
    return [r for r, _ in expand_blocks(study_cfg, scale, filename, max_runs)]


def count_runs(study_cfg: dict, scale: str) -> int:
    """Runs a scale's grid makes (the sum over blocks of the product of the grid lists), known
    without expanding it."""
    n = 0
    for block in ((study_cfg.get("scales") or {}).get(scale) or {}).get("blocks") or []:
        n += math.prod(
            len(v) if isinstance(v, list) else 1 for v in (block.get("grid") or {}).values()
        )
    return n


def expand_blocks(
    study_cfg: dict, scale: str, filename: str = "<study>", max_runs: int | None = None
) -> list[tuple[RunSpec, str]]:
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
        raise ConfigError(
            f"{filename}: key 'scales.{scale}.blocks': the grid makes {n:,} runs, "
            f"more than max_runs = {max_runs:,} (a key of the run's config); nothing was "
            "expanded. Shrink the grid, or raise max_runs if you mean it"
        )
    out = []
    for b, block in enumerate(blocks):
        where = f"scales.{scale}.blocks[{b}]"
        label = block.get("label", f"block {b}")
        grid = block["grid"]
        fixed = {
            k: _field(k, v, filename, f"{where}.fixed.{k}")
            for k, v in (block.get("fixed") or {}).items()
        }
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
                    raise ConfigError(
                        f"{filename}: key '{where}.grid.{k}': {v!r} is listed twice "
                        f"({len(vals)} values, {len(set(vals))} distinct); each "
                        "value makes its runs once"
                    )
                seen.add(v)
            values[k] = vals
        derived = dict(block.get("derived") or {})
        clash = sorted(set(derived) & (set(fixed) | set(grid)))
        if clash:
            raise ConfigError(
                f"{filename}: key '{where}.derived': {clash} also set in 'fixed' or 'grid'"
            )
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
    from sigprop.runs import FIELD_TYPES, coerce_value

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


def run_labels(
    pairs: list[tuple[RunSpec, str]], filename: str = "<study>", scale: str = "quick"
) -> dict[str, str]:
    """``run_id -> label`` from :func:`expand_blocks`; a run made twice (by two blocks, or
    twice by one) is an error naming the blocks."""
    out: dict[str, str] = {}
    for r, label in pairs:
        rid = r.run_id
        if rid in out:
            raise ConfigError(
                f"{filename}: key 'scales.{scale}.blocks': run {rid} is made by the "
                f"blocks '{out[rid]}' and '{label}' (the same fields twice): "
                "keep it in one block"
            )
        out[rid] = label
    return out


@functools.lru_cache(maxsize=4096)
def _chi1_line(chi1: float, sigma_b2: float, keep_rate: float, activation: str) -> float:
    """σ_w² on the line χ1 = ``chi1`` (:func:`sigprop.theory.meanfield.sigma_w2_for_chi1`), solved
    once per distinct setting: a grid repeats each one for every seed and depth."""
    from sigprop.theory import meanfield

    return float(meanfield.sigma_w2_for_chi1(chi1, sigma_b2, keep_rate, activation))


def _q_star_point(q_star: float, derived: dict, run: dict, defaults) -> dict:
    """``{sigma_w2, sigma_b2}`` of a ``sigma_b2: {q_star: v}`` rule (see :func:`derive`)."""
    from sigprop.theory import meanfield

    rho = float(run.get("keep_rate", defaults.keep_rate))
    act = str(run.get("activation", defaults.activation))
    chi1 = (derived.get("sigma_w2") or {}).get("chi1")
    if chi1 is not None:
        sw, sb = meanfield.point_for_q_star(q_star, rho, act, chi1_target=float(chi1))
    else:
        sw, sb = meanfield.point_for_q_star(
            q_star, rho, act, sigma_w2=float(run.get("sigma_w2", defaults.sigma_w2))
        )
    return {"sigma_w2": float(sw), "sigma_b2": float(sb)}


def derive(run: dict, derived: dict) -> dict:
    """Run fields computed from the others (a block's ``derived:`` mapping).

    - ``sigma_w2: {chi1: v}``: σ_w² on the line χ1 = v for the run's activation,
      σ_b² and keep rate (000 Eq. 10; v = 1 is the critical line of 000 §5.1 and
      Fig. 6), solved by :func:`sigprop.theory.meanfield.sigma_w2_for_chi1`;
    - ``sigma_b2: {q_star: v}``: σ_b² whose length fixed point (000 Eq. 2) is q* = v; with
      ``sigma_w2: {chi1: c}`` in the same mapping both are solved together, the point of the
      line χ1 = c with that q* (c = 1: the critical point of 000 §5.1 with a chosen q*), else
      at the run's σ_w² (:func:`sigprop.theory.meanfield.point_for_q_star`);
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
        ((how, v),) = spec.items()
        q_star = (derived.get("sigma_b2") or {}).get("q_star")
        if (
            field in ("sigma_w2", "sigma_b2")
            and q_star is not None
            and (field == "sigma_b2" or how == "chi1")
        ):
            x = _q_star_point(float(q_star), derived, run, defaults)[field]
            if not np.isfinite(x):
                raise ValueError(
                    f"derived sigma_b2: no sigma_b2 >= 0 gives q* = {q_star} for "
                    f"{run} (derived {derived})"
                )
        elif field == "sigma_w2" and how == "chi1":
            x = _chi1_line(
                float(v),
                float(run.get("sigma_b2", defaults.sigma_b2)),
                float(run.get("keep_rate", defaults.keep_rate)),
                str(run.get("activation", defaults.activation)),
            )
            if not np.isfinite(x):
                raise ValueError(f"derived sigma_w2: no sigma_w2 gives chi1 = {v} for {run}")
        elif field == "lr" and how == "per_depth":
            x = float(v) / run.get("depth", defaults.depth)
        elif field == "width" and how == "params":
            out[field] = width_for_params(
                float(v),
                run.get("depth", defaults.depth),
                run.get("dataset", defaults.dataset),
                run.get("arch", defaults.arch),
            )
            continue
        elif field == "head_width" and how == "params":
            out[field] = width_for_params(
                float(v),
                run.get("head_depth", defaults.head_depth),
                run.get("dataset", defaults.dataset),
                run.get("arch", defaults.arch),
                run.get("width", defaults.width),
            )
            continue
        elif field in ("steps", "eval_every") and how == "epochs":
            out[field] = steps_for_epochs(float(v), run, defaults)
            continue
        else:
            raise ValueError(
                f"derived {field}: unknown rule '{how}' (known: sigma_w2: {{chi1: v}}, "
                "sigma_b2: {q_star: v}, lr: {per_depth: c}, width/head_width: {params: p}, steps/eval_every: {epochs: E})"
            )
        out[field] = float(f"{float(x):.10g}")
    return out


def check_runs(
    runs: list[RunSpec],
    filename: str,
    scale: str,
    study_cfg: dict | None = None,
    data_options: dict | None = None,
) -> None:
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
    from sigprop.data import catalog

    trains = _trains(study_cfg)
    sizes: dict[str, int | None] = {}
    for r in runs:

        def fail(field, msg, r=r):
            raise ConfigError(
                f"{filename}: key '{_block_key(study_cfg, scale, field, getattr(r, field))}': {msg}"
            )

        _check_pruning(r, filename, scale, study_cfg)
        if r.arch not in KNOWN_ARCHS:
            fail("arch", f"unknown arch '{r.arch}' (known: {', '.join(KNOWN_ARCHS)})")
        if r.activation not in KNOWN_ACTIVATIONS:
            fail(
                "activation",
                f"unknown activation '{r.activation}' (known: {', '.join(KNOWN_ACTIVATIONS)})",
            )
        if r.dataset not in catalog.DATASETS:
            fail(
                "dataset",
                f"unknown dataset '{r.dataset}' (known: {', '.join(sorted(catalog.DATASETS))})",
            )
        shape = catalog.get(r.dataset).input_shape
        if r.arch in IMAGE_ARCHS and len(shape) != 3:
            fail(
                "arch",
                f"arch '{r.arch}' is convolutional and needs image inputs (C, H, W), but "
                f"dataset '{r.dataset}' has inputs of shape {tuple(shape)} (use an image "
                "data set such as digits_images, or a fully connected arch)",
            )
        if r.eval_every > r.steps:
            fail("eval_every", f"eval_every ({r.eval_every}) exceeds steps ({r.steps})")
        if r.micro_batch and r.batch_size % r.micro_batch:
            fail(
                "micro_batch",
                f"batch_size {r.batch_size} is not a multiple of micro_batch {r.micro_batch}",
            )
        if r.micro_batch and r.arch not in MIXED_BATCH_ARCHS:
            fail(
                "micro_batch",
                f"arch '{r.arch}' has BatchNorm, whose statistics a micro-batch "
                f"would change: set micro_batch 0 (micro-batching families: "
                f"{', '.join(MIXED_BATCH_ARCHS)})",
            )
        if trains:
            if r.dataset not in sizes:
                sizes[r.dataset] = train_size(r.dataset, (data_options or {}).get(r.dataset))
            n = sizes[r.dataset]
            if n is not None and r.batch_size > n:
                fail(
                    "batch_size",
                    f"batch_size {r.batch_size} exceeds the {n} training examples "
                    f"of dataset '{r.dataset}'",
                )


def kind_of(study_cfg: dict) -> str | None:
    """The study package a study file runs: its ``kind`` where it names one (a second study file
    of the same package under another name), else the study's ``name``."""
    return study_cfg.get("kind") or study_cfg.get("name")


def _trains(study_cfg: dict | None) -> bool:
    """Whether a study's shard jobs train (task "train"); True without a study config."""
    if not study_cfg or kind_of(study_cfg) not in registry.kinds():
        return True
    return registry.task(kind_of(study_cfg)) == "train"


def check_kind(study_cfg: dict, filename: str) -> None:
    """The study package the file runs (:func:`kind_of`) is one :func:`sigprop.registry.kinds`
    finds."""
    kind = kind_of(study_cfg)
    if kind not in registry.kinds():
        key = "kind" if study_cfg.get("kind") else "name"
        raise ConfigError(
            f"{filename}: key '{key}': no study package '{kind}' "
            f"(known: {', '.join(registry.kinds())}; a study is a package "
            "sigprop/studies/<name>/ or an installed one, see docs/adding-a-study.md)"
        )


def steps_for_epochs(epochs: float, run: dict, defaults: RunSpec) -> int:
    """Steps for ``epochs`` passes over the training split (see :func:`derive`)."""
    name = run.get("dataset", defaults.dataset)
    n = train_size(name)
    if n is None:
        raise ValueError(
            f"derived steps: the training-set size of data set '{name}' is not "
            "known before it is built"
        )
    per = run.get("micro_batch", defaults.micro_batch) or run.get("batch_size", defaults.batch_size)
    if per > n:
        raise ValueError(
            f"derived steps: {per} examples per step exceed the {n} training examples of '{name}'"
        )
    return max(1, int(round(epochs * (n // per))))


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
        fail(
            "pruner",
            r.pruner,
            f"unknown pruner '{r.pruner}' (known: {', '.join(KNOWN_PRUNERS)}; "
            "leave it out for a dense network)",
        )
    if r.prune_scope not in KNOWN_PRUNE_SCOPES:
        fail(
            "prune_scope",
            r.prune_scope,
            f"unknown prune_scope '{r.prune_scope}' (known: {', '.join(KNOWN_PRUNE_SCOPES)})",
        )
    if r.prune_rescale and ("resnet" in r.arch or "densenet" in r.arch):
        fail(
            "prune_rescale",
            True,
            f"prune_rescale is for FFNN / CNN (003 Prop. 1); {r.arch} is "
            "residual and needs none (Prop. 3)",
        )
    if not r.pruner:
        if r.sparsity > 0:
            fail("sparsity", r.sparsity, f"sparsity {r.sparsity} without a pruner (set 'pruner')")
        if r.prune_rescale:
            fail("prune_rescale", True, "prune_rescale without a pruner (set 'pruner')")
