"""Paper-scale verdicts obtained on a CPU, published beside the quick ones.

Some studies need neither a GPU nor downloaded data at paper scale (measurements at
initialization on Gaussian or constructed inputs, ensemble simulations, theory checks).  They
are run here with ``snakemake --config 'scale_overrides={<study>: paper}'`` and their claims
tables are committed under ``docs/evidence/paper-scale/<study>/`` by :func:`publish`
(``sigprop evidence publish``):

* ``claims.parquet``: the study's claims table, as the workflow wrote it;
* ``claims.md``: the same rows, readable, each with how it reads at paper scale;
* ``provenance.json``: the commit (and whether the tree had uncommitted changes), date,
  machine, wall time of the run and the summed job time from the rules' benchmark files, the
  number of runs and the SHA-256 of their sorted run ids, and the claim ids.

:func:`check` (run by the tests) recomputes each study's paper-scale run ids from the config
today and compares them with the committed digest, so a config or code change that would
give other runs (and so stale verdicts) is noticed without rerunning anything.
:func:`sigprop.claims.committed.read_claims` reads a committed table against the study file's paper-scale regime, as the
referee summaries, the report's front page and ``docs/papers.md`` (``sigprop claims-doc``) show
it beside this run's verdicts; :func:`write_view` regenerates its readable ``claims.md``
(``sigprop evidence views``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import subprocess
from pathlib import Path

import pandas as pd

from sigprop import tables
from sigprop.claims.committed import OLD_COLUMNS, declared_regime, read_claims

EVIDENCE_DIR = Path("docs/evidence/paper-scale")
LIMIT_S = 3600.0          # what fits in 60 minutes on a 2-core CPU


def runs_digest(run_ids) -> str:
    """SHA-256 of the sorted, newline-joined run ids."""
    return hashlib.sha256("\n".join(sorted(run_ids)).encode()).hexdigest()


def paper_studies(config_path: str | Path = "config/config.yaml", names=None) -> dict:
    """The studies of the config at paper scale (smoke off), by name."""
    from sigprop.tools import plan
    from sigprop.config import load_yaml
    over = ["scale=paper", "smoke=false", "scale_overrides={}"]
    if names is not None:
        known = load_yaml(config_path)["studies"]
        over.append("studies=" + json.dumps([n for n in known if n in set(names)]))
    _, studies = plan.load(config_path, over)
    return studies


def needs_download(study) -> list[str]:
    """The downloaded data sets a study's runs read."""
    from sigprop.data import registry
    return sorted({r.dataset for r in study.runs
                   if registry.get(r.dataset).source == "download"})


def fits(plan_result: dict, studies: dict, limit_s: float = LIMIT_S) -> list[dict]:
    """Per study and block of a paper-scale plan: the projected CPU time (from the plan's
    calibrated rates), the data sets that need a download, and whether it fits ``limit_s``
    with no download.  A measure study's FLOPs are the plan's proxy, so its time is too."""
    out = []
    for b in plan_result["blocks"]:
        st = studies[b["study"]]
        labels = {r.run_id: lab for r, lab in ((r, st.labels[r.run_id]) for r in st.runs)}
        dl = sorted({r.dataset for r in st.runs if labels[r.run_id] == b["block"]}
                    & set(needs_download(st)))
        cpu_s = b["cpu_h_total"] * 3600
        out.append({"study": b["study"], "block": b["block"], "runs": b["runs"],
                    "shards": b["shards"], "cpu_s": cpu_s, "proxy": b["flops_proxy"],
                    "downloads": dl, "fits": (not dl) and cpu_s <= limit_s})
    return out


def git_output(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine() -> dict:
    """This machine in a few words: CPU model and cores, memory, OS, torch."""
    import torch
    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")),
                       "")
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30 \
        if hasattr(os, "sysconf") else float("nan")
    return {"cpu": cpu or platform.processor(), "cores": os.cpu_count(),
            "memory_gib": round(mem, 1), "os": platform.platform(), "python":
            platform.python_version(), "torch": torch.__version__, "gpu": None}


def job_seconds(results: Path, study: str) -> float:
    """Summed wall time of the study's jobs from the rules' benchmark files."""
    total = 0.0
    for f in (results / "benchmarks" / study).rglob("*.tsv"):
        df = pd.read_csv(f, sep="\t")
        total += float(df["s"].iloc[-1])
    return total


def checked_claims(results: Path, st, scale: str, command: str) -> Path:
    """``results/<study>/claims.parquet`` of a run of study ``st`` at ``scale``, after checking
    that it and the merged run table exist (else the error names ``command``), that the run
    table's run ids are exactly the study's at that scale under today's config, and that the
    claims table is stamped with that scale."""
    study = st.name
    claims_path = results / study / "claims.parquet"
    metrics_path = results / study / "metrics.parquet"
    for p in (claims_path, metrics_path):
        if not p.exists():
            raise FileNotFoundError(f"{p}: run the study at {scale} scale first ({command})")
    want = {r.run_id for r in st.runs}
    got = set(pd.read_parquet(metrics_path, columns=["run_id"]).run_id.unique())
    if got != want:
        raise ValueError(f"{metrics_path}: {len(got)} run ids, of which {len(got & want)} are "
                         f"among the {len(want)} runs of {study} at {scale} scale today: not a "
                         f"{scale}-scale run of this config")
    stamp = tables.stamp_of(claims_path)
    if stamp is not None and stamp.get("scale") != scale:
        raise ValueError(f"{claims_path}: a claims table of scale {stamp.get('scale')!r}, not a "
                         f"{scale}-scale run's")
    return claims_path


