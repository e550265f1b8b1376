"""Memory of models and shards, and the GPUs' vendor figures, torch-free: used while Snakemake
builds the DAG, by the plan and by the benches.

``shard_size: 0`` in the config means "choose from memory": each shape group of
runs gets the most models whose training state fits in half of
``memory_budget_mb`` (the rest is headroom for the framework and evaluation).

:func:`shard_floor_bytes` is the least memory a shard's jobs can take: every job of a shard
holds all its models' parameters, and every measuring or training job also their gradients.
The workflow asks for it per shard job and refuses, before any job starts, a local run whose
shard could not fit in the memory the run may use (:func:`too_big`).  Its parameter counts
follow the papers' architectures: the fully connected nets of Huang, Xu, Du, Zeng, Zhao (2019),
arXiv:1912.09132, Eq. 1, and the residual and dense ones of Littwin, Wolf (2020),
arXiv:2001.10460, Eqs. 7-8 and 19.
"""

from __future__ import annotations

import math

HOST_BASE_MB = 2000
"""What a job on a scheduler needs beside its shard: the interpreter, torch and the data loader."""


LIGHT_BASE_MB = 300
LIGHT_MB_PER_INPUT_MB = 175
"""A light job's memory (merge, theory, figures, claims, tables): ``LIGHT_BASE_MB`` plus
``LIGHT_MB_PER_INPUT_MB`` per MB of its Parquet inputs (:func:`light_job_mb`).  Run tables
repeat every run field on every row as Python strings in pandas, so a table takes far more
memory than its compressed file: the paper-scale smoke run's ``dropout_training`` merge (24 MB of
Parquet, 3.2 million rows, 48 columns) peaked at 4.2 GB, its claims and figures at 2.8-3.0 GB
(the jobs' logs; docs/performance.md, "The smoke run and the test lanes")."""


def light_job_mb(input_mb: float, limit_mb: int | None = None) -> int:
    """The memory a light job asks for (:data:`LIGHT_BASE_MB`, :data:`LIGHT_MB_PER_INPUT_MB`),
    at most ``limit_mb`` (the run's memory: a job never asks for more than the run may use, so
    a large one runs alone instead of never)."""
    mb = int(LIGHT_BASE_MB + LIGHT_MB_PER_INPUT_MB * max(float(input_mb), 0.0))
    return min(mb, int(limit_mb)) if limit_mb else mb


def fc_model_bytes(
    d_in: int,
    width: int,
    depth: int,
    d_out: int,
    batch: int,
    optimizer_slots: int = 1,
    bytes_per: int = 4,
) -> int:
    """Training memory of one fully connected model: parameters, gradients, optimizer
    state and the initial copy, plus per-layer activations kept for the backward pass
    (pre-activation, activation, dropout mask)."""
    params = d_in * width + (depth - 1) * width * width + width * d_out + depth * width + d_out
    acts = batch * (d_in + 3 * width * depth + d_out)
    return bytes_per * ((3 + optimizer_slots) * params + acts)


def run_bytes(run, in_shape: tuple[int, ...], n_out: int) -> int:
    """Memory estimate of one run; fully connected exactly, other families by their
    parameter-free proxy (width x depth activations) until they declare their own."""
    d_in = math.prod(in_shape)
    slots = 1 if run.optimizer == "rmsprop" or run.momentum > 0 else 0
    bytes_per = 8 if run.precision == "float64" else 4
    if run.arch == "fc":
        return fc_model_bytes(d_in, run.width, run.depth, n_out, run.batch_size, slots, bytes_per)
    # conservative proxy for convolutional/residual families: activations dominate
    return bytes_per * 16 * run.batch_size * max(d_in, run.width * 64) * max(run.depth, 1)


