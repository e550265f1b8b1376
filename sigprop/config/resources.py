"""What a shard job asks a scheduler for: the defaults, and a resources plan's per-shard
requests (``sigprop plan --resources``), grown on retries.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .files import ConfigError

DEFAULT_SHARD_RESOURCES = {
    "init": {"mem_mb": 4000, "runtime": 30},
    "prune": {"mem_mb": 8000, "runtime": 60},
    "train": {"mem_mb": 8000, "runtime": 120},
    "measure": {"mem_mb": 8000, "runtime": 60},
}
"""What a shard job asks a scheduler for without a resources plan (runtime in minutes)."""


MAX_MEM_MB = 16 * 1024**2
"""The largest memory request a resources plan may make (16 TiB), in MB."""


MAX_RUNTIME_MIN = 60 * 24 * 365
"""The longest runtime request (a year), in minutes."""


def load_resources(path: str | Path | None, studies: dict | None = None) -> dict:
    """The per-shard requests of a ``sigprop plan --resources`` file (``{}`` for None): stops,
    naming the file, when it is missing, not the plan's format, or plans none of a configured
    study's shards (a plan made for another config)."""
    if not path:
        return {}
    p = Path(path)
    where = f"resources_plan: {p}"
    if not p.exists():
        raise ConfigError(
            f"{where}: file not found (write it with `sigprop plan --config ... --resources {p}`)"
        )
    try:
        data = json.loads(p.read_text())
        shards = data["shards"]
        assert isinstance(shards, dict)
    except (ValueError, KeyError, TypeError, AssertionError):
        raise ConfigError(
            f"{where}: not a resources plan (expected JSON with 'shards': "
            "{study: {shard: {runtime, mem_mb}}})"
        ) from None
    limits = {
        "mem_mb": (1, MAX_MEM_MB),
        "gpu_mem_mb": (1, MAX_MEM_MB),
        "runtime": (1, MAX_RUNTIME_MIN),
    }
    for name, entries in shards.items():
        if not isinstance(entries, dict):
            raise ConfigError(
                f"{where}: key 'shards.{name}': expected a mapping of shard ids to requests"
            )
        for sid, req in entries.items():
            if not isinstance(req, dict):
                raise ConfigError(
                    f"{where}: key 'shards.{name}.{sid}': expected {{runtime, mem_mb}}"
                )
            for k, v in req.items():
                if k not in limits:
                    raise ConfigError(
                        f"{where}: key 'shards.{name}.{sid}.{k}': unknown request "
                        f"(known: {', '.join(limits)})"
                    )
                lo, hi = limits[k]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                    raise ConfigError(
                        f"{where}: key 'shards.{name}.{sid}.{k}': {str(v)[:40]!r} "
                        f"is not a number from {lo} to {hi:,}"
                    )
    for name, study in (studies or {}).items():
        have = shards.get(name, {})
        missing = [s.shard_id for s in study.shards if s.shard_id not in have]
        if missing:
            raise ConfigError(
                f"{where}: plans no requests for {len(missing)} of study {name}'s "
                f"{len(study.shards)} shards (e.g. {missing[0]}); the plan was made "
                "for another config: rerun `sigprop plan --resources` with this "
                "one"
            )
    return shards


def shard_request(
    plan: dict,
    study: str,
    shard: str,
    stage: str,
    name: str,
    attempt: int,
    floor_mb: float | None = None,
    local: bool = False,
) -> int:
    """What a shard job of ``stage`` asks for (``mem_mb`` or ``runtime``) at ``attempt``.

    On a scheduler: the plan's value for train and measure jobs (memory also for init and
    prune, whose time is the default's), else :data:`DEFAULT_SHARD_RESOURCES`; memory never
    below the shard's floor (``floor_mb``, :func:`sigprop.tools.plan.shard_floor_mb`) plus
    :data:`sigprop.sizing.HOST_BASE_MB`. In a ``local`` run, memory is the floor itself (all
    jobs share one process, and Snakemake runs side by side only jobs whose requests fit in the
    run's ``mem_mb``). Times the attempt."""
    if name == "mem_mb" and local:
        return max(1, math.ceil(floor_mb or 0)) * attempt
    default = DEFAULT_SHARD_RESOURCES[stage][name]
    planned = (plan.get(study) or {}).get(shard) or {}
    use_plan = name in planned and (name == "mem_mb" or stage in ("train", "measure"))
    value = planned[name] if use_plan else default
    if name == "mem_mb" and floor_mb is not None:
        from sigprop.sizing import HOST_BASE_MB

        value = max(value, math.ceil(floor_mb) + HOST_BASE_MB)
    return int(value * attempt)
