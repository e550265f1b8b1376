"""Ladder evidence: each rung of a training study's budget ladder run on a CPU, committed with
provenance, and the trend of every claim across the rungs.

A rung (:mod:`sigprop.config.ladder`) runs as ``snakemake --config 'studies=[<study>]'
'scale_overrides={<study>: <rung>}'`` in its own copy of the workflow (the quick rung is the
default run).  :func:`publish_rung` (``sigprop ladder publish STUDY RUNG``) copies its claims
table to ``docs/evidence/ladder/<study>/<rung>/`` with ``provenance.json`` (commit, date,
machine, wall time, summed job time, the cost plan's projection, the command and what else ran,
the digest of its run ids and its claim ids) and a readable ``claims.md``.  :func:`write_trend`
(``sigprop ladder trend STUDY``) reads every committed rung as one trend per claim
(:func:`sigprop.claims.trend.trend_rows`) into ``trend.parquet`` and ``trend.md``.
:func:`check` (run by the tests) regenerates each committed rung's run ids and the claim ids
from the config today, so a config or code change that would give other runs is noticed.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd

from sigprop import tables
from sigprop.claims.committed import EvidenceError, trend_stamp, verified_rung, verified_trend
from sigprop.claims.trend import encode, trend_rows
from sigprop.config.ladder import declared_words, ladder_of
from sigprop.runs import runs_sha256
from sigprop.tools.compare import compare_frames

from .evidence import checked_claims, run_record, write_committed

COMMANDS = ("ladder",)
LADDER_DIR = Path("docs/evidence/ladder")


def studies_at(config_path: str | Path, names, scale: str) -> dict:
    """The config's studies ``names`` built at ``scale`` (smoke off), by name."""
    from sigprop.config import load_yaml
    from sigprop.tools import plan

    known = load_yaml(config_path)["studies"]
    names = [n for n in known if n in set(names)]
    over = [
        "smoke=false",
        "studies=" + json.dumps(names),
        "scale_overrides=" + json.dumps({n: scale for n in names}),
    ]
    _, studies = plan.load(config_path, over)
    return studies


def study_file(config_path: str | Path, study: str) -> dict:
    from sigprop.config import load_yaml, study_path

    cfg = load_yaml(config_path)
    return load_yaml(study_path(cfg.get("studies_dir", "config/studies"), study))


def ladder_for(config_path: str | Path, study: str):
    lad = ladder_of(study_file(config_path, study), f"{study}.yaml")
    if lad is None:
        raise KeyError(f"study {study!r} declares no ladder (ladder: in its study file)")
    return lad


def publish_rung(
    study: str,
    rung: str,
    results: str | Path = "results",
    out: str | Path = LADDER_DIR,
    config_path: str | Path = "config/config.yaml",
    wall_s: float | None = None,
    plan_s: float | None = None,
    command: str = "",
    alongside: str = "",
    note: str = "",
    stopped_job_s: float = 0.0,
) -> Path:
    """Copy ``results/<study>/claims.parquet`` of a run of ``study`` at rung ``rung`` to
    ``out/<study>/<rung>/`` with ``provenance.json`` and ``claims.md``.  Refused unless the
    results' run ids are exactly the rung's run ids under ``config_path`` today and the claims
    table is stamped with the rung's scale.  ``stopped_job_s``: the job time of an earlier
    attempt that was stopped and whose shard checkpoints this run resumed from (the benchmark
    files hold only the resumed part); it is added to ``job_s`` and stated on its own."""
    results, out = Path(results), Path(out)
    lad = ladder_for(config_path, study)
    if rung not in lad.scales:
        raise KeyError(f"{study}: {rung!r} is not a rung of its ladder ({', '.join(lad.scales)})")
    st = studies_at(config_path, [study], rung)[study]
    want = {r.run_id for r in st.runs}
    claims_path = checked_claims(
        results,
        st,
        rung,
        f"snakemake --config 'studies=[{study}]' 'scale_overrides={{{study}: {rung}}}'",
    )
    budget = next(r.budget for r in lad.rungs if r.scale == rung)
    prov = {
        "study": study,
        "scale": rung,
        "budget": budget,
        "budget_unit": lad.budget,
        "ladder_fixed": {"commit": lad.fixed.commit, "date": lad.fixed.date},
        "ladder_redeclared": [
            {"commit": d.commit, "date": d.date, "what": d.what} for d in lad.redeclared
        ],
        **run_record(results, study, wall_s, command, note),
        "plan_s": plan_s,
        "alongside": alongside,
    }
    if stopped_job_s:
        if stopped_job_s < 0:
            raise ValueError(f"{study} {rung}: a stopped attempt's job time of {stopped_job_s} s")
        prov["job_s"] = round(prov["job_s"] + stopped_job_s, 1)
        prov["stopped_job_s"] = round(stopped_job_s, 1)
    dest = write_committed(
        tables.read(claims_path, tables.CLAIM_COLUMNS),
        tables.stamp_of(claims_path),
        want,
        prov,
        st.datasets,
        out / study / rung,
    )
    write_rung_view(dest)
    return dest


