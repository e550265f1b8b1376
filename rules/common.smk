# Helpers shared by the rules: which files each study needs.

from sigprop import registry as studies
from sigprop.data import catalog
from sigprop.steps.jobs import run_job  # run: blocks call one package function through it


wildcard_constraints:
    study="|".join(STUDIES) or "NONE",
    shard="s[0-9a-f]{12}",
    dataset="[a-z0-9_]+",
    paper="[0-9]{3}",
    table="[a-z0-9_]+",


def study_of(wildcards):
    return STUDIES[wildcards.study]


def shard_floor(study, shard):
    """The least memory (MB) of a shard's jobs: parameters, gradients, data (sigprop.tools.plan)."""
    from sigprop.tools.plan import shard_floor_mb

    key = (study, shard)
    if key not in _FLOORS:
        _FLOORS[key] = shard_floor_mb(
            STUDIES[study], STUDIES[study].shard(shard), config["data"]["options"]
        )
    return _FLOORS[key]


_FLOORS = {}


def shard_resource(stage, name):
    """A shard job's ``mem_mb`` or ``runtime`` (minutes): on a scheduler from the config's
    resources_plan when it has one, else the fixed default, memory never below the shard's
    floor; in a local run (LOCAL_MEMORY set) memory is the floor; times the attempt, so that
    retries grow it (sigprop.config.shard_request)."""
    from sigprop.config import shard_request

    def request(wildcards, attempt):
        floor = shard_floor(wildcards.study, wildcards.shard) if name == "mem_mb" else None
        return shard_request(
            SHARD_RESOURCES,
            wildcards.study,
            wildcards.shard,
            stage,
            name,
            attempt,
            floor_mb=floor,
            local=LOCAL_MEMORY is not None,
        )

    return request


def light_memory(wildcards, input):
    """A light job's mem_mb from its inputs' size (sigprop.sizing.light_job_mb), at most the
    run's memory in a local run, so that Snakemake's memory limit keeps large ones apart."""
    from sigprop.sizing import light_job_mb

    return light_job_mb(input.size_mb, LOCAL_MEMORY[0] if LOCAL_MEMORY is not None else None)


def shard_json(wildcards):
    return study_of(wildcards).shard(wildcards.shard).to_json()


def shard_dataset(wildcards):
    shard = study_of(wildcards).shard(wildcards.shard)
    return f"results/data/{shard.runs[0].dataset}.npz"


def data_expect(wildcards):
    """What a shard's prepared data set must be, as JSON (sigprop.data.prepare.IDENTITY): its
    name, the config's options and sizes for it, and the prepare step's code digest; the shard
    jobs refuse a file made as anything else (sigprop.steps.shards.expected_data)."""
    import json

    name = study_of(wildcards).shard(wildcards.shard).runs[0].dataset
    return json.dumps(
        {
            "name": name,
            "options": config["data"]["options"].get(name, {}),
            "sizes": config["data"]["sizes"].get(name, {}),
            "code": studies.step_code("prepare"),
        },
        sort_keys=True,
    )


GPU_LOCKS = "results/.gpu_locks"
"""Where local jobs with `device: auto` on a machine of several GPUs claim a free one (lock
files; sigprop.train.devices.acquire)."""
MASKS = "results/{study}/masks/{shard}.pt"
"""The prune stage's mask file of a shard (rules/prune.smk's output; its train and measure jobs'
input, passed to their steps)."""


def shard_masks(wildcards):
    """The prune stage's mask file of a shard with pruned runs (:data:`MASKS`), else none."""
    shard = study_of(wildcards).shard(wildcards.shard)
    return (
        {"masks": MASKS.format(study=wildcards.study, shard=wildcards.shard)}
        if shard.pruned
        else {}
    )


def train_inputs(wildcards):
    """A shard's initial weights and data set, plus its masks when it has pruned runs: a dense
    shard's training job has exactly the inputs it had before the prune stage existed."""
    return {
        "init": f"results/{wildcards.study}/init/{wildcards.shard}.pt",
        "data": shard_dataset(wildcards),
        **shard_masks(wildcards),
    }


def study_layer_reports(wildcards):
    """The prune stage's per-layer reports of a study's pruned shards (none for dense studies)."""
    st = study_of(wildcards)
    return [f"results/{st.name}/masks/{s.shard_id}_layers.parquet" for s in st.shards if s.pruned]


