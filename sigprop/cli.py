"""Command line: ``sigprop theory <command> [--param value ...]`` prints JSON.

Each theory module declares its commands in a module-level ``CLI_COMMANDS``
list (name, help, params, fn); this file only turns them into argparse
sub-commands, so a new theory function becomes a command where it is defined.
Parameters marked ``list`` take comma-separated values (``--rho 1,0.99,0.98``).
``sigprop bench`` and ``sigprop bench-dag`` (:mod:`sigprop.tools.bench`) and ``sigprop bench-alloc``
(:mod:`sigprop.tools.bench_alloc`) print benchmarks as JSON;
``sigprop params`` lists the studies' typed parameters; ``sigprop compare`` compares two results
folders' claims and tables value by value.

Papers cited by prefix: 004 = Chen, Wang, Zhao, Papailiopoulos, Koutris (2018),
arXiv:1806.03791.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

THEORY_MODULES = ("meanfield", "gradients", "kernels", "finite_width", "ensembles", "pruning",
                  "diversity")


@functools.cache
def theory_commands() -> dict[str, dict]:
    """All commands of the theory modules, by name (a clash is a programming error)."""
    out: dict[str, dict] = {}
    for mod in THEORY_MODULES:
        module = importlib.import_module(f"sigprop.theory.{mod}")
        for cmd in getattr(module, "CLI_COMMANDS", []):
            if cmd["name"] in out:
                raise RuntimeError(f"theory command '{cmd['name']}' defined twice")
            out[cmd["name"]] = {**cmd, "module": mod}
    return out


def _parse_value(text: str, typ, name: str):
    try:
        if typ is bool:
            if text.lower() in ("1", "true", "yes"):
                return True
            if text.lower() in ("0", "false", "no"):
                return False
            raise ValueError
        return typ(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--{name}: expected {typ.__name__}, got {text!r}") from None


def _converter(spec: dict, name: str):
    typ = spec.get("type", float)
    if spec.get("list"):
        return lambda s: [_parse_value(t.strip(), typ, name) for t in s.split(",") if t.strip()]
    return lambda s: _parse_value(s, typ, name)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def build_parser(commands: dict[str, dict]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sigprop", description="sigprop: theory predictions and benchmarks as JSON.")
    sub = parser.add_subparsers(dest="group", required=True)
    theory = sub.add_parser(
        "theory", help="print theory predictions as JSON",
        description="Print theory predictions of the five papers as JSON. "
                    "Use 'sigprop theory <command> --help' for a command's parameters.")
    tsub = theory.add_subparsers(dest="command", required=True, metavar="<command>")
    for name, cmd in sorted(commands.items()):
        p = tsub.add_parser(name, help=f"{cmd['help']} [{cmd['module']}]", description=cmd["help"])
        for pname, spec in cmd.get("params", {}).items():
            flag = "--" + pname.replace("_", "-")
            default = spec.get("default")
            required = default is None and not spec.get("optional", False)
            helptext = spec.get("help", "")
            if spec.get("list"):
                helptext += " (comma-separated list)"
            if not required:
                helptext += f" [default: {default}]"
            p.add_argument(flag, dest=pname, type=_converter(spec, pname), default=default,
                           required=required, help=helptext)
    bench = sub.add_parser(
        "bench", help="benchmark a shard against what a PyTorch user would write (JSON)",
        description="Train the same M fully connected models as one shard, one after another "
                    "as ordinary nn.Modules (loop), with torch.func ensembling (vmap over "
                    "functional_call) and with a minimal stacked baddbmm step; print the fastest "
                    "of --repeats interleaved timings of each, their spread, GFLOP/s and the "
                    "fraction of a float32 matmul peak measured on the spot, as JSON.")
    bench.add_argument("--widths", type=lambda s: [int(t) for t in s.split(",")], default=None,
                       help="comma-separated widths [default: the eight cases of "
                            "docs/performance.md: widths 32, 256 x batches 32, 128 x tanh, relu]")
    bench.add_argument("--models", type=int, default=None, help="models per shard [default: 64]")
    bench.add_argument("--depth", type=int, default=20, help="hidden layers [default: 20]")
    bench.add_argument("--steps", type=int, default=None, help="timed steps [default: 20]")
    bench.add_argument("--batch", type=int, default=None, help="batch size [default: 32 and 128]")
    bench.add_argument("--activation", default=None, help="activation [default: tanh and relu]")
    bench.add_argument("--repeats", type=int, default=3,
                       help="interleaved timings of each way, fastest kept [default: 3]")
    bench.add_argument("--baselines", default="loop,func,minimal",
                       help="comma-separated subset of loop, func, minimal [default: all]")
    bench.add_argument("--arch", default="fc",
                       help="fc (the eight cases), or a convolutional family such as resnet32: "
                            "grouped convolutions against the loop and torch.func on 3x32x32 "
                            "inputs [default: fc]")
    bench.add_argument("--device", default="auto", help="auto, cpu or cuda[:N] [default: auto]")
    bth = sub.add_parser(
        "bench-threads", help="a training shard alone, as two threads, as two processes and "
                              "beside a Python thread (JSON)",
        description="Train one shard of STUDY (its costliest by default) for --steps steps, one "
                    "torch thread, alone, as two copies in two threads of one process, as two "
                    "copies in two processes, and beside a thread running a pure-Python loop; "
                    "print the fastest of --repeats interleaved timings of each, its spread and "
                    "its ratio to alone, as JSON: why a local run's jobs run in worker processes "
                    "(docs/performance.md, 'Where jobs run').")
    bth.add_argument("study", help="a training study of the config, e.g. width_batch")
    bth.add_argument("--shard", default=None, help="shard id [default: the costliest]")
    bth.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE")
    bth.add_argument("--configfile", default="config/config.yaml")
    bth.add_argument("--steps", type=int, default=100, help="timed steps [default: 100]")
    bth.add_argument("--repeats", type=int, default=3, help="[default: 3]")
    bth.add_argument("--arrangement", action="append", default=None,
                     help="alone, two_threads, two_processes or beside_python (repeatable) "
                          "[default: all four]")
    prof = sub.add_parser(
        "profile-shard", help="where a training shard's step goes: torch.profiler's top operators "
                              "(JSON)",
        description="Build STUDY as the workflow does, draw one shard's initial weights, train "
                    "--warmup steps and then --steps steps under torch.profiler; print the step "
                    "time, host page faults per step and the operators with the most self time, "
                    "as JSON. Reads the prepared data set results/data/<name>.npz.")
    prof.add_argument("study", help="a training study of the config, e.g. trainable_depth")
    prof.add_argument("--shard", default=None,
                      help="shard id [default: the shard with the most FLOPs by sigprop plan's "
                           "count]")
    prof.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                      help="overrides as for snakemake --config, e.g. scale=paper")
    prof.add_argument("--configfile", default="config/config.yaml")
    prof.add_argument("--steps", type=int, default=10, help="profiled steps [default: 10]")
    prof.add_argument("--warmup", type=int, default=3, help="untimed steps first [default: 3]")
    prof.add_argument("--threads", type=int, default=1,
                      help="torch threads, as a local job gets [default: 1]")
    prof.add_argument("--device", default="cpu", help="cpu, auto or cuda[:N] [default: cpu]")
    prof.add_argument("--top", type=int, default=12, help="operators listed [default: 12]")
    dag = sub.add_parser(
        "bench-dag", help="time a big grid's config expansion and Snakemake DAG (JSON)",
        description="Write a study whose grid has --runs runs, time its expansion into shards "
                    "and 'snakemake -n' on it, and print the job count per rule as JSON: one "
                    "training job per shard, not per run.")
    dag.add_argument("--runs", type=int, default=10_000, help="runs in the grid [default: 10000]")
    dag.add_argument("--shard-size", dest="shard_size", type=int, default=64,
                     help="models per shard [default: 64]")
    dag.add_argument("--workdir", default=None,
                     help="folder for the config and Snakemake's state [default: a temporary one]")
    dag.add_argument("--no-dry-run", dest="dry_run", action="store_false",
                     help="time the config expansion only")
    dag.add_argument("--snakefile", default=None,
                     help="workflow/Snakefile of this checkout [default: next to the package]")
    rt = sub.add_parser(
        "rerun-table", help="what an edit of each shared layer reruns (Markdown table)",
        description="In a temporary copy of this checkout with its finished run's results/ and "
                    ".snakemake/, align Snakemake's metadata with the code (--touch), then make "
                    "one edit per module and count the jobs 'snakemake -n' plans "
                    "(sigprop.tools.rerun_table; docs/design.md).")
    rt.add_argument("--repo", default=".", help="the checkout, with a finished run [default: .]")
    rt.add_argument("--cores", type=int, default=2)
    rt.add_argument("--keep", action="store_true", help="keep the temporary copy")
    alloc = sub.add_parser(
        "bench-alloc", help="time a large CPU allocation in the main thread and in a worker "
                            "thread, huge pages off and on (JSON)",
        description="Time y = x * 2 on float32 tensors of each size in the main thread and in a "
                    "worker thread (where Snakemake runs a local run's jobs), with PyTorch's "
                    "huge pages for large tensors off and on, and print the fastest call, its "
                    "spread and the page faults per call as JSON (sigprop.tools.bench_alloc).")
    alloc.add_argument("--sizes", type=lambda s: tuple(int(t) for t in s.split(",")),
                       default=(16, 100, 300), help="tensor sizes in MB [default: 16,100,300]")
    alloc.add_argument("--repeats", type=int, default=10,
                       help="timed calls per case, after two untimed [default: 10]")
    sweep = sub.add_parser(
        "bench-sweep", help="time a batch-size sweep: micro-batched shard vs one shard per "
                            "batch size vs padding (JSON)",
        description="Train the same batch-size sweep (004 Sec. 5) for the same epochs as one "
                    "micro-batched shard, as one shard per batch size, and as one padded shard, "
                    "and print the wall times as JSON (sigprop.tools.bench.sweep_bench).")
    sweep.add_argument("--batches", type=lambda s: tuple(int(t) for t in s.split(",")),
                       default=(8, 16, 32, 64, 128, 256, 512), help="[default: 8,16,...,512]")
    sweep.add_argument("--models-per-batch", dest="models_per_batch", type=int, default=10)
    sweep.add_argument("--width", type=int, default=36)
    sweep.add_argument("--depth", type=int, default=2)
    sweep.add_argument("--epochs", type=float, default=2.0)
    sweep.add_argument("--device", default="auto", help="auto, cpu or cuda[:N] [default: auto]")
    sweep.add_argument("--repeats", type=int, default=3, help="timings per layout, fastest kept "
                                                               "[default: 3]")
    params = sub.add_parser(
        "params", help="list the studies' parameters: section, key, type, default, meaning",
        description="Print each study's typed parameters (the measure, theory, analysis and "
                    "claims sections of its study file) with their types, defaults and meanings.")
    params.add_argument("kinds", nargs="*", help="study kinds [default: all]")
    params.add_argument("--markdown", action="store_true",
                        help="Markdown tables, as in config/README.md")
    params.add_argument("--write", metavar="FILE", nargs="?", const="config/README.md",
                        default=None,
                        help="replace the tables between FILE's <!-- params:start --> and "
                             "<!-- params:end --> markers in place [default FILE: "
                             "config/README.md]")
    pl = sub.add_parser(
        "plan", help="cost plan: runs, shards, FLOPs, memory, CPU and GPU time per study and block",
        description="Per study and block of the configured run: runs, shards, FLOPs per shard "
                    "(counted from operator shapes on the meta device), peak memory per shard, the "
                    "projected time of a shard on this CPU (calibrated by timing real steps) and on "
                    "named GPUs (dense peak x efficiency), and the study's GPU-hours.")
    pl.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                    help="overrides as for snakemake --config, e.g. scale=paper")
    pl.add_argument("--configfile", default="config/config.yaml")
    pl.add_argument("--efficiency", type=float, default=None,
                    help="fraction of a GPU's dense peak assumed [default: sigprop.tools.plan."
                         "DEFAULT_EFFICIENCY]")
    pl.add_argument("--gpu", default="A100-80GB", help="the GPU shown in the table's per-block "
                                                       "columns [default: A100-80GB]")
    pl.add_argument("--no-calibrate", action="store_true", help="skip the CPU timing")
    pl.add_argument("--recalibrate", action="store_true",
                    help="time the CPU again instead of reusing the rates stored in "
                         "results/plan/cpu_rates.json for this machine and torch version")
    pl.add_argument("--json", metavar="FILE", help="also write the whole plan as JSON")
    pl.add_argument("--resources", metavar="FILE",
                    help="write per-shard scheduler requests (runtime, mem_mb, gpu_mem_mb) for "
                         "the config's resources_plan")
    pl.add_argument("--target", default="A100-80GB",
                    help="what --resources plans for: a GPU of sigprop.tools.plan.GPUS or cpu "
                         "[default: A100-80GB]")
    gpu = sub.add_parser(
        "gpu-check", help="the first hour on a GPU: bench, every family on CUDA against the CPU, "
                          "a paper-scale shard against the plan (one JSON)",
        description="On a CUDA device: run sigprop bench, train one tiny shard of every family "
                    "on the CPU and on the device from the same weights and compare losses, "
                    "accuracies and parameters with stated tolerances (float32, TF32 off), and "
                    "time the costliest paper-scale shard of each training study against sigprop "
                    "plan's projection; write one "
                    "JSON (sigprop.tools.gpu_check).  Exits 1 without a CUDA device, 3 when a "
                    "comparison fails.")
    gpu.add_argument("--out", default="gpu_check.json", help="JSON file [default: gpu_check.json]")
    gpu.add_argument("--device", default="cuda", help="cuda or cuda:N [default: cuda]")
    gpu.add_argument("--shards", default=None,
                     help="the paper-scale shards to time, study=SHARD_ID,...; a training study "
                          "not named (or named with no id) gets its costliest shard")
    gpu.add_argument("--steps", type=int, default=10,
                     help="training steps timed per shard [default: 10]")
    gpu.add_argument("--record", metavar="JSON", default=None,
                     help="no GPU needed: write the efficiencies measured in JSON (a gpu-check "
                          "output) into config/gpu_efficiency.yaml, which sigprop plan reads")
    cdoc = sub.add_parser(
        "claims-doc", help="regenerate the verdict tables of docs/papers.md from a results folder",
        description="Replace each <!-- claims:{paper}:{scale}:start/end --> block of a Markdown "
                    "file by the headline and every claim of results/papers/{paper}/claims.parquet "
                    "beside the committed paper-scale verdicts (docs/evidence/paper-scale), each "
                    "read against its study file's regime; with --check, exit 1 when the file "
                    "differs from what it would write.")
    cdoc.add_argument("file", nargs="?", default="docs/papers.md")
    cdoc.add_argument("--results", default="results", help="results folder [default: results]")
    cdoc.add_argument("--scale", default="quick", help="the scale the results were run at "
                                                       "[default: quick]")
    cdoc.add_argument("--evidence", default="docs/evidence/paper-scale",
                      help="committed paper-scale verdicts [default: docs/evidence/paper-scale]")
    cdoc.add_argument("--ladder", default="docs/evidence/ladder",
                      help="committed ladder rungs and trends [default: docs/evidence/ladder]")
    cdoc.add_argument("--configfile", default="config/config.yaml",
                      help="the config whose study files declare scales and regimes "
                           "[default: config/config.yaml]")
    cdoc.add_argument("--check", action="store_true", help="compare, do not write")
    cmp = sub.add_parser(
        "compare", help="compare two results folders' tables and text outputs value by value",
        description="Compare every table the run writes (claims, merged run tables, theory, "
                    "shard tables, layer reports, study and paper tables, by key) and its text "
                    "outputs (summaries, claims pages, paper tables in Markdown, the front page, "
                    "by content) of two results folders, e.g. before and after a change meant to "
                    "keep results; print what was compared, each difference and how far each "
                    "claim's measured value moved in units of its standard error (the claims "
                    "table's se), with every verdict that changed; exit 1 when there is a "
                    "difference, 2 when a folder is missing or holds no outputs.")
    cmp.add_argument("before")
    cmp.add_argument("after")
    cmp.add_argument("--rtol", type=float, default=0.0,
                     help="relative tolerance for numbers [default: 0, exact]")
    cmp.add_argument("--shifts", metavar="CSV",
                     help="write every claim row's shift (after - before), its SE and the shift "
                          "in SE units, with both verdicts, to this CSV file")
    ev = sub.add_parser(
        "evidence", help="paper-scale verdicts run on a CPU: what fits, publish, check, views",
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
                    "side in docs/papers.md: sigprop claims-doc.")
    ev.add_argument("action", choices=["fits", "publish", "check", "views", "seal-gpu"])
    ev.add_argument("target", nargs="?", default=None,
                    help="publish: the study; seal-gpu: the folder")
    ev.add_argument("--configfile", default="config/config.yaml")
    ev.add_argument("--results", default="results", help="results folder [default: results]")
    ev.add_argument("--out", default=None, help="evidence folder [docs/evidence/paper-scale]")
    ev.add_argument("--wall-seconds", type=float, default=None,
                    help="publish: the run's measured wall time")
    ev.add_argument("--command", default="", help="publish: the command that ran it")
    ev.add_argument("--note", default="", help="publish: e.g. what else ran at the same time")
    ev.add_argument("--limit-min", type=float, default=60.0, help="fits: minutes [default: 60]")
    ld = sub.add_parser(
        "ladder", help="budget ladders of the training studies: plan, publish, trend, check",
        description="plan STUDY: the cost plan's projected CPU time of each rung of the study's "
                    "ladder (its ladder: section).  publish STUDY RUNG: copy a run of that rung "
                    "(snakemake --config 'studies=[STUDY]' 'scale_overrides={STUDY: RUNG}') to "
                    "docs/evidence/ladder/STUDY/RUNG/ with provenance.  trend STUDY: every "
                    "claim's trend across the committed rungs (trend.parquet, trend.md; refused "
                    "when a rung fails its checks).  check: every committed rung and its "
                    "provenance agree with each other and their folder and still match the "
                    "config's runs; each trend table is recomputed from its rungs and compared "
                    "column by column.")
    ld.add_argument("action", choices=["plan", "publish", "trend", "check"])
    ld.add_argument("study", nargs="?", default=None)
    ld.add_argument("rung", nargs="?", default=None, help="publish: the rung's scale")
    ld.add_argument("--configfile", default="config/config.yaml")
    ld.add_argument("--results", default="results", help="results folder [default: results]")
    ld.add_argument("--out", default="docs/evidence/ladder",
                    help="evidence folder [default: docs/evidence/ladder]")
    ld.add_argument("--wall-seconds", type=float, default=None,
                    help="publish: the run's measured wall time")
    ld.add_argument("--plan-seconds", type=float, default=None,
                    help="publish: the plan's projected wall time of the rung (ladder plan)")
    ld.add_argument("--command", default="", help="publish: the command that ran it")
    ld.add_argument("--alongside", default="", help="publish: what else ran at the same time")
    ld.add_argument("--note", default="", help="publish: anything else a reader needs")
    si = sub.add_parser(
        "stand-ins", help="write stand-in raw files of the downloaded data sets for the smoke run",
        description="Write small random files in the real raw formats (IDX, CIFAR binary, "
                    "EMNIST gzip.zip, Gisette text, Tiny ImageNet zip) under OUT/<dataset>/, and "
                    "OUT/stand-ins.yaml with their digests and sizes, to pass to snakemake with "
                    "--configfile config/config.yaml OUT/stand-ins.yaml --config scale=paper "
                    "smoke=true.  Never use them for a real run.")
    si.add_argument("out", help="folder to write into")
    si.add_argument("--datasets", default=None,
                    help="comma-separated data sets [default: every downloaded one]")
    si.add_argument("--configfile", default="config/config.yaml",
                    help="sizes fit this config's paper-scale runs (each set holds at least "
                         "its largest batch) [default: config/config.yaml]")
    return parser


PARAMS_MARKERS = ("<!-- params:start -->\n", "<!-- params:end -->")


def write_params(path: str | Path) -> bool:
    """Replace what lies between the params markers of ``path`` (config/README.md) by every
    study's parameter tables (:func:`params_text`, Markdown); True when the file changed.  A
    file without both markers is a ValueError naming it."""
    from . import atomic
    path = Path(path)
    text = path.read_text()
    start, end = PARAMS_MARKERS
    i, j = text.find(start), text.find(end)
    if i < 0 or j < i:
        raise ValueError(f"{path}: no {start.strip()} ... {end} block to replace")
    new = text[:i + len(start)] + params_text(markdown=True) + text[j:]
    if new == text:
        return False
    atomic.write_text(path, new)
    return True


def params_text(kinds: list[str] | None = None, markdown: bool = False) -> str:
    """The parameters of the given study kinds (all when None) as text or Markdown."""
    from . import registry
    from .contract import SECTIONS
    from .params import describe
    out = []
    for kind in kinds or registry.kinds():
        spec = registry.spec(kind)
        out.append(f"### `{kind}` ({spec.task}; {spec.source})\n" if markdown else
                   f"{kind} ({spec.task}; {spec.source})")
        any_rows = False
        for section in SECTIONS:
            rows = describe(spec.section_type(section))
            if not rows:
                continue
            any_rows = True
            if markdown:
                out.append(f"`{section}:`\n\n| key | type | default | meaning |\n|---|---|---|---|")
                out += [f"| `{k}` | {t} | `{d}` | {doc.replace('|', chr(92) + '|')} |"
                        for k, t, d, doc in rows]
                out.append("")
            else:
                out += [f"  {section}.{k}: {t} = {d}" + (f"  # {doc}" if doc else "")
                        for k, t, d, doc in rows]
        if not any_rows:
            out.append("No parameters.\n" if markdown else "  (no parameters)")
    return "\n".join(out).rstrip() + "\n"


def _bench(args: dict) -> int:
    from sigprop.tools import bench
    cases = bench.default_cases(args["device"])
    if args["arch"] != "fc":
        cases = [dict(bench.CONV_CASE, arch=args["arch"])]
    if args["widths"] is not None:
        cases = [c for c in cases if c["width"] in args["widths"]] or \
            [dict(c, width=w) for w in args["widths"] for c in cases if c["width"] == 32]
    for c in cases:
        if c.get("arch", "fc") == "fc":
            c.update(depth=args["depth"])
        for key, name in (("models", "models"), ("steps", "steps"), ("batch", "batch"),
                          ("activation", "activation")):
            if args[key] is not None:
                c[name] = args[key]
        c["baselines"] = tuple(b for b in args["baselines"].split(",") if b)
    unique = list({tuple(sorted(c.items())): c for c in cases}.values())
    json.dump(_jsonable(bench.run(unique, args["device"], args["repeats"])), sys.stdout,
              indent=2)
    sys.stdout.write("\n")
    return 0


def _rerun_table(args: dict) -> int:
    from sigprop.tools import rerun_table
    return rerun_table.main(["--repo", args["repo"], "--cores", str(args["cores"])]
                            + (["--keep"] if args["keep"] else []))


def _evidence(args: dict) -> int:
    from pathlib import Path

    from sigprop.publish import evidence as E
    out = Path(args["out"]) if args["out"] else E.EVIDENCE_DIR
    act = args["action"]
    try:
        if act == "fits":
            from sigprop.tools import plan as P
            studies = E.paper_studies(args["configfile"])
            result = P.plan(args["configfile"], ["scale=paper", "smoke=false",
                                                 "scale_overrides={}"], P.DEFAULT_EFFICIENCY, True)
            rows = E.fits(result, studies, args["limit_min"] * 60)
            print(f"| study | block | runs | shards | CPU (plan) | download | fits "
                  f"{args['limit_min']:g} min |\n|---|---|---|---|---|---|---|")
            for r in rows:
                print(f"| {r['study']} | {r['block']} | {r['runs']} | {r['shards']} | "
                      f"{r['cpu_s'] / 60:.1f} min{' (proxy)' if r['proxy'] else ''} | "
                      f"{', '.join(r['downloads']) or '-'} | {'yes' if r['fits'] else 'no'} |")
            return 0
        if act == "publish":
            if not args["target"]:
                print("sigprop evidence publish: name the study", file=sys.stderr)
                return 2
            dest = E.publish(args["target"], args["results"], out, args["configfile"],
                             args["wall_seconds"], args["command"], args["note"])
            print(f"wrote {dest}")
            return 0
        if act == "check":
            problems = E.check(out, args["configfile"])
            for p in problems:
                print(p, file=sys.stderr)
            return 1 if problems else 0
        if act == "seal-gpu":
            if not args["target"]:
                print("sigprop evidence seal-gpu: name the folder", file=sys.stderr)
                return 2
            print(f"wrote {E.seal_gpu(args['target'])}")
            return 0
        written = E.write_views(out, args["configfile"])
        for p in written:
            print(f"wrote {p}")
        return 0
    except (KeyError, ValueError, FileNotFoundError) as e:
        print(f"sigprop evidence {act}: {e}", file=sys.stderr)
        return 2


def _ladder(args: dict) -> int:
    from pathlib import Path

    from sigprop.publish import ladder as L
    act, study = args["action"], args["study"]
    if act != "check" and not study:
        print(f"sigprop ladder {act}: name the study", file=sys.stderr)
        return 2
    try:
        if act == "plan":
            from sigprop.tools import plan as P
            lad = L.ladder_for(args["configfile"], study)
            print(f"| rung | budget ({lad.budget}) | runs | shards | CPU job time (plan) | "
                  "wall on 2 job slots |\n|---|---|---|---|---|---|")
            for r in lad.rungs:
                res = P.plan(args["configfile"], [
                    "smoke=false", f"studies=[{study}]",
                    "scale_overrides={" + f"{study}: {r.scale}" + "}"], P.DEFAULT_EFFICIENCY, True)
                cpu = sum(b["cpu_h_total"] for b in res["blocks"]) * 3600
                runs = sum(b["runs"] for b in res["blocks"])
                shards = sum(b["shards"] for b in res["blocks"])
                print(f"| {r.scale} | {r.budget:g} | {runs} | {shards} | {cpu / 60:.1f} min | "
                      f"{cpu / 120:.1f} min or more |")
            return 0
        if act == "publish":
            if not args["rung"]:
                print("sigprop ladder publish: name the rung", file=sys.stderr)
                return 2
            dest = L.publish_rung(study, args["rung"], args["results"], args["out"],
                                  args["configfile"], args["wall_seconds"], args["plan_seconds"],
                                  args["command"], args["alongside"], args["note"])
            print(f"wrote {dest}")
            return 0
        if act == "trend":
            print(f"wrote {L.write_trend(study, args['out'], args['configfile'])}")
            return 0
        problems = L.check(Path(args["out"]), args["configfile"])
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    except (KeyError, ValueError, FileNotFoundError) as e:
        print(f"sigprop ladder {act}: {e}", file=sys.stderr)
        return 2


EXPECTED_ERRORS = (ValueError, KeyError, OSError)
"""What a command ends with in one line naming its input (the config, a file, a study, a shard,
an argument): a bad config or table (``ConfigError`` and ``TableError`` are ``ValueError``s), an
unknown name, a file that cannot be read or written.  Set ``SIGPROP_TRACEBACK=1`` to see the
traceback instead."""


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the subcommand it names (:data:`SUBCOMMANDS`)."""
    parser = build_parser(theory_commands())
    args = vars(parser.parse_args(argv))
    group = args.pop("group")
    try:
        return SUBCOMMANDS[group](args)
    except EXPECTED_ERRORS as e:
        if os.environ.get("SIGPROP_TRACEBACK"):
            raise
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        if isinstance(e, OSError) and e.filename:
            msg = f"{e.filename}: {e.strerror or msg}"
        print(f"sigprop {group}: {' '.join(str(msg).split())}", file=sys.stderr)
        return 2


