"""Paper-scale verdicts obtained on a CPU, published beside the quick ones.

Some studies need neither a GPU nor downloaded data at paper scale (measurements at
initialization on Gaussian or constructed inputs, ensemble simulations, theory checks).  They
are run here with ``snakemake --config 'scale_overrides={<study>: paper}'`` and their claims
tables are committed under ``docs/evidence/paper-scale/<study>/`` by :func:`publish`
(``sigprop evidence publish``):

* ``claims.parquet``: the study's claims table with the values the workflow wrote, stamped
  as the workflow stamped it plus the digest of ``provenance.json``
  (:func:`sigprop.claims.committed.committed_stamp`);
* ``claims.md``: the same rows, readable, each with how it reads at paper scale;
* ``provenance.json``: the commit (and whether the tree had uncommitted changes), date,
  machine, wall time of the run and the summed job time from the rules' benchmark files, the
  number of runs and the SHA-256 of their sorted run ids, the claim ids and the claims table's
  content digest.

Every reader checks the two files against each other and their folder
(:func:`sigprop.claims.committed.verified`), so an edited, re-saved, swapped or unstamped table
and an edited provenance are refused.  :func:`check` (run by the tests) does that for every
committed study and also recomputes each study's paper-scale run ids from the config today and
compares them with the committed digest, so a config or code change that would give other runs
(and so stale verdicts) is noticed without rerunning anything; it checks the GPU evidence under
``docs/evidence/gpu/`` against its manifests (:func:`check_gpu`).
:func:`sigprop.claims.committed.read_committed` reads a committed table against the study file's
paper-scale regime, as the referee summaries, the report's front page and ``docs/papers.md``
(``sigprop claims-doc``) show it beside this run's verdicts; :func:`write_view` regenerates its
readable ``claims.md`` (``sigprop evidence views``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pandas as pd

from sigprop import tables
from sigprop.claims.committed import (
    EvidenceError,
    committed_stamp,
    declared_regime,
    read_committed,
    verified_paper_scale,
)
from sigprop.data.fetch import sha256_file
from sigprop.runs import runs_digest, runs_sha256

COMMANDS = ("evidence",)
EVIDENCE_DIR = Path("docs/evidence/paper-scale")
GPU_DIR = Path("docs/evidence/gpu")
LIMIT_S = 3600.0  # what fits in 60 minutes on a 2-core CPU


def paper_studies(config_path: str | Path = "config/config.yaml", names=None) -> dict:
    """The studies of the config at paper scale (smoke off), by name."""
    from sigprop.config import load_yaml
    from sigprop.tools import plan

    over = ["scale=paper", "smoke=false", "scale_overrides={}"]
    if names is not None:
        known = load_yaml(config_path)["studies"]
        over.append("studies=" + json.dumps([n for n in known if n in set(names)]))
    _, studies = plan.load(config_path, over)
    return studies


def needs_download(study) -> list[str]:
    """The downloaded data sets a study's runs read."""
    from sigprop.data import catalog

    return sorted({r.dataset for r in study.runs if catalog.get(r.dataset).source == "download"})


def fits(plan_result: dict, studies: dict, limit_s: float = LIMIT_S) -> list[dict]:
    """Per study and block of a paper-scale plan: the projected CPU time (from the plan's
    calibrated rates), the data sets that need a download, and whether it fits ``limit_s``
    with no download.  A measure study's FLOPs are the plan's proxy, so its time is too."""
    out = []
    for b in plan_result["blocks"]:
        st = studies[b["study"]]
        labels = {r.run_id: lab for r, lab in ((r, st.labels[r.run_id]) for r in st.runs)}
        dl = sorted(
            {r.dataset for r in st.runs if labels[r.run_id] == b["block"]} & set(needs_download(st))
        )
        cpu_s = b["cpu_h_total"] * 3600
        out.append(
            {
                "study": b["study"],
                "block": b["block"],
                "runs": b["runs"],
                "shards": b["shards"],
                "cpu_s": cpu_s,
                "proxy": b["flops_proxy"],
                "downloads": dl,
                "fits": (not dl) and cpu_s <= limit_s,
            }
        )
    return out