def study_tables(name):
    """Names of a study's own tables (``SPEC.tables``), built from its run table."""
    return list(studies.spec(STUDIES[name].kind).tables)


def shard_tables(wildcards):
    """Each shard's table: trained (runs/) or measured at initialization (measurements/)."""
    st = study_of(wildcards)
    folder = "measurements" if st.task == "measure" else "runs"
    return [f"results/{st.name}/{folder}/{s.shard_id}.parquet" for s in st.shards]


def job_params(job):
    """The parameter sections a study's ``job`` reads, as JSON (Study.job_params): the only
    study settings the job receives, so editing another section does not rerun it."""
    return lambda wildcards: study_of(wildcards).job_params(job, getattr(wildcards, "shard", None))


def run_settings(wildcards):
    """Distinct theory settings of a study's runs (sigprop.runs.settings)."""
    from sigprop.runs import settings

    study = study_of(wildcards)
    return settings(study.runs, studies.spec(study.kind).theory_fields)


def study_figures(name):
    return list(studies.spec(STUDIES[name].kind).figures)


def figure_caption(wildcards):
    from sigprop.figures import rst_literal_text

    return rst_literal_text(
        studies.spec(study_of(wildcards).kind).figures[wildcards.figure].caption
    )


def study_paper(name):
    return str(STUDIES[name].cfg["paper"])


def paper_studies(wildcards):
    """The configured studies of one paper (its config says ``paper: "<id>"``)."""
    return [n for n in STUDIES if study_paper(n) == wildcards.paper]


def paper_summary_info(wildcards):
    """Per study of the paper, what its referee's summary says of it, as JSON."""
    import json

    return json.dumps(
        {n: STUDIES[n].summary_info() for n in paper_studies(wildcards)}, sort_keys=True
    )


def paper_coverage(wildcards):
    """Which of the paper's studies in the config file(s) this run covers, as JSON
    (sigprop.papers.coverage_note): a run narrowed by --config studies=[...] marks the paper's
    outputs partial."""
    import json

    named = [n for n, p in PAPER_OF.items() if p == wildcards.paper]
    return json.dumps({"run": paper_studies(wildcards), "named": named})


def paper_claims(wildcards):
    return [f"results/{n}/claims.parquet" for n in paper_studies(wildcards)]


def paper_claim_pages(wildcards):
    return [f"results/{n}/claims.html" for n in paper_studies(wildcards)]


def paper_claim_expects(wildcards):
    """What each study's claims table must be stamped with, as JSON: its study, this run's
    scale and runs (a table of another scale or grid is refused by the paper's merge)."""
    import json

    out = {}
    for n in paper_studies(wildcards):
        st = STUDIES[n]
        out[n] = {
            "kind": "claims",
            "study": n,
            "scale": st.scale,
            "runs": json.loads(st.expect())["runs"],
            "smoke": bool(st.smoke),
        }
    return json.dumps(out, sort_keys=True)


def study_regime_json(wildcards):
    """The study's paper-scale regime and the axes its claims depend on, as JSON: how its
    committed paper-scale verdicts read (sigprop.publish.evidence.read_claims)."""
    import json

    info = study_of(wildcards).summary_info()
    return json.dumps(
        {k: info[k] for k in ("paper_regime", "depends_on", "tolerance_sources", "corroborations")},
        sort_keys=True,
    )


def paper_evidence(name):
    """The committed paper-scale ``name`` (claims.parquet or provenance.json) of the paper's
    studies that have verdicts under docs/evidence/paper-scale (sigprop.publish.evidence)."""

    def files(wildcards):
        return [
            f"{EVIDENCE}/{n}/{name}"
            for n in paper_studies(wildcards)
            if Path(f"{EVIDENCE}/{n}/claims.parquet").exists()
        ]

    return files


def paper_ladder(wildcards):
    """The committed ladder trends (docs/evidence/ladder/<study>/trend.parquet) of the paper's
    studies that have one (sigprop.publish.ladder)."""
    return [
        f"{LADDER}/{n}/trend.parquet"
        for n in paper_studies(wildcards)
        if Path(f"{LADDER}/{n}/trend.parquet").exists()
    ]