def publish(study: str, results: str | Path = "results", out: str | Path = EVIDENCE_DIR,
            config_path: str | Path = "config/config.yaml", wall_s: float | None = None,
            command: str = "", note: str = "") -> Path:
    """Copy ``results/<study>/claims.parquet`` of a paper-scale run to ``out/<study>/`` with
    ``claims.md`` and ``provenance.json``.  Refused unless the results' run ids are exactly
    the study's paper-scale run ids under ``config_path`` today."""
    results, out = Path(results), Path(out)
    st = paper_studies(config_path, [study]).get(study)
    if st is None:
        raise KeyError(f"{config_path}: study {study!r} is not in the config's studies")
    want = {r.run_id for r in st.runs}
    claims_path = checked_claims(results, st, "paper",
                                 f"snakemake --config 'scale_overrides={{{study}: paper}}'")
    claims = tables.read(claims_path, tables.CLAIM_COLUMNS)
    dest = out / study
    dest.mkdir(parents=True, exist_ok=True)
    import shutil
    shutil.copyfile(claims_path, dest / "claims.parquet")     # its stamp travels with it
    status = git_output("status", "--porcelain", "--untracked-files=no")
    prov = {"study": study, "scale": "paper", "commit": git_output("rev-parse", "HEAD"),
            "uncommitted_changes": bool(status), "date": _dt.date.today().isoformat(),
            "machine": machine(), "wall_s": wall_s,
            "job_s": round(job_seconds(results, study), 1), "command": command, "note": note,
            "runs": len(want), "runs_sha256": runs_digest(want), "datasets": st.datasets,
            "claim_ids": claims.claim_id.astype(str).tolist()}
    (dest / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n")
    write_view(dest, st.cfg)
    return dest


def write_view(dest: str | Path, study_cfg: dict | None = None) -> Path:
    """``claims.md``, the readable view of a committed ``claims.parquet`` beside its
    ``provenance.json``: how each row reads at paper scale (:func:`read_claims`), its source,
    test, detectable effect and margin."""
    from sigprop.claims.reading import readings
    from sigprop.claims.render import tally_line, to_markdown
    dest = Path(dest)
    prov = json.loads((dest / "provenance.json").read_text())
    claims = read_claims(dest / "claims.parquet", *declared_regime(study_cfg))
    view = claims.assign(reading=readings(claims))[
        ["claim_id", "kind", "source", "verdict", "reading", "measured", "expected", "test",
         "detectable", "margin", "regime", "exploratory"]]
    wall = f"{prov['wall_s'] / 60:.1f} min wall" if prov.get("wall_s") else "wall time not given"
    dirty = " (with uncommitted changes)" if prov.get("uncommitted_changes") else ""
    note = f"  {prov['note']}" if prov.get("note") else ""
    (dest / "claims.md").write_text(
        f"# {prov['study']}: paper-scale claims\n\nRun on {prov['date']} at commit "
        f"`{prov['commit'][:10]}`{dirty} on {prov['machine']['cpu']} "
        f"({prov['machine']['cores']} cores, no GPU): {wall}, {prov['job_s'] / 60:.1f} min of "
        f"jobs, {prov['runs']} runs.  Command: `{prov.get('command', '')}`{note}\n\n"
        f"{tally_line(claims)}\n\n{to_markdown(view)}")
    return dest / "claims.md"


def check(evidence: str | Path = EVIDENCE_DIR,
          config_path: str | Path = "config/config.yaml") -> list[str]:
    """Problems of the committed evidence: a study whose paper-scale run ids today differ from
    the committed digest, or whose files disagree with each other.  Empty when all holds."""
    evidence = Path(evidence)
    dirs = sorted(p for p in evidence.iterdir() if p.is_dir()) if evidence.exists() else []
    studies = paper_studies(config_path, [d.name for d in dirs])
    problems = []
    for d in dirs:
        prov = json.loads((d / "provenance.json").read_text())
        st = studies.get(d.name)
        if st is None:
            problems.append(f"{d}: study {d.name!r} is no longer in {config_path}")
            continue
        ids = {r.run_id for r in st.runs}
        if runs_digest(ids) != prov["runs_sha256"] or len(ids) != prov["runs"]:
            problems.append(f"{d}/provenance.json: the paper-scale runs of {d.name} today "
                            f"({len(ids)} runs) are not those the committed verdicts came from "
                            f"({prov['runs']} runs): rerun it at paper scale and publish again")
        claims = tables.read(d / "claims.parquet", OLD_COLUMNS)
        if claims.claim_id.astype(str).tolist() != prov["claim_ids"]:
            problems.append(f"{d}: claims.parquet's claim ids differ from provenance.json's")
        if claims.study.nunique() != 1 or claims.study.iloc[0] != d.name:
            problems.append(f"{d}/claims.parquet: rows of study {sorted(claims.study.unique())}")
    return problems


def write_views(evidence: str | Path = EVIDENCE_DIR,
                config_path: str | Path = "config/config.yaml") -> list[Path]:
    """:func:`write_view` for every committed study, against its study file today (the
    committed ``claims.parquet`` and ``provenance.json`` are left as they are)."""
    from sigprop.config import load_yaml
    evidence = Path(evidence)
    cfg = load_yaml(config_path)
    studies_dir = Path(cfg.get("studies_dir", "config/studies"))
    out = []
    for d in sorted(p for p in evidence.iterdir() if p.is_dir()):
        path = studies_dir / f"{d.name}.yaml"
        out.append(write_view(d, load_yaml(path) if path.exists() else None))
    return out
