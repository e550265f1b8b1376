"""The cluster tests' apt-get (tests/cluster/helpers.py: apt_get) waits for the locks another
apt or dpkg holds instead of failing, and with it skipping the test: checked against a real
apt-get on private copies of its state folders, with a lock held by this process."""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time

import pytest
from cluster.helpers import APT_LOCK_WAIT_S, apt_get, apt_get_cmd


def test_every_apt_get_command_waits_for_dpkgs_lock():
    assert apt_get_cmd("update") == [
        "apt-get",
        "-o",
        f"DPkg::Lock::Timeout={APT_LOCK_WAIT_S}",
        "update",
    ]
    assert apt_get_cmd("install", "-y", "x", wait_s=12.7)[1:] == [
        "-o",
        "DPkg::Lock::Timeout=12",
        "install",
        "-y",
        "x",
    ]
    assert APT_LOCK_WAIT_S >= 600


def _private_apt(root) -> list[str]:
    """Options pointing apt-get at empty state folders under ``root``: no sources (nothing is
    fetched), no packages, its own locks."""
    for d in ("lists/partial", "cache/archives/partial", "dpkg", "sources.list.d"):
        (root / d).mkdir(parents=True)
    (root / "dpkg" / "status").write_text("")
    (root / "sources.list").write_text("")
    return [
        f"-oDir::State::Lists={root / 'lists'}",
        f"-oDir::Cache={root / 'cache'}",
        f"-oDir::State::status={root / 'dpkg' / 'status'}",
        f"-oDir::Etc::SourceList={root / 'sources.list'}",
        f"-oDir::Etc::SourceParts={root / 'sources.list.d'}",
    ]


def _lock(path) -> int:
    """Take ``path``'s lock as apt does (fcntl); closing the descriptor lets it go."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o640)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


@pytest.mark.parametrize(
    "args,lock",
    [
        (["update"], "lists/lock"),
        (["install", "-y"], "dpkg/lock-frontend"),
        (["install", "-y"], "cache/archives/lock"),
    ],
)
def test_apt_get_waits_for_a_lock_another_process_holds(tmp_path, args, lock):
    """``apt-get update`` takes the package lists' lock, ``install`` dpkg's and the download
    cache's: with the lock held, apt-get alone fails at once; through apt_get it waits and
    succeeds once the lock is let go."""
    if not shutil.which("apt-get"):
        pytest.skip("no apt-get (not Debian/Ubuntu)")
    opts = _private_apt(tmp_path)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    free = apt_get(*opts, *args, env=env, wait_s=0)
    if free.returncode != 0:
        pytest.skip(f"apt-get cannot run on private state folders here: {free.stderr[-300:]}")
    fd = _lock(tmp_path / lock)
    try:
        fails = apt_get(*opts, *args, env=env, wait_s=0)
        assert fails.returncode != 0 and f"Could not get lock {tmp_path / lock}" in fails.stderr
    finally:
        os.close(fd)
    threading.Timer(1.5, os.close, (_lock(tmp_path / lock),)).start()
    t0 = time.time()
    waited = apt_get(*opts, *args, env=env, wait_s=30, poll_s=0.2)
    assert waited.returncode == 0, waited.stderr
    assert time.time() - t0 >= 1.4