def write_rung_view(dest: str | Path) -> Path:
    """``claims.md`` of a committed rung: its provenance in a paragraph, then its rows."""
    from sigprop.claims.render import tally_line, to_markdown

    dest = Path(dest)
    claims, prov = verified_rung(dest)
    view = claims[
        ["claim_id", "kind", "verdict", "measured", "se", "expected", "test", "detectable"]
    ]
    wall = f"{prov['wall_s'] / 60:.1f} min wall" if prov.get("wall_s") else "wall time not given"
    plan = f" (plan: {prov['plan_s'] / 60:.1f} min)" if prov.get("plan_s") else ""
    dirty = " (with uncommitted changes)" if prov.get("uncommitted_changes") else ""
    beside = f"  Alongside: {prov['alongside']}." if prov.get("alongside") else ""
    note = f"  {prov['note']}" if prov.get("note") else ""
    stopped = (
        f" ({prov['stopped_job_s'] / 60:.1f} of them in a stopped attempt it resumed from)"
        if prov.get("stopped_job_s")
        else ""
    )
    (dest / "claims.md").write_text(
        f"# {prov['study']}: ladder rung {prov['scale']} (budget {prov['budget']:g} "
        f"{prov['budget_unit']})\n\nRun on {prov['date']} at commit `{prov['commit'][:10]}`"
        f"{dirty} on {prov['machine']['cpu']} ({prov['machine']['cores']} cores, no GPU): "
        f"{wall}{plan}, {prov['job_s'] / 60:.1f} min of jobs{stopped}, {prov['runs']} runs.  "
        "Command: "
        f"`{prov.get('command', '')}`.{beside}{note}\n\n{tally_line(claims)}\n\n"
        f"{to_markdown(view)}"
    )
    return dest / "claims.md"


def rung_tables(folder: str | Path, lad) -> list[tuple[str, float, pd.DataFrame]]:
    """``(rung, budget, claims table)`` of every committed rung of a ladder, lowest first, each
    checked against its folder and provenance (:func:`sigprop.claims.committed.verified_rung`:
    a rung moved to another rung's folder, edited or re-saved is refused)."""
    folder = Path(folder)
    out = []
    for r in lad.rungs:
        if (folder / r.scale / "claims.parquet").exists():
            out.append((r.scale, r.budget, verified_rung(folder / r.scale)[0]))
    return out


def trend_of(folder: str | Path, lad) -> tuple[pd.DataFrame, dict]:
    """The trend table the committed rungs of ``folder`` give (all of the ladder's rungs must be
    committed and pass their checks) and the stamp it is written with."""
    folder = Path(folder)
    have = rung_tables(folder, lad)
    missing = [r.scale for r in lad.rungs if r.scale not in {h[0] for h in have}]
    if missing:
        raise FileNotFoundError(f"{folder}: rungs {missing} not committed (sigprop ladder publish)")
    contents = {
        r.scale: tables.stamp_of(folder / r.scale / "claims.parquet")["content"] for r in lad.rungs
    }
    seeds = {r.scale: r.seeds for r in lad.rungs}
    return (
        trend_rows(have, lad.paper_budget, lad.targets, seeds=[seeds[h[0]] for h in have]),
        trend_stamp(folder.name, contents),
    )


