"""glibc keeps freed memory between training steps (sigprop.train.host_memory): a step that
allocates and frees the same large tensors stops taking a page fault per page it touches."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sigprop.train import host_memory

# a "step": three 32 MB tensors made, used and freed, as a training step does with its
# activations; the median of steps 4-12 (the heap still grows now and then: one step in five or
# so faults on a new 32 MB block even with memory kept)
STEP_SCRIPT = r"""
import json, statistics, torch
from sigprop.train import host_memory as hm
on = hm.keep_freed_memory()
torch.set_num_threads(1)
def step():
    a = torch.empty(8 << 20); a.fill_(1.0); b = a * 2; c = b + a
    return float(c[:4].sum())
for _ in range(3):
    step()
per_step = []
for _ in range(9):
    f0 = hm.minor_faults()
    step()
    per_step.append(hm.minor_faults() - f0)
print(json.dumps({"on": on, "faults_per_step": statistics.median(per_step), "all": per_step}))
"""


def _faults(env_value: str) -> dict:
    # 4 KB pages even where the user runs the tests with PyTorch's huge pages on, so that the
    # fault counts mean the same thing
    env = {**os.environ, host_memory.ENV: env_value, host_memory.THP_ENV: "0"}
    out = subprocess.run(
        [sys.executable, "-c", STEP_SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(host_memory.glibc() is None, reason="no glibc: mallopt does not exist")
def test_kept_memory_removes_most_page_faults_of_a_repeated_step():
    default, kept = _faults("0"), _faults("1")
    assert default["on"] is False and kept["on"] is True
    # measured 2026-11-25: 24,576 faults a step with glibc's defaults (three 32 MB blocks
    # mmap-ed and unmapped at every step); kept, most steps take none
    assert default["faults_per_step"] > 10_000, default
    assert kept["faults_per_step"] < default["faults_per_step"] / 4, (default, kept)


def test_the_switch_turns_it_off(monkeypatch):
    monkeypatch.setattr(host_memory, "_STATE", {})
    monkeypatch.setenv(host_memory.ENV, "0")
    assert host_memory.keep_freed_memory() is False
    # decided once per process
    monkeypatch.setenv(host_memory.ENV, "1")
    assert host_memory.keep_freed_memory() is False


# the same kind of step in a worker thread (where Snakemake runs a local run's jobs), with
# 128 MB tensors: larger than a thread arena's 64 MB heaps, so glibc maps them afresh each time
THREAD_SCRIPT = r"""
import json, statistics, threading
from sigprop.train import host_memory as hm
thp = hm.huge_pages_requested()
import torch
hm.keep_freed_memory()
torch.set_num_threads(1)
out = {}
def job():
    x = torch.ones(32 << 20)
    per_step = []
    for i in range(8):
        f0 = hm.minor_faults()
        y = x * 2.0
        del y
        if i >= 2:
            per_step.append(hm.minor_faults() - f0)
    out["faults_per_step"] = statistics.median(per_step)
t = threading.Thread(target=job)
t.start()
t.join()
print(json.dumps({"thp": thp, **out}))
"""


def _thread_faults(env_value: str) -> dict:
    env = {**os.environ, host_memory.THP_ENV: env_value}
    out = subprocess.run(
        [sys.executable, "-c", THREAD_SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(
    host_memory.thp_mode() not in ("madvise", "always"),
    reason="the kernel has no transparent huge pages on request",
)
def test_huge_pages_cut_the_page_faults_of_large_tensors_in_a_worker_thread():
    """Without huge pages a 128 MB tensor made in a worker thread faults on every page at every
    step (the thread's arena cannot keep it); with THP_MEM_ALLOC_ENABLE=1 (opt-in) far less."""
    asked, off = _thread_faults("1"), _thread_faults("0")
    assert asked["thp"] is True and off["thp"] is False
    if host_memory.thp_mode() == "madvise":
        # 32,769 faults a step without (one per 4 KB page of the 128 MB output), a few hundred
        # with huge pages (`sigprop bench alloc`, 2026-11-26: 562 for 100 MB, 662 for 300 MB)
        assert off["faults_per_step"] > 30_000, off
        assert asked["faults_per_step"] < off["faults_per_step"] / 8, (asked, off)
    else:  # "always": the kernel may use huge pages without being asked
        assert asked["faults_per_step"] <= off["faults_per_step"], (asked, off)


def test_huge_pages_are_off_unless_the_user_asks(monkeypatch):
    monkeypatch.delenv(host_memory.THP_ENV, raising=False)
    assert host_memory.huge_pages_requested() is False
    monkeypatch.setenv(host_memory.THP_ENV, "0")
    assert host_memory.huge_pages_requested() is False
    monkeypatch.setenv(host_memory.THP_ENV, "1")
    assert host_memory.huge_pages_requested() is (host_memory.thp_mode() in ("always", "madvise"))


def test_thp_mode_reads_the_bracketed_value(tmp_path, monkeypatch):
    f = tmp_path / "enabled"
    f.write_text("always [madvise] never\n")
    monkeypatch.setattr(host_memory, "THP_SYSFS", f)
    assert host_memory.thp_mode() == "madvise"
    monkeypatch.setattr(host_memory, "THP_SYSFS", tmp_path / "missing")
    assert host_memory.thp_mode() == "unknown"