def committed_rungs(study):
    """The committed rung files (claims.parquet, provenance.json) of a study's ladder: inputs of
    the jobs that read its trend, which checks the trend against them
    (sigprop.claims.committed.verified_trend), so that a changed rung reruns those jobs."""
    return sorted(
        str(f)
        for f in Path(LADDER, study).glob("*/*")
        if f.name in ("claims.parquet", "provenance.json")
    )


def ladder_rungs(wildcards):
    return committed_rungs(wildcards.study)


def paper_ladder_rungs(wildcards):
    return [
        f
        for n in paper_studies(wildcards)
        if Path(f"{LADDER}/{n}/trend.parquet").exists()
        for f in committed_rungs(n)
    ]


def report_category(wildcards):
    """Report section of a study's outputs: its paper (sigprop.papers.title, with the papers
    that study packages outside sigprop declare)."""
    from sigprop.papers import title
    from sigprop.registry import declared_papers

    return title(study_paper(wildcards.study), declared_papers())


def paper_category(wildcards):
    from sigprop.papers import title
    from sigprop.registry import declared_papers

    return title(wildcards.paper, declared_papers())


def study_subcategory(wildcards):
    return STUDIES[wildcards.study].cfg.get("title", wildcards.study)


EVIDENCE = "docs/evidence/paper-scale"  # committed paper-scale claims (sigprop.publish.evidence)
LADDER = "docs/evidence/ladder"  # committed budget-ladder rungs and trends (sigprop.publish.ladder)
LADDER_TREND = f"{LADDER}/{{study}}/trend.parquet"
EVIDENCE_CLAIMS = f"{EVIDENCE}/{{study}}/claims.parquet"
EVIDENCE_PROVENANCE = f"{EVIDENCE}/{{study}}/provenance.json"


def _paper_table_names():
    from sigprop.papers import TABLES

    return "|".join(sorted({t for named in TABLES.values() for t in named})) or "NONE"


PAPER_TABLE_NAMES = _paper_table_names()
"""The names a paper table may have (rule paper_table's wildcard constraint)."""


def all_outputs():
    from sigprop.papers import TABLES

    out = []
    for name in STUDIES:
        if Path(f"{EVIDENCE}/{name}/claims.parquet").exists():
            out.append(f"results/{name}/scales.html")
        if Path(f"{LADDER}/{name}/trend.parquet").exists():
            out += [f"results/{name}/ladder.png", f"results/{name}/ladder.pdf"]
        for fig in study_figures(name):
            out += [f"results/{name}/figures/{fig}.png", f"results/{name}/figures/{fig}.pdf"]
        out += [f"results/{name}/claims.parquet", f"results/{name}/claims.html"]
        for table in study_tables(name):
            out += [f"results/{name}/tables/{table}.{ext}" for ext in ("parquet", "md", "csv")]
    for paper in sorted({study_paper(n) for n in STUDIES}):
        out += [
            f"results/papers/{paper}/claims.parquet",
            f"results/papers/{paper}/claims.html",
            f"results/papers/{paper}/front.html",
            f"results/papers/{paper}/verdicts.png",
        ]
        for table in TABLES.get(paper, {}):
            out += [f"results/papers/{paper}/{table}.md", f"results/papers/{paper}/{table}.csv"]
    return out


def code_of(step):
    """A param holding the digest of the code that makes the step's output for the job's study,
    or for a paper's jobs its studies (sigprop.registry.step_code): an edit of that code reruns
    the job, nothing else does."""

    def digest(wildcards):
        if hasattr(wildcards, "study"):
            kind = study_of(wildcards).kind
        elif hasattr(wildcards, "paper"):
            kind = tuple(sorted({STUDIES[n].kind for n in paper_studies(wildcards)}))
        else:
            kind = None
        return studies.step_code(step, kind)

    return digest


# -- data sets (rules/data.smk): a raw file's URL and pinned checksum


def raw_files(wildcards):
    spec = catalog.get(wildcards.dataset)
    return [f"results/raw/{spec.name}/{f.filename}" for f in spec.files]


def raw_sha256(wildcards):
    spec = catalog.get(wildcards.dataset)
    remote = {f.filename: f for f in spec.files}[wildcards.filename]
    return catalog.pinned_sha256(remote, config["data"]["sha256_overrides"], spec.name)


def raw_url(wildcards):
    spec = catalog.get(wildcards.dataset)
    return {f.filename: f.url for f in spec.files}[wildcards.filename]
