"""A study built for the workflow: its runs, shards, block labels and typed parameters, and
:func:`load_run`, the one loader of the Snakefile and ``sigprop plan``.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from pathlib import Path

from sigprop import registry
from sigprop.contract import JOB_SECTIONS, Params, base_scales
from sigprop.params import ParamError, execution_values, without_execution
from sigprop.runs import RunSpec, Shard, make_shards, runs_digest

from .data_options import check_data_options
from .files import ConfigError, ConfigSources, check_finite, check_size, load_yaml, source_of
from .grid import block_datasets, check_kind, check_runs, expand_blocks, kind_of, run_labels
from .ladder import ladder_of


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
    smoke: bool = False  # a smoke run (sigprop.config.smoke): a few models per block, a few steps

    @property
    def kind(self) -> str:
        return kind_of(self.cfg)

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
        p = dataclasses.replace(
            p, **{s: without_execution(getattr(p, s)) for s in JOB_SECTIONS[job]}
        )
        if job == "measure" and registry.spec(self.kind).measure_reads_labels:
            if shard_id is None:
                raise ValueError(f"study {self.name}: the measure job's labels need its shard")
            p = dataclasses.replace(
                p, labels=tuple(self.labels[r.run_id] for r in self.shard(shard_id).runs)
            )
        return p.to_json()

    def execution_json(self, job: str) -> str:
        """The execution-only parameters of ``job``'s sections (``param(..., execution=True)``:
        batch and chunk sizes), as JSON ``{section: {key: value}}``: the rule passes them
        outside its params, so changing one reruns no job (:meth:`job_params` holds them at
        their defaults)."""
        out = {s: execution_values(getattr(self.params, s)) for s in JOB_SECTIONS[job]}
        return json.dumps({s: v for s, v in out.items() if v}, sort_keys=True)

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
        from sigprop.claims import design_changes
        from sigprop.claims.reading import pairs, pairs_of

        d = self.cfg.get("design") or {}
        out = {
            "fixed": str(d.get("fixed", "")),
            "scale": self.scale,
            "changes": design_changes(d, self.scale),
            "regime": self.regime,
            "depends_on": pairs(self.cfg.get("depends_on")),
            "tolerance_sources": pairs_of(self.cfg.get("tolerance_sources")),
            "corroborations": pairs_of(self.cfg.get("corroborations")),
            "paper": str(self.cfg.get("paper", "")),
        }
        if self.smoke:
            out["smoke"] = True  # every verdict 'smoke' (sigprop.config.smoke.smoke_verdicts)
        return json.dumps(out, sort_keys=True, default=str)

    def summary_info(self) -> dict:
        """What a referee's summary says of the study (:mod:`sigprop.claims.summary`): its
        scale, data, the scale's description of what differs from the paper and its regime by
        axis, the design's date and changes, and the claims it marks fragile (a verdict that a
        change of training arithmetic alone flipped)."""
        from sigprop.claims import design_changes
        from sigprop.claims.reading import pairs, pairs_of

        d = self.cfg.get("design") or {}
        desc = ((self.cfg.get("scales") or {}).get(self.scale) or {}).get("description", "")
        return {
            "title": self.cfg.get("title", self.name),
            "kind": self.kind,
            "scale": f"{self.scale} (smoke run)" if self.smoke else self.scale,
            "datasets": self.datasets,
            "description": str(desc).strip(),
            "regime": self.regime,
            "paper_regime": dict(
                ((self.cfg.get("scales") or {}).get("paper") or {}).get("regime") or {}
            ),
            "paper_datasets": block_datasets(self.cfg, "paper"),
            "depends_on": pairs(self.cfg.get("depends_on")),
            "tolerance_sources": pairs_of(self.cfg.get("tolerance_sources")),
            "corroborations": pairs_of(self.cfg.get("corroborations")),
            "fixed": str(d.get("fixed", "")),
            "changes": [
                {"date": str(c.get("date", "")), "what": str(c.get("what", ""))}
                for c in design_changes(d, self.scale)
            ],
            "fragile": [
                {
                    "date": str(f.get("date", "")),
                    "claims": [str(c) for c in f["claims"]],
                    "proposal": str(f.get("proposal", "")),
                }
                for f in d.get("fragile") or []
                if f.get("scale", self.scale) in (*base_scales(self.scale), "both")
            ],
        }

    def manifest(self) -> str:
        """What the merge of the study's shard tables expects, as JSON: per shard, its runs and
        each run's block label (the ``block`` column of the merged table)."""
        return json.dumps(
            {
                "study": self.name,
                "rule": f"{self.task}_shard",
                "shards": {
                    s.shard_id: [[r.run_id, self.labels[r.run_id]] for r in s.runs]
                    for s in self.shards
                },
            },
            sort_keys=True,
        )

    def expect(self) -> str:
        """What a reader of the study's merged run table checks it holds, as JSON: the study and
        the digest of its run ids (:func:`sigprop.tables.check_runs_table`)."""
        return json.dumps(
            {"study": self.name, "n_runs": len(self.labels), "runs": runs_digest(self.labels)},
            sort_keys=True,
        )