def auto_shard_size(model_bytes: int, budget_bytes: int, cap: int = 1024) -> int:
    """Most models whose training state fits in half the budget."""
    return max(1, min(cap, int(0.5 * budget_bytes // max(1, model_bytes))))


def param_count(run, in_shape: tuple[int, ...], n_out: int) -> int | None:
    """Parameters of one model, counted from its shapes (exact), for the families whose shapes
    are known without building them: ``fc`` (000 Eq. 1: weights and biases), ``resnet_fc`` /
    ``stable_resnet_fc`` (001 Eqs. 7-8: ``d n + L m n^2 + n n_out``, no biases) and
    ``densenet_fc`` (001 Eq. 19: layer ``l`` reads all ``l`` earlier layers); None for the
    others."""
    d_in = math.prod(int(s) for s in in_shape)
    n, L = int(run.width), int(run.depth)
    if run.arch == "fc":
        dims = [d_in] + [n] * L + [int(n_out)]
        return sum(a * b + b for a, b in zip(dims[:-1], dims[1:]))
    if run.arch in ("resnet_fc", "stable_resnet_fc"):
        return n * d_in + L * int(run.branch_depth) * n * n + int(n_out) * n
    if run.arch == "densenet_fc":
        return n * d_in + n * n * L * (L + 1) // 2 + int(n_out) * n
    return None


def shard_floor_bytes(
    runs, in_shape: tuple[int, ...], n_out: int, n_examples: int = 0
) -> int | None:
    """The least memory of a shard's heaviest job: every model's parameters and their gradients
    (in the runs' precision) and the data set as float32 (``n_examples`` of ``in_shape``).
    A floor, not a peak: activations, optimizer state and the framework come on top. None when
    the family's parameters are not known without building it (:func:`param_count`)."""
    per_model = param_count(runs[0], in_shape, n_out)
    if per_model is None:
        return None
    bytes_per = 8 if runs[0].precision == "float64" else 4
    return 2 * bytes_per * per_model * len(runs) + 4 * int(n_examples) * math.prod(in_shape)


def physical_memory_mb() -> int | None:
    """This machine's memory in MB (``MemTotal``), None where the OS does not say."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    try:
        import os

        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError, AttributeError):
        return None


def local_memory(resources) -> tuple[int, str] | None:
    """What a local run's jobs may use together: ``(MB, where it comes from)``, from Snakemake's
    ``--resources mem_mb=N`` (``resources``: the workflow's global resources, which hold
    ``mem_mb`` only when the command line gives it, ``mem=`` and ``mem_mib=`` converted to it)
    or else this machine's memory; None when neither is known.  Raises ValueError for a given
    ``N <= 0``: it leaves no memory for any job, and every job asks for at least 1 MB."""
    given = resources["mem_mb"].value if "mem_mb" in resources else None
    if isinstance(given, (int, float)) and not isinstance(given, bool) and given <= 0:
        total = physical_memory_mb()
        raise ValueError(
            f"--resources mem_mb={given:g}: the memory this run's jobs may use together must be "
            "more than 0 MB (every job asks for at least 1 MB, so none could start); give "
            "--resources mem_mb=N with N > 0, or leave mem_mb out of --resources to use this "
            "machine's memory" + (f" ({total:,} MB)" if total else "")
        )
    if isinstance(given, (int, float)) and given > 0:
        return int(given), "--resources mem_mb"
    total = physical_memory_mb()
    if total:
        return total, "this machine's memory; --resources mem_mb=N sets it"
    return None


def floor_rows(studies: dict, shards, floor) -> list[tuple[str, str, str, int, float]]:
    """``(study file, block, shard, models, floor MB)`` of each ``(study, shard)`` pair whose
    floor is known; ``floor(study, shard)``: MB or None."""
    rows = []
    for name, shard_id in dict.fromkeys(shards):
        mb = floor(name, shard_id)
        if mb is not None:
            st = studies[name]
            shard = st.shard(shard_id)
            rows.append(
                (str(st.path), st.labels[shard.runs[0].run_id], shard_id, len(shard.runs), mb)
            )
    return rows


def too_big(
    floors: list[tuple[str, str, str, int, float]], limit_mb: float, source: str, shown: int = 5
) -> str | None:
    """The message refusing a run whose shards cannot fit, or None when all fit.

    ``floors``: :func:`floor_rows` of the shard jobs that are to run; ``source``: where
    ``limit_mb`` comes from."""
    over = sorted((f for f in floors if f[4] > limit_mb), key=lambda f: -f[4])
    if not over:
        return None
    blocks: dict = {}
    for path, block, shard, models, mb in over:
        blocks.setdefault((path, block), []).append((shard, models, mb))
    lines = [
        f"{len(over)} shard(s) in {len(blocks)} block(s) need more memory than the "
        f"{limit_mb:,.0f} MB this run may use ({source}); no job was started:"
    ]
    for (path, block), shards in list(blocks.items())[:shown]:
        shard, models, mb = shards[0]
        what = "its one model's" if models == 1 else f"its {models} models'"
        more = f" (and {len(shards) - 1} more shards)" if len(shards) > 1 else ""
        lines.append(
            f"  {path}: block '{block}', shard {shard}: at least {mb:,.0f} MB for "
            f"{what} parameters and gradients{more}"
        )
    if len(blocks) > shown:
        lines.append(f"  ... and {len(blocks) - shown} more blocks")
    lines.append(
        "Lower the scale's shard_size in the study file (models per shard; run ids do "
        "not depend on it), give the run more memory with --resources mem_mb=N if the "
        "machine has it, or run it on a cluster (docs/cluster.md)."
    )
    return "\n".join(lines)


# -- GPUs: vendor figures for projections and benches

# dense (not sparsity-doubled) vendor peaks, TFLOP/s, and memory, GB
GPUS = {
    "V100-32GB": {"float32": 15.7, "tf32": 15.7, "float64": 7.8, "mem_gb": 32},
    "A100-80GB": {"float32": 19.5, "tf32": 156.0, "float64": 9.7, "mem_gb": 80},
    "H100-SXM-80GB": {"float32": 67.0, "tf32": 495.0, "float64": 34.0, "mem_gb": 80},
    # the H100's compute at its clocks with more and faster memory (NVIDIA's H200 datasheet)
    "H200-SXM-141GB": {"float32": 67.0, "tf32": 495.0, "float64": 34.0, "mem_gb": 141},
}


def gpu_of(name: str | None) -> str | None:
    """The :data:`GPUS` key of a CUDA device name (``torch.cuda.get_device_name``) whose model
    (V100, A100, H100, the part of the key before the first ``-``) it names; None when none
    does.  Variants share their model's key (an H100 PCIe's float32 peak is below the SXM's)."""
    if not name:
        return None
    up = name.upper()
    for key in GPUS:
        if key.split("-")[0].upper() in up:
            return key
    return None


def dense_peak(spec: dict, precision: str) -> float:
    """A GPU's dense peak in FLOP/s for a run's precision (bf16 and float32 runs at float32's)."""
    return (
        spec[
            "tf32" if precision == "tf32" else ("float64" if precision == "float64" else "float32")
        ]
        * 1e12
    )
