"""``sigprop bench <what>``: the benchmarks and profilers, one sub-command each.

Their arguments live here; their work in :mod:`sigprop.tools.bench` (``shard``, ``dag``,
``sweep``), :mod:`sigprop.tools.bench_threads`, :mod:`sigprop.tools.profile_shard`,
:mod:`sigprop.tools.bench_alloc` and :mod:`sigprop.tools.rerun_table`, which import torch or
Snakemake's machinery and are loaded only when their bench runs.  Each prints JSON except
``reruns``, a Markdown table.  A new bench is a function here that adds its parser (setting
``func`` to its handler), listed in :func:`register`.

Papers cited by prefix: 004 = Chen, Wang, Zhao, Papailiopoulos, Koutris (2018),
arXiv:1806.03791.
"""

from __future__ import annotations

import sys

from sigprop.tools.json_out import print_json

COMMANDS = ("bench",)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(t) for t in text.split(","))


def register(subparsers) -> None:
    """``sigprop bench`` and its benches."""
    bench = subparsers.add_parser(
        "bench",
        help="benchmarks and profiles: shard, threads, profile, dag, alloc, sweep, reruns",
        description="Benchmarks and profilers, each printing JSON (reruns: a Markdown table). "
        "Use 'sigprop bench <what> --help' for one's arguments.",
    )
    benches = bench.add_subparsers(dest="bench", required=True, metavar="<what>")
    for add in (
        _shard_parser,
        _threads_parser,
        _profile_parser,
        _dag_parser,
        _alloc_parser,
        _sweep_parser,
        _reruns_parser,
    ):
        add(benches)


def _shard_parser(benches) -> None:
    p = benches.add_parser(
        "shard",
        help="benchmark a shard against what a PyTorch user would write (JSON)",
        description="Train the same M fully connected models as one shard, one after another "
        "as ordinary nn.Modules (loop), with torch.func ensembling (vmap over "
        "functional_call) and with a minimal stacked baddbmm step; print the fastest "
        "of --repeats interleaved timings of each, their spread, GFLOP/s and the "
        "fraction of a float32 matmul peak measured on the spot, as JSON.",
    )
    p.add_argument(
        "--widths",
        type=lambda s: [int(t) for t in s.split(",")],
        default=None,
        help="comma-separated widths [default: the eight cases of "
        "docs/performance.md: widths 32, 256 x batches 32, 128 x tanh, relu]",
    )
    p.add_argument("--models", type=int, default=None, help="models per shard [default: 64]")
    p.add_argument("--depth", type=int, default=20, help="hidden layers [default: 20]")
    p.add_argument("--steps", type=int, default=None, help="timed steps [default: 20]")
    p.add_argument("--batch", type=int, default=None, help="batch size [default: 32 and 128]")
    p.add_argument("--activation", default=None, help="activation [default: tanh and relu]")
    p.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="interleaved timings of each way, fastest kept [default: 3]",
    )
    p.add_argument(
        "--baselines",
        default="loop,func,minimal",
        help="comma-separated subset of loop, func, minimal [default: all]",
    )
    p.add_argument(
        "--arch",
        default="fc",
        help="fc (the eight cases), or a convolutional family such as resnet32: "
        "grouped convolutions against the loop and torch.func on 3x32x32 "
        "inputs [default: fc]",
    )
    p.add_argument("--device", default="auto", help="auto, cpu or cuda[:N] [default: auto]")
    p.set_defaults(func=_shard)


def _shard(args: dict) -> int:
    from sigprop.tools import bench

    cases = bench.default_cases(args["device"])
    if args["arch"] != "fc":
        cases = [dict(bench.CONV_CASE, arch=args["arch"])]
    if args["widths"] is not None:
        cases = [c for c in cases if c["width"] in args["widths"]] or [
            dict(c, width=w) for w in args["widths"] for c in cases if c["width"] == 32
        ]
    for c in cases:
        if c.get("arch", "fc") == "fc":
            c.update(depth=args["depth"])
        for key in ("models", "steps", "batch", "activation"):
            if args[key] is not None:
                c[key] = args[key]
        c["baselines"] = tuple(b for b in args["baselines"].split(",") if b)
    unique = list({tuple(sorted(c.items())): c for c in cases}.values())
    print_json(bench.run(unique, args["device"], args["repeats"]))
    return 0


