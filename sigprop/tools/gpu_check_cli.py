"""``sigprop gpu-check``: its arguments here, its work in :mod:`sigprop.tools.gpu_check`, which
imports torch and is loaded only when the command runs."""

from __future__ import annotations

COMMANDS = ("gpu-check",)


def register(subparsers) -> None:
    gpu = subparsers.add_parser(
        "gpu-check",
        help="the first hour on a GPU: bench, every family on CUDA against the CPU, "
        "a paper-scale shard against the plan (one JSON)",
        description="On a CUDA device: run sigprop bench shard, train one tiny shard of every "
        "family on the CPU and on the device from the same weights and compare "
        "losses, accuracies and parameters with stated tolerances (float32, TF32 "
        "off), and time the costliest paper-scale shard of each training study "
        "against sigprop plan's projection; write one "
        "JSON (sigprop.tools.gpu_check).  Exits 1 without a CUDA device, 3 when a "
        "comparison fails.",
    )
    gpu.add_argument("--out", default="gpu_check.json", help="JSON file [default: gpu_check.json]")
    gpu.add_argument("--device", default="cuda", help="cuda or cuda:N [default: cuda]")
    gpu.add_argument(
        "--shards",
        default=None,
        help="the paper-scale shards to time, study=SHARD_ID,...; a training study "
        "not named (or named with no id) gets its costliest shard",
    )
    gpu.add_argument(
        "--steps", type=int, default=10, help="training steps timed per shard [default: 10]"
    )
    gpu.add_argument(
        "--record",
        metavar="JSON",
        default=None,
        help="no GPU needed: write the efficiencies measured in JSON (a gpu-check "
        "output) into config/gpu_efficiency.yaml, which sigprop plan reads",
    )
    gpu.set_defaults(func=main)


def main(args: dict) -> int:
    """:func:`sigprop.tools.gpu_check.main`."""
    from sigprop.tools import gpu_check

    return gpu_check.main(args)