def write_trend(
    study: str, out: str | Path = LADDER_DIR, config_path: str | Path = "config/config.yaml"
) -> Path:
    """``trend.parquet`` (stamped with the rungs it was computed from) and ``trend.md`` of a
    study from its committed rungs (all of them must be committed and pass their checks)."""
    lad = ladder_for(config_path, study)
    folder = Path(out) / study
    t, stamp = trend_of(folder, lad)
    tables.write_atomic(encode(t), folder / "trend.parquet", stamp)
    left = {
        r.scale: untrained_seeds(tables.read(folder / r.scale / "claims.parquet"))
        for r in lad.rungs
        if (folder / r.scale / "claims.parquet").exists()
    }
    (folder / "trend.md").write_text(trend_markdown(t, lad, left))
    return folder / "trend.parquet"


UNTRAINED = re.compile(r"(\d+) untrained seed\(s\) left out \(([^)]*)\)")


def untrained_seeds(claims: pd.DataFrame) -> str:
    """The seeds a rung's claims left out of their statistics because they did not train (as
    their tests name them), with how many rows: ``""`` where none were."""
    hits = [m.group(2) for m in (UNTRAINED.search(str(x)) for x in claims.test) if m]
    return f"{hits[0]} ({len(hits)} rows)" if hits else ""


def _num(v: float) -> str:
    return "–" if v != v else f"{v:.3g}"


