"""Which device a job trains on.

* Under a scheduler (SLURM, LSF, SGE set ``CUDA_VISIBLE_DEVICES`` to the GPUs they
  granted) a job uses the first visible GPU.
* Run locally on a machine with several GPUs, concurrent jobs would all pick
  ``cuda:0``; so each job takes an exclusive lock file per GPU
  (``{lock_dir}/gpu{i}.lock``, ``fcntl.flock``) and uses the first free one,
  waiting when all are taken.  The lock is released when the job's process ends.
  Pair it with ``snakemake --resources gpu=N`` so no more jobs start than GPUs.
"""

from __future__ import annotations

import fcntl
import logging
import time
from pathlib import Path

import torch

log = logging.getLogger("sigprop.devices")

_HELD: list = []  # open lock files: kept for the life of the process


def try_lock(path: Path):
    """Open and exclusively lock ``path`` without blocking; the file object or None."""
    path.parent.mkdir(parents=True, exist_ok=True)
    f = open(path, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return None
    return f


def free_gpu_index(
    n_devices: int, lock_dir: Path, wait: float = 5.0, timeout: float | None = None
) -> int:
    """Index of a GPU no other local job holds; blocks until one is free."""
    t0 = time.time()
    while True:
        for i in range(n_devices):
            f = try_lock(Path(lock_dir) / f"gpu{i}.lock")
            if f is not None:
                _HELD.append(f)
                return i
        if timeout is not None and time.time() - t0 > timeout:
            raise TimeoutError(f"no free GPU among {n_devices} within {timeout}s ({lock_dir})")
        log.info("all %d GPUs are taken by other local jobs; waiting", n_devices)
        time.sleep(wait)


def acquire(requested: str = "auto", lock_dir: str | Path | None = None) -> torch.device:
    """The device for this job: an explicit request, else a free GPU, else the CPU."""
    if requested != "auto":
        dev = torch.device(requested)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device '{requested}' requested but CUDA is not available")
        return dev
    if not torch.cuda.is_available():
        return torch.device("cpu")
    n = torch.cuda.device_count()
    if n == 1 or lock_dir is None:
        return torch.device("cuda:0")
    return torch.device(f"cuda:{free_gpu_index(n, Path(lock_dir))}")
