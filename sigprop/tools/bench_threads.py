"""Why a local run's jobs run in processes: ``sigprop bench threads STUDY [--shard ID]``.

Trains one shard of a study (:func:`sigprop.tools.profile_shard.shard_trainer`, its costliest
by default) for ``--steps`` steps, one torch thread, after three untimed ones, in four
arrangements, each ``--repeats`` times, interleaved:

- ``alone``: the shard in this process's main thread;
- ``two_threads``: two copies of the shard in two threads of this process (jobs as threads of
  one Snakemake process: they share the interpreter lock, which a torch operator releases and
  must take back when it returns);
- ``two_processes``: two copies in two processes, each started as ``--arrangement alone``
  (jobs as :mod:`sigprop.steps.workers` runs them);
- ``beside_python``: the shard beside a thread running a pure-Python loop (a figure or a merge
  job in a thread), at the interpreter's switch interval.

Prints, as JSON, the fastest time of each arrangement (the slower copy where there are two),
its spread over the repeats ((max - min) / min) and the ratio to ``alone``.  A measuring tool,
not a test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import torch

ARRANGEMENTS = ("alone", "two_threads", "two_processes", "beside_python")


def _train(tr, steps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(steps):
        tr.train_step()
    return time.perf_counter() - t0


def _warm(tr) -> None:
    for _ in range(3):
        tr.train_step()


def one(arrangement: str, make, steps: int, argv: list[str]) -> float:
    """Seconds of ``steps`` steps in one arrangement (the slower copy where there are two)."""
    if arrangement == "alone":
        tr = make()
        _warm(tr)
        return _train(tr, steps)
    if arrangement == "two_threads":
        trs, out = [make(), make()], []
        for tr in trs:
            _warm(tr)
        th = [threading.Thread(target=lambda t=tr: out.append(_train(t, steps))) for tr in trs]
        for t in th:
            t.start()
        for t in th:
            t.join()
        return max(out)
    if arrangement == "two_processes":
        cmd = [
            sys.executable,
            "-m",
            "sigprop.cli",
            "bench",
            "threads",
            *argv,
            "--arrangement",
            "alone",
            "--repeats",
            "1",
        ]
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [json.loads(p.communicate()[0]) for p in procs]
        if any(p.returncode for p in procs):
            raise SystemExit("sigprop bench threads: a child process failed")
        return max(o["arrangements"]["alone"]["s"] for o in outs)
    if arrangement == "beside_python":
        tr, stop = make(), threading.Event()
        _warm(tr)

        def busy():
            x = 0
            while not stop.is_set():
                for i in range(1000):
                    x += i * i

        b = threading.Thread(target=busy)
        b.start()
        try:
            return _train(tr, steps)
        finally:
            stop.set()
            b.join()
    raise SystemExit(
        f"sigprop bench threads: unknown arrangement {arrangement!r} "
        f"(known: {', '.join(ARRANGEMENTS)})"
    )


def bench(
    study: str,
    shard_id: str | None = None,
    config: list[str] | None = None,
    configfile: str = "config/config.yaml",
    steps: int = 100,
    repeats: int = 3,
    arrangements: tuple[str, ...] = ARRANGEMENTS,
    argv: list[str] | None = None,
    results: str = "results",
) -> dict:
    """See the module docstring; ``argv``: this command's own arguments, for the child
    processes of ``two_processes``."""
    from sigprop.tools.profile_shard import shard_trainer
    from sigprop.train import host_memory

    torch.set_num_threads(1)
    host_memory.keep_freed_memory()

    def make():
        return shard_trainer(
            study, shard_id, config, configfile, results=results, tool="sigprop bench threads"
        )[0]

    probe, st, shard = shard_trainer(
        study, shard_id, config, configfile, results=results, tool="sigprop bench threads"
    )
    del probe
    times = {a: [] for a in arrangements}
    for _ in range(repeats):
        for a in arrangements:
            times[a].append(one(a, make, steps, argv or []))
    r0 = shard.runs[0]
    best = {a: min(v) for a, v in times.items()}
    return {
        "study": study,
        "shard": shard.shard_id,
        "models": len(shard.runs),
        "arch": r0.arch,
        "width": r0.width,
        "depth": r0.depth,
        "batch": r0.batch_size,
        "activation": r0.activation,
        "steps": steps,
        "repeats": repeats,
        "switch_interval_s": sys.getswitchinterval(),
        "arrangements": {
            a: {
                "s": best[a],
                "spread": (max(v) - min(v)) / min(v),
                "of_alone": (best[a] / best["alone"] if "alone" in best else None),
            }
            for a, v in times.items()
        },
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
