"""What a large CPU allocation costs in the main thread and in a worker thread:
``sigprop bench alloc [--sizes 16,100,300] [--repeats 10]``.

A step run in a thread of the Snakemake process (``SIGPROP_JOB_PROCESSES=0``; by default each
job runs in the main thread of its own worker process, :mod:`sigprop.steps.workers`) is in a
worker thread.  glibc gives each thread its own arena,
whose heaps are at most 64 MB, so a tensor larger than that is ``mmap``-ed when it is made and
unmapped when it is freed, and the next step faults on every page again, whatever
:func:`sigprop.train.host_memory.keep_freed_memory` asked for (that setting reaches the main
arena).  This command times ``y = x * 2`` on float32 tensors of each size (one torch thread,
host memory kept as in a job) in the main thread and in a worker thread, with PyTorch's huge
pages for large tensors off and on (``THP_MEM_ALLOC_ENABLE``, which PyTorch reads once per
process, so each setting runs in its own interpreter), and prints per case the fastest call
(ms) of ``--repeats`` after two untimed ones, the spread, and the median minor page faults a
call, as JSON.  It measures; it is not a test (tests/test_host_memory.py checks the effect).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from sigprop.train import host_memory

_SCRIPT = r"""
import json, statistics, sys, threading, time
from sigprop.train import host_memory as hm
import torch
kept = hm.keep_freed_memory()
torch.set_num_threads(1)
sizes, repeats = json.loads(sys.argv[1]), int(sys.argv[2])
rows = []
def case(where, mb):
    x = torch.ones(mb * (1 << 20) // 4)
    ts, fs = [], []
    for i in range(repeats + 2):
        f0, t0 = hm.minor_faults(), time.perf_counter()
        y = x * 2.0
        del y
        if i >= 2:
            ts.append(time.perf_counter() - t0)
            fs.append(hm.minor_faults() - f0)
    rows.append({"where": where, "mb": mb, "ms": 1e3 * min(ts),
                 "spread": (max(ts) - min(ts)) / min(ts),
                 "faults_per_call": statistics.median(fs)})
for mb in sizes:
    case("main", mb)
    t = threading.Thread(target=case, args=("thread", mb))
    t.start()
    t.join()
print(json.dumps({"keep_freed_memory": kept, "rows": rows}))
"""


def alloc_bench(sizes: tuple[int, ...] = (16, 100, 300), repeats: int = 10) -> dict:
    """Run :data:`_SCRIPT` with huge pages off and on; see the module docstring."""
    if not sizes or min(sizes) <= 0 or repeats < 1:
        raise ValueError(
            f"sigprop bench alloc: sizes must be positive MB and repeats >= 1, got "
            f"{sizes}, {repeats}"
        )
    from sigprop.tools.bench import machine

    out = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine(),
        "cpus": os.cpu_count(),
        "thp_mode": host_memory.thp_mode(),
        "glibc": host_memory.glibc() is not None,
        "repeats": repeats,
        "cases": [],
    }
    for thp in ("0", "1"):
        env = {**os.environ, host_memory.THP_ENV: thp}
        p = subprocess.run(
            [sys.executable, "-c", _SCRIPT, json.dumps(list(sizes)), str(repeats)],
            env=env,
            capture_output=True,
            text=True,
        )
        if p.returncode:
            raise RuntimeError(
                f"sigprop bench alloc: the measuring interpreter failed:\n{p.stderr[-2000:]}"
            )
        res = json.loads(p.stdout.strip().splitlines()[-1])
        out["keep_freed_memory"] = res["keep_freed_memory"]
        out["cases"] += [{"huge_pages": thp == "1", **r} for r in res["rows"]]
    return out
