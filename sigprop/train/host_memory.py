"""Keep freed host memory in the process between training steps (glibc's ``mallopt``).

A training step allocates and frees the same tensors at every step.  With glibc's default
settings, blocks of 128 KB or more (the threshold adapts, up to 32 MB) are ``mmap``-ed and handed
back to the kernel when freed, and the top of the heap is trimmed when more than twice that is
free; the next step then takes a page fault for every 4 KB page it touches again.  Measured on the
2-core machine of docs/performance.md (``sigprop bench shard``'s tanh, width 256, batch 128
case): about 78,000 minor page faults a step, for the shard and for the minimal stacked step
alike, and about 15 % of the step's time; shards of 64 width-32 nets took 15-1,000 faults a
step (it varies from run to run), the minimal step 0-600.  After :func:`keep_freed_memory` the
wide steps take none and the narrow ones 0-15.

The price is that memory freed by one step stays mapped in the process, ready for the next: the
process's resident size stays at its high-water mark instead of falling between steps.  A job
that is its own process loses nothing by that: a local run's jobs each run in their own worker
process (:mod:`sigprop.steps.workers`), which ends with the job, and a cluster job is its own
process too.

Only glibc has ``mallopt``; elsewhere (macOS, musl) this does nothing and says so.  Setting
``SIGPROP_KEEP_FREED_MEMORY=0`` turns it off.

That is not enough in a thread other than the main one (a step run in Snakemake's threads with
``SIGPROP_JOB_PROCESSES=0``; a worker process runs its job in its main thread): glibc gives
each thread its own arena, whose heaps
are at most 64 MB, so a tensor larger than that is ``mmap``-ed when made and unmapped when freed
whatever the thresholds say, and the next step faults on every 4 KB page of it again
(``sigprop bench alloc``: a 100 MB ``x * 2`` took 25,600 faults and 75 ms a call in a thread,
0 and 10 ms in the main thread).  PyTorch can put CPU tensors of 2 MB or more on transparent
huge pages (``THP_MEM_ALLOC_ENABLE=1`` in the environment before the run starts; it reads the
variable once): a fault then maps 2 MB, and the same call took 562 faults and 14 ms in a thread.
It is not switched on here because it also made some 4-48 MB tensors slower in a thread (4 MB:
0.09 -> 1.4 ms a call) and the default run, whose tensors are small, showed no gain (one run,
not a clean comparison); it is
worth trying for paper-scale shards whose activations run to hundreds of MB
(:func:`huge_pages_requested` says whether it is on; ``sigprop bench shard`` records it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import resource
from pathlib import Path

log = logging.getLogger("sigprop.host_memory")

M_TRIM_THRESHOLD = -1  # glibc <malloc.h>
M_MMAP_THRESHOLD = -3
# larger than any tensor a CPU step allocates: every block comes from the heap and is reused
THRESHOLD = 1 << 30
ENV = "SIGPROP_KEEP_FREED_MEMORY"
THP_ENV = "THP_MEM_ALLOC_ENABLE"  # read by PyTorch (c10's alloc_cpu) at its first allocation
THP_SYSFS = Path("/sys/kernel/mm/transparent_hugepage/enabled")

_STATE: dict = {}


def keep_freed_memory() -> bool:
    """Ask glibc to serve blocks up to :data:`THRESHOLD` bytes from the heap and never to trim
    it (``mallopt(M_MMAP_THRESHOLD)``, ``mallopt(M_TRIM_THRESHOLD)``); once per process.  True
    when the settings are in force, False where there is no glibc or ``SIGPROP_KEEP_FREED_MEMORY``
    is ``0``."""
    if "on" in _STATE:
        return _STATE["on"]
    on = False
    if os.environ.get(ENV, "1") == "0":
        log.info("%s=0: glibc's malloc keeps its defaults", ENV)
    else:
        libc = glibc()
        if libc is None:
            log.info("no glibc mallopt here: host memory settings unchanged")
        else:
            on = bool(libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD)) and bool(
                libc.mallopt(M_TRIM_THRESHOLD, THRESHOLD)
            )
            if not on:
                log.warning("glibc refused mallopt(%d): host memory settings unchanged", THRESHOLD)
    _STATE["on"] = on
    return on


def huge_pages_requested() -> bool:
    """True when PyTorch puts CPU tensors of 2 MB or more on transparent huge pages: the user set
    ``THP_MEM_ALLOC_ENABLE=1`` and the kernel grants huge pages on request (``always`` or
    ``madvise`` in :data:`THP_SYSFS`)."""
    return os.environ.get(THP_ENV) == "1" and thp_mode() in ("always", "madvise")


def thp_mode() -> str:
    """The kernel's transparent huge page mode (``always``, ``madvise``, ``never``), or
    ``unknown`` where :data:`THP_SYSFS` cannot be read (not Linux)."""
    try:
        text = THP_SYSFS.read_text()
    except OSError:
        return "unknown"
    return text[text.index("[") + 1 : text.index("]")] if "[" in text else "unknown"


def minor_faults() -> int:
    """Minor page faults of this process so far (``getrusage``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def glibc():
    """This process's C library when it is glibc (which has ``mallopt``), else None."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018 (glibc only: the lookup raises elsewhere)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        return libc
    except (OSError, AttributeError):
        return None