def git_output(*args: str, cwd: str | Path | None = None) -> str:
    """``git args`` run in ``cwd`` (default: here), its output stripped; "" when git fails."""
    try:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, check=True, cwd=cwd
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def run_checkout(results: Path) -> Path | None:
    """The git work tree that holds ``results`` (the checkout whose code made the run, e.g. a
    fresh clone a rung ran in), or None when ``results`` lies in none."""
    top = git_output("rev-parse", "--show-toplevel", cwd=results) if results.is_dir() else ""
    return Path(top) if top else None


def machine() -> dict:
    """This machine in a few words: CPU model and cores, memory, OS, torch."""
    import torch

    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), ""
            )
    except OSError:
        pass
    mem = (
        os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        if hasattr(os, "sysconf")
        else float("nan")
    )
    return {
        "cpu": cpu or platform.processor(),
        "cores": os.cpu_count(),
        "memory_gib": round(mem, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "gpu": None,
    }


def run_record(results: Path, study: str, wall_s, command: str, note: str) -> dict:
    """What every committed run's provenance says of the run itself: the commit and whether
    the tree had uncommitted changes (of the checkout that holds ``results``,
    :func:`run_checkout`, so that a run made in another clone names that clone's commit; of
    this checkout when ``results`` lies in none), the date, the machine, the wall time given,
    the summed job time of the study's benchmark files, the command and a note."""
    where = run_checkout(Path(results))
    return {
        "commit": git_output("rev-parse", "HEAD", cwd=where),
        "uncommitted_changes": bool(
            git_output("status", "--porcelain", "--untracked-files=no", cwd=where)
        ),
        "date": _dt.date.today().isoformat(),
        "machine": machine(),
        "wall_s": wall_s,
        "job_s": round(job_seconds(results, study), 1),
        "command": command,
        "note": note,
    }


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
    claims table is stamped by the claims job with that scale, those runs and no smoke."""
    study = st.name
    claims_path = results / study / "claims.parquet"
    metrics_path = results / study / "metrics.parquet"
    for p in (claims_path, metrics_path):
        if not p.exists():
            raise FileNotFoundError(f"{p}: run the study at {scale} scale first ({command})")
    want = {r.run_id for r in st.runs}
    got = set(pd.read_parquet(metrics_path, columns=["run_id"]).run_id.unique())
    if got != want:
        raise ValueError(
            f"{metrics_path}: {len(got)} run ids, of which {len(got & want)} are "
            f"among the {len(want)} runs of {study} at {scale} scale today: not a "
            f"{scale}-scale run of this config"
        )
    tables.read(
        claims_path,
        tables.CLAIM_COLUMNS,
        expect={
            "kind": "claims",
            "study": study,
            "scale": scale,
            "runs": runs_digest(want),
            "smoke": False,
        },
        hint=f"run the study at {scale} scale again ({command})",
    )
    return claims_path


def write_committed(
    claims: pd.DataFrame, run_stamp: dict, run_ids, prov: dict, datasets, dest: Path
) -> Path:
    """Commit a run's claims table (read from the run with its stamp ``run_stamp``, both
    checked by :func:`checked_claims`) to ``dest``: ``provenance.json`` (``prov`` with the
    runs, their SHA-256, the data sets, the claim ids and the table's content digest) and
    ``claims.parquet`` with the values the workflow wrote, stamped as it was plus the
    provenance's digest (:func:`sigprop.claims.committed.committed_stamp`).  The claims table
    is written last, so a publish cut short leaves a folder that every reader refuses."""
    from sigprop import atomic

    prov = {
        **prov,
        "runs": len(set(run_ids)),
        "runs_sha256": runs_sha256(run_ids),
        "datasets": list(datasets),
        "claim_ids": claims.claim_id.astype(str).tolist(),
        "claims_content": tables.content_digest(claims),
    }
    dest.mkdir(parents=True, exist_ok=True)
    atomic.write_text(dest / "provenance.json", json.dumps(prov, indent=2) + "\n")
    tables.write_atomic(claims, dest / "claims.parquet", committed_stamp(run_stamp, prov))
    return dest


def publish(
    study: str,
    results: str | Path = "results",
    out: str | Path = EVIDENCE_DIR,
    config_path: str | Path = "config/config.yaml",
    wall_s: float | None = None,
    command: str = "",
    note: str = "",
) -> Path:
    """Commit ``results/<study>/claims.parquet`` of a paper-scale run to ``out/<study>/`` with
    ``claims.md`` and ``provenance.json`` (:func:`write_committed`).  Refused unless the
    results' run ids are exactly the study's paper-scale run ids under ``config_path`` today
    and the claims table is the claims job's for them."""
    results, out = Path(results), Path(out)
    st = paper_studies(config_path, [study]).get(study)
    if st is None:
        raise KeyError(f"{config_path}: study {study!r} is not in the config's studies")
    want = {r.run_id for r in st.runs}
    claims_path = checked_claims(
        results, st, "paper", f"snakemake --config 'scale_overrides={{{study}: paper}}'"
    )
    prov = {"study": study, "scale": "paper", **run_record(results, study, wall_s, command, note)}
    dest = write_committed(
        tables.read(claims_path, tables.CLAIM_COLUMNS),
        tables.stamp_of(claims_path),
        want,
        prov,
        st.datasets,
        out / study,
    )
    write_view(dest, st.cfg)
    return dest


def write_view(dest: str | Path, study_cfg: dict | None = None) -> Path:
    """``claims.md``, the readable view of a committed ``claims.parquet`` beside its
    ``provenance.json``: how each row reads at paper scale (:func:`read_committed`), its source,
    test, detectable effect and margin."""
    from sigprop.claims.reading import readings
    from sigprop.claims.render import tally_line, to_markdown

    dest = Path(dest)
    claims, prov = read_committed(dest, *declared_regime(study_cfg))
    view = claims.assign(reading=readings(claims))[
        [
            "claim_id",
            "kind",
            "source",
            "verdict",
            "reading",
            "measured",
            "expected",
            "test",
            "detectable",
            "margin",
            "regime",
            "exploratory",
        ]
    ]
    wall = f"{prov['wall_s'] / 60:.1f} min wall" if prov.get("wall_s") else "wall time not given"
    dirty = " (with uncommitted changes)" if prov.get("uncommitted_changes") else ""
    note = f"  {prov['note']}" if prov.get("note") else ""
    (dest / "claims.md").write_text(
        f"# {prov['study']}: paper-scale claims\n\nRun on {prov['date']} at commit "
        f"`{prov['commit'][:10]}`{dirty} on {prov['machine']['cpu']} "
        f"({prov['machine']['cores']} cores, no GPU): {wall}, {prov['job_s'] / 60:.1f} min of "
        f"jobs, {prov['runs']} runs.  Command: `{prov.get('command', '')}`{note}\n\n"
        f"{tally_line(claims)}\n\n{to_markdown(view)}"
    )
    return dest / "claims.md"


def check(
    evidence: str | Path = EVIDENCE_DIR,
    config_path: str | Path = "config/config.yaml",
    gpu: str | Path | None = GPU_DIR,
) -> list[str]:
    """Problems of the committed evidence: a study whose claims table and provenance fail their
    checks against each other and their folder (:func:`sigprop.claims.committed.verified`), or
    whose paper-scale run ids today differ from the committed digest; and the GPU evidence
    under ``gpu`` that differs from its manifest (:func:`check_gpu`).  Empty when all holds."""
    evidence = Path(evidence)
    dirs = sorted(p for p in evidence.iterdir() if p.is_dir()) if evidence.exists() else []
    studies = paper_studies(config_path, [d.name for d in dirs])
    problems = []
    for d in dirs:
        try:
            _, prov = verified_paper_scale(d)
        except (EvidenceError, ValueError) as e:
            problems.append(str(e))
            continue
        st = studies.get(d.name)
        if st is None:
            problems.append(f"{d}: study {d.name!r} is no longer in {config_path}")
            continue
        ids = {r.run_id for r in st.runs}
        if runs_sha256(ids) != prov["runs_sha256"] or len(ids) != prov["runs"]:
            problems.append(
                f"{d}/provenance.json: the paper-scale runs of {d.name} today "
                f"({len(ids)} runs) are not those the committed verdicts came from "
                f"({prov['runs']} runs): rerun it at paper scale and publish again"
            )
    if gpu is not None and Path(gpu).exists():
        for g in sorted(p for p in Path(gpu).iterdir() if p.is_dir()):
            problems += check_gpu(g)
    return problems


GPU_MANIFEST = "provenance.json"
"""The manifest of a GPU evidence folder (``docs/evidence/gpu/<device>-<date>/``): the device,
date, commit and command of its ``gpu_check.json``, and the SHA-256 of every file beside it."""


def seal_gpu(folder: str | Path) -> Path:
    """Write the manifest (:data:`GPU_MANIFEST`) of a GPU evidence folder: the device, date,
    commit and command its ``gpu_check.json`` names, and every other file's SHA-256.  Run once
    when the folder is committed (``sigprop evidence seal-gpu FOLDER``); :func:`check_gpu`
    refuses any file that differs after."""
    from sigprop import atomic

    folder = Path(folder)
    check_path = folder / "gpu_check.json"
    try:
        result = json.loads(check_path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(
            f"{check_path}: a GPU evidence folder holds the gpu-check JSON it reports ({e})"
        ) from None
    files = {
        p.name: sha256_file(p)
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != GPU_MANIFEST
    }
    manifest = {
        "device": result.get("device_name"),
        "date": str(result.get("date", ""))[:10],
        "commit": result.get("commit"),
        "command": result.get("command"),
        "files": files,
    }
    atomic.write_text(folder / GPU_MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return folder / GPU_MANIFEST


def check_gpu(folder: str | Path, efficiency: str | Path | None = None) -> list[str]:
    """Problems of a GPU evidence folder: a manifest that is missing or malformed, a file
    missing, added or whose SHA-256 differs from the manifest's; and an entry of
    ``config/gpu_efficiency.yaml`` (``efficiency``) recorded from this folder whose numbers are
    not those its source JSON gives (:func:`sigprop.tools.gpu_check.measured_efficiency`) or
    whose source digest differs."""
    folder = Path(folder)
    mp = folder / GPU_MANIFEST
    hint = f"restore the folder (`git checkout -- {folder}`)"
    try:
        manifest = json.loads(mp.read_text())
    except FileNotFoundError:
        return [f"{mp}: missing (seal the folder once with `sigprop evidence seal-gpu {folder}`)"]
    except (OSError, ValueError) as e:
        return [f"{mp}: not readable JSON ({e})"]
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not files:
        return [f"{mp}: key 'files' is missing or empty"]
    problems = []
    here = {p.name for p in folder.iterdir() if p.is_file() and p.name != GPU_MANIFEST}
    for name in sorted(here - set(files)):
        problems.append(f"{folder / name}: not in {mp}: {hint}")
    for name, digest in sorted(files.items()):
        f = folder / name
        if not f.is_file():
            problems.append(f"{f}: listed in {mp} but missing: {hint}")
        elif sha256_file(f) != digest:
            problems.append(f"{f}: differs from the SHA-256 {mp} records: {hint}")
    problems += _check_efficiency(folder, efficiency)
    return problems


def _check_efficiency(folder: Path, efficiency: str | Path | None) -> list[str]:
    """Entries of the efficiency file whose ``source`` lies in ``folder``: their digest and
    numbers against the source JSON."""
    from sigprop.tools import gpu_check
    from sigprop.tools import plan as plan_module

    path = Path(efficiency or plan_module.EFFICIENCY_FILE)
    root = path.resolve().parents[1]
    problems = []
    for gpu, entry in plan_module.measured_efficiencies(path).items():
        src = root / str(entry.get("source", ""))
        if not entry.get("source") or src.resolve().parent != folder.resolve():
            continue
        if not src.is_file():
            problems.append(f"{path}: {gpu}.source {entry['source']} is missing")
            continue
        if entry.get("source_sha256") != sha256_file(src):
            problems.append(
                f"{path}: {gpu}.source_sha256 is not the SHA-256 of "
                f"{entry['source']} (record it again: sigprop gpu-check --record "
                f"{entry['source']})"
            )
        want = gpu_check.recorded_entry(json.loads(src.read_text()), entry["source"])
        for part in ("by_study", "by_family"):
            if entry.get(part) != want[part]:
                problems.append(
                    f"{path}: {gpu}.{part} is {entry.get(part)}, but "
                    f"{entry['source']} gives {want[part]}"
                )
    return problems


def write_views(
    evidence: str | Path = EVIDENCE_DIR, config_path: str | Path = "config/config.yaml"
) -> list[Path]:
    """:func:`write_view` for every committed study, against its study file today (the
    committed ``claims.parquet`` and ``provenance.json`` are left as they are)."""
    from sigprop.config import load_yaml, study_path

    evidence = Path(evidence)
    cfg = load_yaml(config_path)
    studies_dir = Path(cfg.get("studies_dir", "config/studies"))
    out = []
    for d in sorted(p for p in evidence.iterdir() if p.is_dir()):
        path = study_path(studies_dir, d.name)
        out.append(write_view(d, load_yaml(path) if path.exists() else None))
    return out


def register(subparsers) -> None:
    """``sigprop evidence fits|publish|check|views|seal-gpu``."""
    ev = subparsers.add_parser(
        "evidence",
        help="paper-scale verdicts run on a CPU: what fits, publish, check, views",
        description="fits: the paper-scale blocks that fit --limit-min on this CPU with no "
        "download (from the cost plan).  publish STUDY: copy a paper-scale run's "
        "claims to docs/evidence/paper-scale/STUDY/ with provenance (the table "
        "stamped with the provenance's digest).  check: every committed table and "
        "provenance agree with each other and their folder, and still match the "
        "paper-scale config's runs; the GPU evidence under docs/evidence/gpu matches "
        "its manifest.  seal-gpu FOLDER: write a GPU evidence folder's manifest "
        "(each file's SHA-256), once, when it is committed.  views: "
        "regenerate each committed study's claims.md against its study file today "
        "(how each row reads at paper scale).  The verdicts of both scales side by "
        "side in docs/papers.md: sigprop claims-doc.",
    )
    ev.add_argument("action", choices=["fits", "publish", "check", "views", "seal-gpu"])
    ev.add_argument(
        "target", nargs="?", default=None, help="publish: the study; seal-gpu: the folder"
    )
    ev.add_argument("--configfile", default="config/config.yaml")
    ev.add_argument("--results", default="results", help="results folder [default: results]")
    ev.add_argument("--out", default=None, help="evidence folder [docs/evidence/paper-scale]")
    ev.add_argument(
        "--wall-seconds", type=float, default=None, help="publish: the run's measured wall time"
    )
    ev.add_argument("--command", default="", help="publish: the command that ran it")
    ev.add_argument("--note", default="", help="publish: e.g. what else ran at the same time")
    ev.add_argument("--limit-min", type=float, default=60.0, help="fits: minutes [default: 60]")
    ev.set_defaults(func=main)


def main(args: dict) -> int:
    """Run the action ``args["action"]``: 1 when ``check`` finds a problem, 2 for a missing
    target or a bad config, study or file."""
    out = Path(args["out"]) if args["out"] else EVIDENCE_DIR
    act = args["action"]
    try:
        if act == "fits":
            from sigprop.tools import plan as plan_module

            studies = paper_studies(args["configfile"])
            result = plan_module.plan(
                args["configfile"],
                ["scale=paper", "smoke=false", "scale_overrides={}"],
                plan_module.DEFAULT_EFFICIENCY,
                True,
            )
            rows = fits(result, studies, args["limit_min"] * 60)
            print(
                f"| study | block | runs | shards | CPU (plan) | download | fits "
                f"{args['limit_min']:g} min |\n|---|---|---|---|---|---|---|"
            )
            for r in rows:
                print(
                    f"| {r['study']} | {r['block']} | {r['runs']} | {r['shards']} | "
                    f"{r['cpu_s'] / 60:.1f} min{' (proxy)' if r['proxy'] else ''} | "
                    f"{', '.join(r['downloads']) or '-'} | {'yes' if r['fits'] else 'no'} |"
                )
            return 0
        if act == "publish":
            if not args["target"]:
                print("sigprop evidence publish: name the study", file=sys.stderr)
                return 2
            dest = publish(
                args["target"],
                args["results"],
                out,
                args["configfile"],
                args["wall_seconds"],
                args["command"],
                args["note"],
            )
            print(f"wrote {dest}")
            return 0
        if act == "check":
            problems = check(out, args["configfile"])
            for p in problems:
                print(p, file=sys.stderr)
            if not problems:
                studies = sorted(d.name for d in Path(out).iterdir() if d.is_dir())
                print(
                    f"{out}: {len(studies)} studies' claims tables and provenance bound and "
                    f"their run ids today's ({', '.join(studies)}); GPU evidence under {GPU_DIR} "
                    "matches its manifests"
                )
            return 1 if problems else 0
        if act == "seal-gpu":
            if not args["target"]:
                print("sigprop evidence seal-gpu: name the folder", file=sys.stderr)
                return 2
            print(f"wrote {seal_gpu(args['target'])}")
            return 0
        written = write_views(out, args["configfile"])
        for p in written:
            print(f"wrote {p}")
        return 0
    except (KeyError, ValueError, FileNotFoundError) as e:
        print(f"sigprop evidence {act}: {e}", file=sys.stderr)
        return 2
