"""Keep freed host memory in the process between training steps (glibc's ``mallopt``).

A training step allocates and frees the same tensors at every step.  With glibc's default
settings, blocks of 128 KB or more (the threshold adapts, up to 32 MB) are ``mmap``-ed and handed
back to the kernel when freed, and the top of the heap is trimmed when more than twice that is
free; the next step then takes a page fault for every 4 KB page it touches again.  Measured on the
2-core machine of docs/performance.md (``sigprop bench``'s tanh, width 256, batch 128 case): about
78,000 minor page faults a step, for the shard and for the minimal stacked step alike, and about
15 % of the step's time; shards of 64 width-32 nets took 15-1,000 faults a step (it varies from
run to run), the minimal step 0-600.  After :func:`keep_freed_memory` the wide steps take none and
the narrow ones 0-15.

The price is that memory freed by one step stays mapped in the process, ready for the next: the
process's resident size stays at its high-water mark instead of falling between steps.  A job
that is its own process (a cluster job) loses nothing by that; the workflow's local runs hold
all jobs in one process, where the high-water mark is what the largest job needed anyway.

Only glibc has ``mallopt``; elsewhere (macOS, musl) this does nothing and says so.  Setting
``SIGPROP_KEEP_FREED_MEMORY=0`` turns it off.

That is not enough in a worker thread, and Snakemake runs a local run's jobs in worker threads:
glibc gives each thread its own arena, whose heaps are at most 64 MB, so a tensor larger than
that is ``mmap``-ed and unmapped again at every step whatever the thresholds say, and smaller
ones are often re-faulted too.  Measured here (one core, a 100 MB ``x * 2``): 25,600 faults and
51 ms a call in a thread against 0 and 10 ms in the main thread; a paper-scale smoke shard
(2 Stable ResNet32 on Tiny ImageNet) took about twice as long in a thread.
:func:`huge_pages_for_large_tensors` asks PyTorch to put CPU tensors of 2 MB or more on
transparent huge pages (``THP_MEM_ALLOC_ENABLE=1``): each fault then maps 2 MB instead of 4 KB
(569 faults and 19 ms for the same call in a thread).  The pages are still zeroed afresh, so a
thread stays slower than the main thread for such tensors; what cannot be had in-process is the
main arena's reuse.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import resource
import sys
from pathlib import Path

log = logging.getLogger("sigprop.host_memory")

M_TRIM_THRESHOLD = -1   # glibc <malloc.h>
M_MMAP_THRESHOLD = -3
# larger than any tensor a CPU step allocates: every block comes from the heap and is reused
THRESHOLD = 1 << 30
ENV = "SIGPROP_KEEP_FREED_MEMORY"
THP_ENV = "THP_MEM_ALLOC_ENABLE"     # read by PyTorch (c10's alloc_cpu) at its first allocation
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
        libc = _glibc()
        if libc is None:
            log.info("no glibc mallopt here: host memory settings unchanged")
        else:
            on = bool(libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD)) and bool(
                libc.mallopt(M_TRIM_THRESHOLD, THRESHOLD))
            if not on:
                log.warning("glibc refused mallopt(%d): host memory settings unchanged", THRESHOLD)
    _STATE["on"] = on
    return on


def huge_pages_for_large_tensors() -> bool:
    """Set ``THP_MEM_ALLOC_ENABLE=1`` unless it is set already (``0`` turns this off): PyTorch
    then aligns CPU allocations of 2 MB or more to 2 MB and ``madvise``-s them for transparent
    huge pages.  PyTorch reads the variable once, at its first CPU allocation, so call this
    before any tensor exists (the Snakefile and ``sigprop``'s command line do, first thing).
    True when the variable is 1 and the kernel allows huge pages on request (``always`` or
    ``madvise`` in :data:`THP_SYSFS`)."""
    if "torch" in sys.modules and THP_ENV not in os.environ:
        log.info("torch was imported before huge pages were asked for: %s=1 only takes effect "
                 "if no tensor has been allocated yet", THP_ENV)
    os.environ.setdefault(THP_ENV, "1")
    return os.environ[THP_ENV] == "1" and thp_mode() in ("always", "madvise")


def thp_mode() -> str:
    """The kernel's transparent huge page mode (``always``, ``madvise``, ``never``), or
    ``unknown`` where :data:`THP_SYSFS` cannot be read (not Linux)."""
    try:
        text = THP_SYSFS.read_text()
    except OSError:
        return "unknown"
    return text[text.index("[") + 1:text.index("]")] if "[" in text else "unknown"


def minor_faults() -> int:
    """Minor page faults of this process so far (``getrusage``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _glibc():
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version      # glibc only
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        return libc
    except (OSError, AttributeError):
        return None