def _threads_parser(benches) -> None:
    p = benches.add_parser(
        "threads",
        help="a training shard alone, as two threads, as two processes and beside a "
        "Python thread (JSON)",
        description="Train one shard of STUDY (its costliest by default) for --steps steps, one "
        "torch thread, alone, as two copies in two threads of one process, as two "
        "copies in two processes, and beside a thread running a pure-Python loop; "
        "print the fastest of --repeats interleaved timings of each, its spread and "
        "its ratio to alone, as JSON: why a local run's jobs run in worker processes "
        "(docs/performance.md, 'Where jobs run').",
    )
    p.add_argument("study", help="a training study of the config, e.g. width_batch")
    p.add_argument("--shard", default=None, help="shard id [default: the costliest]")
    p.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE")
    p.add_argument("--configfile", default="config/config.yaml")
    p.add_argument("--steps", type=int, default=100, help="timed steps [default: 100]")
    p.add_argument("--repeats", type=int, default=3, help="[default: 3]")
    p.add_argument(
        "--arrangement",
        action="append",
        default=None,
        help="alone, two_threads, two_processes or beside_python (repeatable) [default: all four]",
    )
    p.set_defaults(func=_threads)


def _threads(args: dict) -> int:
    from sigprop.tools import bench_threads

    argv = [args["study"], "--configfile", args["configfile"], "--steps", str(args["steps"])]
    if args["shard"]:
        argv += ["--shard", args["shard"]]
    if args["config"]:
        argv += ["--config", *args["config"]]
    print_json(
        bench_threads.bench(
            args["study"],
            args["shard"],
            args["config"],
            args["configfile"],
            args["steps"],
            args["repeats"],
            tuple(args["arrangement"] or bench_threads.ARRANGEMENTS),
            argv,
        )
    )
    return 0


def _profile_parser(benches) -> None:
    p = benches.add_parser(
        "profile",
        help="where a training shard's step goes: torch.profiler's top operators (JSON)",
        description="Build STUDY as the workflow does, draw one shard's initial weights, train "
        "--warmup steps and then --steps steps under torch.profiler; print the step "
        "time, host page faults per step and the operators with the most self time, "
        "as JSON. Reads the prepared data set results/data/<name>.npz.",
    )
    p.add_argument("study", help="a training study of the config, e.g. trainable_depth")
    p.add_argument(
        "--shard",
        default=None,
        help="shard id [default: the shard with the most FLOPs by sigprop plan's count]",
    )
    p.add_argument(
        "--config",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="overrides as for snakemake --config, e.g. scale=paper",
    )
    p.add_argument("--configfile", default="config/config.yaml")
    p.add_argument("--steps", type=int, default=10, help="profiled steps [default: 10]")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first [default: 3]")
    p.add_argument(
        "--threads", type=int, default=1, help="torch threads, as a local job gets [default: 1]"
    )
    p.add_argument("--device", default="cpu", help="cpu, auto or cuda[:N] [default: cpu]")
    p.add_argument("--top", type=int, default=12, help="operators listed [default: 12]")
    p.set_defaults(func=_profile)


def _profile(args: dict) -> int:
    from sigprop.tools import profile_shard

    print_json(
        profile_shard.profile(
            args["study"],
            args["shard"],
            args["config"],
            args["configfile"],
            args["steps"],
            args["warmup"],
            args["threads"],
            args["device"],
            args["top"],
        )
    )
    return 0


def _dag_parser(benches) -> None:
    p = benches.add_parser(
        "dag",
        help="time a big grid's config expansion and Snakemake DAG (JSON)",
        description="Write a study whose grid has --runs runs, time its expansion into shards "
        "and 'snakemake -n' on it, and print the job count per rule as JSON: one "
        "training job per shard, not per run.",
    )
    p.add_argument("--runs", type=int, default=10_000, help="runs in the grid [default: 10000]")
    p.add_argument(
        "--shard-size",
        dest="shard_size",
        type=int,
        default=64,
        help="models per shard [default: 64]",
    )
    p.add_argument(
        "--workdir",
        default=None,
        help="folder for the config and Snakemake's state [default: a temporary one]",
    )
    p.add_argument(
        "--no-dry-run", dest="dry_run", action="store_false", help="time the config expansion only"
    )
    p.add_argument(
        "--snakefile",
        default=None,
        help="workflow/Snakefile of this checkout [default: next to the package]",
    )
    p.set_defaults(func=_dag)


