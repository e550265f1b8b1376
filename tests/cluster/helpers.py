"""Shared by tests/test_cluster_slurm.py and tests/test_cluster_sge.py: install a scheduler
from Debian's packages, run the workflow through a profile, and compare its tables with a
local run's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, SNAKEFILE, run_snakemake, tiny_study, write_config

HERE = Path(__file__).resolve().parent
PROFILES = REPO / "workflow" / "profiles"
# Tolerance of the cluster-vs-local comparison, fixed before any run: a cluster job runs
# the same code on the same CPU as the local run, so only float reassociation (torch's
# CPU threads: 4 in the profiles' GPU rules, 1 locally) may differ.
RTOL, ATOL = 1e-6, 1e-9


APT_LOCK_WAIT_S = 600
"""How long an apt-get command waits for a lock that another apt or dpkg process holds."""


def apt_get_cmd(*args: str, wait_s: float = APT_LOCK_WAIT_S) -> list[str]:
    """``apt-get args`` waiting up to ``wait_s`` for dpkg's locks (``DPkg::Lock::Timeout``)."""
    return ["apt-get", "-o", f"DPkg::Lock::Timeout={max(0, int(wait_s))}", *args]


def apt_get(
    *args: str, env: dict, wait_s: float = APT_LOCK_WAIT_S, poll_s: float = 2.0
) -> subprocess.CompletedProcess:
    """Run :func:`apt_get_cmd` ``args``, waiting up to ``wait_s`` in all for the locks that other
    apt or dpkg processes hold: dpkg's through ``DPkg::Lock::Timeout``; the package lists'
    (``apt-get update``) and the download cache's, which that option does not cover (apt 2.6
    fails at once: "Could not get lock /var/lib/apt/lists/lock"), by running it again every
    ``poll_s`` while it fails that way (recognised by that text: ``LC_ALL=C``)."""
    deadline = time.time() + wait_s
    env = dict(env, LC_ALL="C")
    while True:
        left = max(0.0, deadline - time.time())
        p = subprocess.run(
            apt_get_cmd(*args, wait_s=left),
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=left + 900,
        )
        if (
            p.returncode == 0
            or "Could not get lock" not in p.stdout + p.stderr
            or time.time() + poll_s > deadline
        ):
            return p
        time.sleep(poll_s)


def ensure_debian_packages(
    packages: list[str], binaries: list[str], preseed: str | None = None
) -> float:
    """Install ``packages`` with apt-get unless all ``binaries`` are already on PATH (or in
    /usr/sbin); return the seconds spent.  A lock held by another apt or dpkg is waited for
    (:func:`apt_get`, up to :data:`APT_LOCK_WAIT_S`).  Skips the calling test, with the reason,
    where installation is impossible: not root, no apt-get, or apt-get failing (a lock still
    held after that wait included)."""

    def have_all():
        return all(shutil.which(b) or Path("/usr/sbin", b).exists() for b in binaries)

    if have_all():
        return 0.0
    if os.geteuid() != 0:
        pytest.skip(f"cannot install {' '.join(packages)}: not root (uid {os.geteuid()})")
    if not shutil.which("apt-get"):
        pytest.skip(f"cannot install {' '.join(packages)}: no apt-get (not Debian/Ubuntu)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    t0 = time.time()
    if preseed:
        p = subprocess.run(
            ["debconf-set-selections"],
            input=preseed,
            text=True,
            check=False,
            capture_output=True,
            env=env,
        )
        if p.returncode != 0:
            pytest.skip(f"debconf-set-selections failed: {p.stderr.strip()[-500:]}")
    for args in (["update"], ["install", "-y", "--no-install-recommends", *packages]):
        p = apt_get(*args, env=env)
        if p.returncode != 0:
            held = (
                f" (a lock still held after {APT_LOCK_WAIT_S} s)"
                if "Could not get lock" in p.stdout + p.stderr
                else ""
            )
            pytest.skip(
                f"`apt-get {' '.join(args)}` failed ({p.returncode}){held}: "
                f"{(p.stderr or p.stdout).strip()[-800:]}"
            )
    if not have_all():
        pytest.skip(f"installed {' '.join(packages)} but {binaries} are not all there")
    return time.time() - t0


_LOCAL: dict[str, Path] = {}


def study() -> dict:
    """The small study that both cluster tests run: 8 trainable-depth runs in 2 shards."""
    return tiny_study()


def local_reference(tmp_path_factory) -> Path:
    """Results folder of a local run (workflow/profiles/default, 2 cores) of ``study()``,
    made once per test session."""
    if "results" not in _LOCAL:
        work = tmp_path_factory.mktemp("local_reference")
        cfg = write_config(work, study())
        t0 = time.time()
        run_snakemake(work, cfg)
        print(f"local reference run: {time.time() - t0:.1f} s")
        _LOCAL["results"] = work / "results"
    return _LOCAL["results"]


def profile_cmd(work: Path, config: Path, *profiles: Path) -> list[str]:
    """Snakemake on ``work`` through ``profiles``, as docs/cluster.md says to run it: the
    default workflow profile switched off (its local `cores: 2` caps job threads)."""
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(SNAKEFILE),
        "--directory",
        str(work),
        "--configfile",
        str(config),
    ]
    for p in profiles:
        cmd += ["--profile", str(p)]
    return cmd + ["--workflow-profile", "none"]