def shard_sizer(shard_size: int, memory_budget_mb: float):
    """``shard_size`` as given, or (0) a function choosing it from the memory budget."""
    if shard_size:
        return shard_size
    from sigprop import sizing
    from sigprop.data import catalog

    def size(run: RunSpec) -> int:
        spec = catalog.get(run.dataset)
        n_out = spec.n_classes or 1
        return sizing.auto_shard_size(
            sizing.run_bytes(run, spec.input_shape, n_out), int(memory_budget_mb * 2**20)
        )

    return size


DEFAULT_MAX_RUNS = 100_000  # per study and scale; the largest shipped grid has 10,880


def check_scale_overrides(config: dict, sources="config") -> None:
    """Every key of ``scale_overrides`` names a configured study (a typo would silently run
    that study at the default scale)."""
    over = config.get("scale_overrides") or {}
    known = list(config.get("studies") or [])
    bad = [k for k in over if k not in known]
    if bad:
        raise ConfigError(
            f"{source_of(sources, ['scale_overrides'])}: key 'scale_overrides.{bad[0]}': no study {bad[0]!r} is "
            f"configured (studies: {', '.join(known)})"
        )


def build_study(
    name: str,
    path: str | Path,
    study_cfg: dict,
    scale: str,
    shard_size,
    memory_budget_mb: float = 8000,
    data_options: dict | None = None,
    max_runs: int | None = DEFAULT_MAX_RUNS,
    smoke: bool = False,
    computed=(),
) -> Study:
    """A study's runs, shards, block labels and typed parameters, checked (:func:`check_kind`,
    :func:`check_finite`, :func:`expand_blocks`, :func:`check_runs`,
    :func:`sigprop.registry.resolve`; ``data_options`` is the config's ``data.options``,
    ``max_runs`` its limit on the runs of one study); ``smoke``: reduced for the smoke run
    (:func:`sigprop.config.smoke.smoke_pairs`); ``computed``: the study's shards already computed,
    kept when the grid grows (:func:`sigprop.runs.make_shards`)."""
    path = str(path)
    if study_cfg.get("name") != name:
        raise ConfigError(
            f"{path}: key 'name': '{study_cfg.get('name')}' does not match the file name '{name}'"
        )
    check_finite(study_cfg, path)
    check_kind(study_cfg, path)
    ladder_of(study_cfg, path)
    try:
        params = registry.resolve(kind_of(study_cfg), study_cfg, scale, smoke=bool(smoke))
    except ParamError as e:
        raise ConfigError(f"{path}: {e}") from None
    pairs = expand_blocks(study_cfg, scale, path, max_runs)
    if smoke:
        from sigprop.config.smoke import smoke_pairs

        pairs = smoke_pairs(pairs)
    labels = run_labels(pairs, path, scale)
    runs = [r for r, _ in pairs]
    check_runs(runs, path, scale, study_cfg, data_options)
    check = registry.spec(kind_of(study_cfg)).check
    if check is not None:
        try:
            check(params, set(labels.values()))
        except ParamError as e:
            raise ConfigError(f"{path}: {e}") from None
    size = study_cfg["scales"][scale].get("shard_size", shard_size)
    shards = make_shards(name, runs, shard_sizer(size, memory_budget_mb), computed)
    return Study(
        name,
        path,
        {**study_cfg, "scale": scale},
        scale,
        tuple(runs),
        tuple(shards),
        labels,
        params,
        smoke=bool(smoke),
    )


def study_path(studies_dir: str | Path, name: str) -> Path:
    """Study ``name``'s file: ``<studies_dir>/<name>.yaml`` (relative to the working directory)
    when it exists, else the ``study.yaml`` kept in the package of a study found outside
    sigprop (:func:`sigprop.registry.study_file`); the first path when neither exists, so that
    reading it names the file the config asks for."""
    path = Path(studies_dir) / f"{name}.yaml"
    if not path.exists() and name in registry.kinds():
        return registry.study_file(name) or path
    return path


def load_run(
    config: dict, sources: ConfigSources, validate, results: str | Path | None = None
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
    from sigprop.tables import computed_shards

    check_size(config, sources.files)
    validate(config, "config.schema.yaml", sources)
    check_finite(config, sources)
    config["data"]["options"] = check_data_options(config["data"]["options"], sources)
    check_scale_overrides(config, sources)
    studies = {}
    for name in config["studies"]:
        path = study_path(config["studies_dir"], name)
        cfg = load_yaml(path)
        validate(cfg, "study.schema.yaml", str(path))
        scale = (config.get("scale_overrides") or {}).get(name, config["scale"])
        studies[name] = build_study(
            name,
            path,
            cfg,
            scale,
            config["shard_size"],
            config["memory_budget_mb"],
            data_options=config["data"]["options"],
            max_runs=config["max_runs"],
            smoke=bool(config.get("smoke")),
            computed=computed_shards(results, name) if results else (),
        )
    return studies