def trend_markdown(t: pd.DataFrame, lad, untrained: dict | None = None) -> str:
    """The trend table in words: one line per claim with its statistic rung by rung, and the
    seeds each rung left out because they did not train (``untrained``: rung -> words)."""
    from scipy import stats

    from sigprop.claims.trend import Z

    fewest = min(r.seeds for r in lad.rungs)
    head = (
        f"# {t.study.iloc[0] if len(t) else ''}: trend along the budget ladder\n\n"
        f"Rungs {', '.join(f'{r.scale} ({r.budget:g}, {r.seeds} seeds)' for r in lad.rungs)} "
        f"in {lad.budget}; the paper's setup is {lad.paper_budget:g}.  "
        f"{declared_words(lad)}  Each claim's statistic is fitted on ln(budget), weighted by "
        "1/SE² where every rung has an SE, the slope's SE inflated by √(χ²/(rungs − 2)) where "
        "that exceeds 1 (χ²: the weighted residuals); `crit` is the Student t quantile at "
        f"the one-sided level of {Z:g} normal SEs ({stats.norm.sf(Z):.2g}) with the seeds' "
        f"degrees of freedom ({fewest} seeds: {fewest - 1} df) for a weighted fit, with "
        "rungs − 2 for an unweighted one (a rung without an SE).  The reference is the "
        "paper's value where the study file's `ladder.targets` gives it (`paper value`), "
        "else the claim's pass threshold, whose pass side then gives the direction (`pass "
        "threshold`).  `toward`/`away`: the slope points toward/away from the reference by "
        "more than `crit` SEs (`detectable`); `flat`: it does not, and `needed`, the slope "
        "that carries the lowest rung's value to the reference by the paper's budget "
        "(|reference − lowest rung| / ln(paper's budget / lowest budget)), is larger than "
        "`detectable`: a slope reaching the paper's value by the paper's budget would have "
        "been seen; else `inconclusive`.  A trend is not a verdict on the paper's statement "
        "and is never counted in a paper's tally; the top rung's own verdict is shown "
        "beside it.\n\n"
    )
    lines = [
        "| claim | kind | statistic by rung (± SE) | verdicts by rung | reference | slope ± SE "
        "| χ² | crit | detectable | needed | trend |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in t.iterrows():
        vals = "; ".join(
            f"{_num(m)}" + (f" ± {_num(s)}" if s == s else "") for m, s in zip(r.measured, r.se)
        )
        ref = f"{_num(r.expected)} ({r.reference})" if r.reference != "none" else "none"
        lines.append(
            f"| `{r.claim_id}` | {r.kind} | {vals} | {' → '.join(r.verdicts)} | "
            f"{ref} | {_num(r.slope)} ± {_num(r.slope_se)} | {_num(r.chi2)} | "
            f"{_num(r.crit)} | {_num(r.detectable_slope)} | {_num(r.needed)} | "
            f"**{r.trend}** |"
        )
    counts = t.trend.value_counts().to_dict()
    tail = (
        "\n\n"
        + ", ".join(f"{counts.get(v, 0)} {v}" for v in ("toward", "away", "flat", "inconclusive"))
        + "\n"
    )
    left = {k: v for k, v in (untrained or {}).items() if v}
    if left:
        tail += (
            "\nSeeds that did not train, left out of the rows' statistics (as their tests "
            "name them): " + "; ".join(f"{k}: {v}" for k, v in left.items()) + ".\n"
        )
    return head + "\n".join(lines) + tail


def check(
    evidence: str | Path = LADDER_DIR, config_path: str | Path = "config/config.yaml"
) -> list[str]:
    """Problems of the committed ladder evidence: a rung that fails its checks against its
    folder and provenance (:func:`sigprop.claims.committed.verified_rung`), a rung whose run ids
    today differ from the committed digest, a rung the study's ladder no longer declares, a
    budget the ladder no longer declares, and a trend table that is unstamped, edited, made from
    other rungs, or differs in any column from the one its committed rungs give today (its
    whole table recomputed).  A trend is said to need rewriting (``sigprop ladder trend``) only
    when every rung passes its checks, so that the advice never accepts tampered rungs."""
    evidence = Path(evidence)
    problems = []
    for d in sorted(p for p in evidence.iterdir() if p.is_dir()) if evidence.exists() else []:
        try:
            lad = ladder_for(config_path, d.name)
        except (KeyError, FileNotFoundError) as e:
            problems.append(f"{d}: {e}")
            continue
        rungs_ok = True
        for rd in sorted(p for p in d.iterdir() if p.is_dir()):
            if rd.name not in lad.scales:
                problems.append(f"{rd}: {rd.name!r} is not a rung of {d.name}'s ladder")
                rungs_ok = False
                continue
            try:
                _, prov = verified_rung(rd)
            except (EvidenceError, ValueError) as e:
                problems.append(str(e))
                rungs_ok = False
                continue
            ids = {r.run_id for r in studies_at(config_path, [d.name], rd.name)[d.name].runs}
            if runs_sha256(ids) != prov["runs_sha256"] or len(ids) != prov["runs"]:
                problems.append(
                    f"{rd}/provenance.json: the runs of {d.name} at {rd.name} today "
                    f"({len(ids)} runs) are not those the committed verdicts came "
                    f"from ({prov['runs']} runs): rerun the rung and publish again"
                )
                rungs_ok = False
            budget = next(r.budget for r in lad.rungs if r.scale == rd.name)
            if prov.get("budget") != budget:
                problems.append(
                    f"{rd}/provenance.json: budget {prov.get('budget')} but the "
                    f"ladder declares {budget:g}"
                )
                rungs_ok = False
        tp = d / "trend.parquet"
        if not tp.exists() or not rungs_ok:
            continue
        try:
            got = verified_trend(tp)
        except (EvidenceError, ValueError) as e:
            problems.append(str(e))
            continue
        try:
            want, _ = trend_of(d, lad)
        except FileNotFoundError as e:
            problems.append(str(e))
            continue
        diff = compare_frames(got, encode(want), ["claim_id"], limit=6)
        if diff:
            problems.append(
                f"{tp}: not the trend its committed rungs give today (committed -> "
                f"recomputed: {'; '.join(diff)}): write it again (sigprop ladder "
                f"trend {d.name})"
            )
    return problems


def register(subparsers) -> None:
    """``sigprop ladder plan|publish|trend|check``."""
    ld = subparsers.add_parser(
        "ladder",
        help="budget ladders of the training studies: plan, publish, trend, check",
        description="plan STUDY: the cost plan's projected CPU time of each rung of the study's "
        "ladder (its ladder: section).  publish STUDY RUNG: copy a run of that rung "
        "(snakemake --config 'studies=[STUDY]' 'scale_overrides={STUDY: RUNG}') to "
        "docs/evidence/ladder/STUDY/RUNG/ with provenance.  trend STUDY: every "
        "claim's trend across the committed rungs (trend.parquet, trend.md; refused "
        "when a rung fails its checks).  check: every committed rung and its "
        "provenance agree with each other and their folder and still match the "
        "config's runs; each trend table is recomputed from its rungs and compared "
        "column by column.",
    )
    ld.add_argument("action", choices=["plan", "publish", "trend", "check"])
    ld.add_argument("study", nargs="?", default=None)
    ld.add_argument("rung", nargs="?", default=None, help="publish: the rung's scale")
    ld.add_argument("--configfile", default="config/config.yaml")
    ld.add_argument("--results", default="results", help="results folder [default: results]")
    ld.add_argument(
        "--out",
        default="docs/evidence/ladder",
        help="evidence folder [default: docs/evidence/ladder]",
    )
    ld.add_argument(
        "--wall-seconds", type=float, default=None, help="publish: the run's measured wall time"
    )
    ld.add_argument(
        "--plan-seconds",
        type=float,
        default=None,
        help="publish: the plan's projected wall time of the rung (ladder plan)",
    )
    ld.add_argument(
        "--rates",
        default=None,
        help="plan: the CPU calibration to use and extend [default: results/plan/cpu_rates.json;"
        " docs/evidence/ladder/cpu_rates.json is the committed rungs' machine's]",
    )
    ld.add_argument("--command", default="", help="publish: the command that ran it")
    ld.add_argument("--alongside", default="", help="publish: what else ran at the same time")
    ld.add_argument("--note", default="", help="publish: anything else a reader needs")
    ld.add_argument(
        "--stopped-job-seconds",
        type=float,
        default=0.0,
        help="publish: job time of a stopped earlier attempt whose checkpoints the run resumed "
        "from (added to the job time) [default: 0]",
    )
    ld.set_defaults(func=main)


def main(args: dict) -> int:
    """Run the action ``args["action"]``: 1 when ``check`` finds a problem, 2 for a missing
    study or rung or a bad config, study or file."""
    act, study = args["action"], args["study"]
    if act != "check" and not study:
        print(f"sigprop ladder {act}: name the study", file=sys.stderr)
        return 2
    try:
        if act == "plan":
            from sigprop.tools import plan as plan_module

            lad = ladder_for(args["configfile"], study)
            print(
                f"| rung | budget ({lad.budget}) | runs | shards | CPU job time (plan) | "
                "wall on 2 job slots | committed rung's job time (x plan) |\n"
                "|---|---|---|---|---|---|---|"
            )
            for r in lad.rungs:
                res = plan_module.plan(
                    args["configfile"],
                    [
                        "smoke=false",
                        f"studies=[{study}]",
                        "scale_overrides={" + f"{study}: {r.scale}" + "}",
                    ],
                    plan_module.DEFAULT_EFFICIENCY,
                    True,
                    rates_file=args.get("rates") or plan_module.CPU_RATES_FILE,
                )
                cpu = sum(b["cpu_h_total"] for b in res["blocks"]) * 3600
                runs = sum(b["runs"] for b in res["blocks"])
                shards = sum(b["shards"] for b in res["blocks"])
                prov = Path(args["out"]) / study / r.scale / "provenance.json"
                done = "not committed"
                if prov.exists():
                    job = json.loads(prov.read_text())["job_s"]
                    done = f"{job / 60:.1f} min ({job / cpu:.2f}x)"
                print(
                    f"| {r.scale} | {r.budget:g} | {runs} | {shards} | {cpu / 60:.1f} min | "
                    f"{cpu / 120:.1f} min or more | {done} |"
                )
            return 0
        if act == "publish":
            if not args["rung"]:
                print("sigprop ladder publish: name the rung", file=sys.stderr)
                return 2
            dest = publish_rung(
                study,
                args["rung"],
                args["results"],
                args["out"],
                args["configfile"],
                args["wall_seconds"],
                args["plan_seconds"],
                args["command"],
                args["alongside"],
                args["note"],
                args["stopped_job_seconds"],
            )
            print(f"wrote {dest}")
            return 0
        if act == "trend":
            print(f"wrote {write_trend(study, args['out'], args['configfile'])}")
            return 0
        problems = check(Path(args["out"]), args["configfile"])
        for p in problems:
            print(p, file=sys.stderr)
        if not problems:
            rungs = sorted(Path(args["out"]).glob("*/*/claims.parquet"))
            trends = sorted(Path(args["out"]).glob("*/trend.parquet"))
            print(
                f"{args['out']}: {len(rungs)} rungs and {len(trends)} trends bound to their "
                "provenance and today's declared rungs and run ids"
            )
        return 1 if problems else 0
    except (KeyError, ValueError, FileNotFoundError) as e:
        print(f"sigprop ladder {act}: {e}", file=sys.stderr)
        return 2