def run_profile(
    work: Path, config: Path, env: dict, *profiles: Path, timeout: float = 420
) -> tuple[str, float]:
    """Run :func:`profile_cmd` from ``work`` (job logs land in it); return (output, seconds)."""
    t0 = time.time()
    p = subprocess.run(
        profile_cmd(work, config, *profiles),
        cwd=work,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, f"snakemake failed ({p.returncode}):\n{out[-8000:]}"
    return out, time.time() - t0


def write_overlay(folder: Path, settings: dict) -> Path:
    """A profile folder with only ``settings``: given after a shipped profile, it overrides
    those keys and nothing else."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    return folder


SHARD_STAGES = {
    "init_shard": "init",
    "train_shard": "train",
    "measure_shard": "measure",
    "prune_shard": "prune",
}


def profile_resources(
    profile: str,
    rule: str | None,
    attempt: int = 1,
    plan: dict | None = None,
    study: str = "",
    shard: str = "",
) -> dict:
    """A shipped profile's resources of ``rule`` (None: default-resources) evaluated at
    ``attempt``, as Snakemake evaluates profile expressions; a shard rule's mem_mb and runtime
    come from the rule (sigprop.config.shard_request: the resources plan ``plan`` for that
    study and shard, else the defaults), as in the workflow."""
    from sigprop.config import shard_request

    cfg = yaml.safe_load((PROFILES / profile / "config.yaml").read_text())
    raw = cfg["default-resources"] if rule is None else cfg["set-resources"][rule]
    out = {k: eval(str(v), {"attempt": attempt}) for k, v in raw.items()}
    if rule in SHARD_STAGES:
        for name in ("mem_mb", "runtime"):
            out.setdefault(
                name, shard_request(plan or {}, study, shard, SHARD_STAGES[rule], name, attempt)
            )
    return out


def _sorted_frame(df: pd.DataFrame) -> pd.DataFrame:
    keys = [c for c in df.columns if not pd.api.types.is_float_dtype(df[c])]
    return df.sort_values(keys, kind="stable").reset_index(drop=True) if keys else df


def assert_same_tables(got: Path, want: Path) -> list[str]:
    """Every Parquet table under ``want`` exists under ``got`` (and no other one), with the
    same rows and columns; floats equal within RTOL/ATOL, everything else exactly.
    Returns the compared relative paths."""
    names = sorted(str(p.relative_to(want)) for p in want.rglob("*.parquet"))
    assert names, f"no Parquet tables under {want}"
    assert sorted(str(p.relative_to(got)) for p in got.rglob("*.parquet")) == names
    for name in names:
        a, b = (
            _sorted_frame(pd.read_parquet(got / name)),
            _sorted_frame(pd.read_parquet(want / name)),
        )
        assert list(a.columns) == list(b.columns), name
        assert len(a) == len(b), f"{name}: {len(a)} rows, local run has {len(b)}"
        for col in a.columns:
            x, y = a[col], b[col]
            if pd.api.types.is_float_dtype(x):
                assert np.allclose(
                    x.to_numpy(float), y.to_numpy(float), rtol=RTOL, atol=ATOL, equal_nan=True
                ), f"{name}:{col}"
            else:
                assert x.astype(str).tolist() == y.astype(str).tolist(), f"{name}:{col}"
    return names


def run_script(
    name: str, *args: str, env: dict | None = None, timeout: float = 180
) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(HERE / name), *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