def _dag(args: dict) -> int:
    from sigprop.tools import bench

    if args["runs"] < 1:
        raise ValueError(f"--runs {args['runs']}: expected a positive number of runs")
    print_json(
        bench.dag_bench(
            args["runs"], args["shard_size"], args["workdir"], args["dry_run"], args["snakefile"]
        )
    )
    return 0


def _alloc_parser(benches) -> None:
    p = benches.add_parser(
        "alloc",
        help="time a large CPU allocation in the main thread and in a worker thread, "
        "huge pages off and on (JSON)",
        description="Time y = x * 2 on float32 tensors of each size in the main thread and in a "
        "worker thread (where Snakemake runs a local run's jobs), with PyTorch's "
        "huge pages for large tensors off and on, and print the fastest call, its "
        "spread and the page faults per call as JSON (sigprop.tools.bench_alloc).",
    )
    p.add_argument(
        "--sizes",
        type=_ints,
        default=(16, 100, 300),
        help="tensor sizes in MB [default: 16,100,300]",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=10,
        help="timed calls per case, after two untimed [default: 10]",
    )
    p.set_defaults(func=_alloc)


def _alloc(args: dict) -> int:
    from sigprop.tools.bench_alloc import alloc_bench

    try:
        res = alloc_bench(args["sizes"], args["repeats"])
    except (ValueError, RuntimeError) as e:
        print(e, file=sys.stderr)
        return 2
    print_json(res)
    return 0


def _sweep_parser(benches) -> None:
    p = benches.add_parser(
        "sweep",
        help="time a batch-size sweep: micro-batched shard vs one shard per batch size "
        "vs padding (JSON)",
        description="Train the same batch-size sweep (004 Sec. 5) for the same epochs as one "
        "micro-batched shard, as one shard per batch size, and as one padded shard, "
        "and print the wall times as JSON (sigprop.tools.bench.sweep_bench).",
    )
    p.add_argument(
        "--batches",
        type=_ints,
        default=(8, 16, 32, 64, 128, 256, 512),
        help="[default: 8,16,...,512]",
    )
    p.add_argument("--models-per-batch", dest="models_per_batch", type=int, default=10)
    p.add_argument("--width", type=int, default=36)
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--epochs", type=float, default=2.0)
    p.add_argument("--device", default="auto", help="auto, cpu or cuda[:N] [default: auto]")
    p.add_argument(
        "--repeats", type=int, default=3, help="timings per layout, fastest kept [default: 3]"
    )
    p.set_defaults(func=_sweep)


def _sweep(args: dict) -> int:
    from sigprop.tools import bench

    keys = ("batches", "models_per_batch", "width", "depth", "epochs", "device", "repeats")
    print_json(bench.sweep_bench(**{k: args[k] for k in keys}))
    return 0


def _reruns_parser(benches) -> None:
    p = benches.add_parser(
        "reruns",
        help="what an edit of each shared layer reruns (Markdown table)",
        description="In a temporary copy of this checkout with its finished run's results/ and "
        ".snakemake/, align Snakemake's metadata with the code (--touch), then make "
        "one edit per module and count the jobs 'snakemake -n' plans "
        "(sigprop.tools.rerun_table; docs/design.md).",
    )
    p.add_argument("--repo", default=".", help="the checkout, with a finished run [default: .]")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--keep", action="store_true", help="keep the temporary copy")
    p.set_defaults(func=_reruns)


def _reruns(args: dict) -> int:
    from sigprop.tools import rerun_table

    return rerun_table.main(
        ["--repo", args["repo"], "--cores", str(args["cores"])]
        + (["--keep"] if args["keep"] else [])
    )