def _bench_threads(args: dict) -> int:
    from sigprop.tools import bench_threads
    argv = [args["study"], "--configfile", args["configfile"], "--steps", str(args["steps"])]
    if args["shard"]:
        argv += ["--shard", args["shard"]]
    if args["config"]:
        argv += ["--config", *args["config"]]
    json.dump(_jsonable(bench_threads.bench(
        args["study"], args["shard"], args["config"], args["configfile"], args["steps"],
        args["repeats"], tuple(args["arrangement"] or bench_threads.ARRANGEMENTS), argv)),
        sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _profile_shard(args: dict) -> int:
    from sigprop.tools import profile_shard
    json.dump(_jsonable(profile_shard.profile(
        args["study"], args["shard"], args["config"], args["configfile"], args["steps"],
        args["warmup"], args["threads"], args["device"], args["top"])), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _bench_dag(args: dict) -> int:
    from sigprop.tools import bench
    if args["runs"] < 1:
        raise ValueError(f"--runs {args['runs']}: expected a positive number of runs")
    json.dump(_jsonable(bench.dag_bench(args["runs"], args["shard_size"], args["workdir"],
                                        args["dry_run"], args["snakefile"])),
              sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _params(args: dict) -> int:
    from . import registry
    unknown = [k for k in args["kinds"] if k not in registry.kinds()]
    if unknown:
        print(f"sigprop params: unknown study kind(s) {unknown} (known: "
              f"{', '.join(registry.kinds())})", file=sys.stderr)
        return 2
    if args["write"]:
        try:
            changed = write_params(args["write"])
        except (OSError, ValueError) as e:
            print(f"sigprop params --write: {e}", file=sys.stderr)
            return 2
        print(f"{args['write']}: {'updated' if changed else 'already up to date'}",
              file=sys.stderr)
        return 0
    sys.stdout.write(params_text(args["kinds"] or None, args["markdown"]))
    return 0


def _plan(args: dict) -> int:
    from sigprop.tools import plan as P
    eff = args["efficiency"]
    if eff is not None and not 0 < eff <= 1:
        print(f"sigprop plan: --efficiency {eff}: expected a fraction in (0, 1]", file=sys.stderr)
        return 2
    if args["gpu"] not in P.GPUS:
        print(f"sigprop plan: --gpu {args['gpu']}: known GPUs {sorted(P.GPUS)}", file=sys.stderr)
        return 2
    if args["target"] != "cpu" and args["target"] not in P.GPUS:
        print(f"sigprop plan: --target {args['target']}: cpu or one of {sorted(P.GPUS)}",
              file=sys.stderr)
        return 2
    if args["resources"] and args["target"] == "cpu" and args["no_calibrate"]:
        print("sigprop plan: --target cpu needs the CPU calibration (drop --no-calibrate)",
              file=sys.stderr)
        return 2
    try:
        measured = {} if eff is not None else P.measured_efficiencies()
    except ValueError as e:
        print(f"sigprop plan: {e}", file=sys.stderr)
        return 2
    result = P.plan(args["configfile"], args["config"], eff, not args["no_calibrate"],
                    measured=measured, recalibrate=args["recalibrate"])
    if args["json"]:
        from . import atomic
        atomic.write_text(args["json"], json.dumps(_jsonable(result), indent=2) + "\n")
    if args["resources"]:
        from . import atomic
        try:
            res = P.resources(result, args["target"])
        except ValueError as e:
            print(f"sigprop plan: {e}", file=sys.stderr)
            return 2
        atomic.write_text(args["resources"], json.dumps(res, indent=2) + "\n")
        print(f"wrote {args['resources']}: requests of "
              f"{sum(len(v) for v in res['shards'].values())} shards on {args['target']}",
              file=sys.stderr)
    sys.stdout.write(P.table(result, args["gpu"]))
    return 0


def _gpu_check(args: dict) -> int:
    # gpu_check imports torch for the CUDA check; the rest loads once a GPU is there
    from sigprop.tools import gpu_check
    return gpu_check.main(args)


def _claims_doc(args: dict) -> int:
    from pathlib import Path

    from .claims.doc_tables import render
    path = Path(args["file"])
    old = path.read_text()
    info = {}
    if Path(args["configfile"]).exists():
        from sigprop.tools import plan as P
        _, studies = P.load(args["configfile"], [f"scale={args['scale']}"])
        info = {n: st.summary_info() for n, st in studies.items()}
    new, found = render(old, args["results"], args["scale"], args["evidence"], info,
                        args["ladder"])
    if not found:
        print(f"sigprop claims-doc: {path} has no <!-- claims:NNN:{args['scale']}:start --> "
              "block", file=sys.stderr)
        return 2
    if args["check"]:
        if new != old:
            print(f"{path}: the verdict tables of papers {found} differ from "
                  f"{args['results']}: rerun `sigprop claims-doc {path}`", file=sys.stderr)
            return 1
        return 0
    from . import atomic
    atomic.write_text(str(path), new)
    print(f"{path}: papers {', '.join(found)} ({args['scale']}) from {args['results']}")
    return 0


def _stand_ins(args: dict) -> int:
    from .data.stand_ins import write_stand_ins
    from sigprop.tools import plan as P
    from .data.stand_ins import sizes_for
    names = args["datasets"].split(",") if args["datasets"] else None
    try:
        from .data import registry
        for name in names or []:    # a wrong name fails before the studies are built
            registry.get(name)
        _, studies = P.load(args["configfile"], ["scale=paper", "smoke=true",
                                                 "scale_overrides={}"])
        runs = [r for s in studies.values() for r in s.runs]
        frag = write_stand_ins(args["out"], names, sizes_for(runs, names))
    except (KeyError, ValueError) as e:
        print(f"sigprop stand-ins: {e}", file=sys.stderr)
        return 2
    for name, n in frag["data"]["sizes"].items():
        print(f"{name}: {n['n_train']} train, {n['n_test']} test")
    print(f"wrote {args['out']}/stand-ins.yaml")
    return 0


def _compare(args: dict) -> int:
    from sigprop.tools.compare import CompareError, summary
    try:
        text, n = summary(args["before"], args["after"], args["rtol"], args.get("shifts"))
    except CompareError as e:
        print(f"sigprop compare: {e}", file=sys.stderr)
        return 2
    print(text)
    return 1 if n else 0


def _bench_alloc(args: dict) -> int:
    from sigprop.tools.bench_alloc import alloc_bench
    try:
        res = alloc_bench(args["sizes"], args["repeats"])
    except (ValueError, RuntimeError) as e:
        print(e, file=sys.stderr)
        return 2
    json.dump(_jsonable(res), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _bench_sweep(args: dict) -> int:
    from sigprop.tools import bench
    json.dump(_jsonable(bench.sweep_bench(**args)), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _theory(args: dict) -> int:
    cmd = theory_commands()[args.pop("command")]
    try:
        result = cmd["fn"](**args)
    except (ValueError, TypeError) as e:
        print(f"sigprop theory {cmd['name']}: {e}", file=sys.stderr)
        return 2
    json.dump({"command": cmd["name"], "params": _jsonable(args), "result": _jsonable(result)},
              sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")
    return 0


SUBCOMMANDS = {
    "bench": _bench,
    "profile-shard": _profile_shard,
    "bench-threads": _bench_threads,
    "bench-dag": _bench_dag,
    "rerun-table": _rerun_table,
    "params": _params,
    "plan": _plan,
    "gpu-check": _gpu_check,
    "claims-doc": _claims_doc,
    "evidence": _evidence,
    "ladder": _ladder,
    "stand-ins": _stand_ins,
    "compare": _compare,
    "bench-alloc": _bench_alloc,
    "bench-sweep": _bench_sweep,
    "theory": _theory,
}
"""Each subcommand's function: it takes the parsed arguments and returns the exit code."""


if __name__ == "__main__":
    raise SystemExit(main())
