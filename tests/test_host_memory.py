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
    env = {**os.environ, host_memory.ENV: env_value}
    out = subprocess.run([sys.executable, "-c", STEP_SCRIPT], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(host_memory._glibc() is None, reason="no glibc: mallopt does not exist")
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
