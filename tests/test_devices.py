"""Local GPU assignment by lock files, and shard sizes chosen from memory."""

import subprocess
import sys
import textwrap

import pytest
from conftest import tiny_study

from sigprop import sizing
from sigprop.config import build_study
from sigprop.train import devices


def test_two_jobs_get_different_gpus_and_a_third_waits(tmp_path):
    """Each process holds its GPU's lock until it exits (real processes, fake GPU count); the
    holders exit when told (their stdin closes), so a slow start under load changes nothing."""
    code = textwrap.dedent(f"""
        import sys
        from sigprop.train import devices
        i = devices.free_gpu_index(2, {str(tmp_path)!r}, wait=0.05, timeout=float(sys.argv[1]))
        print(i, flush=True)
        if sys.argv[2] == "hold":
            sys.stdin.read()
    """)
    holders, held = [], []
    for _ in range(2):
        holders.append(
            subprocess.Popen(
                [sys.executable, "-c", code, "30", "hold"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
        held.append(holders[-1].stdout.readline().strip())  # once it holds its GPU
    assert sorted(held) == ["0", "1"]
    c = subprocess.run([sys.executable, "-c", code, "0.3", "no"], capture_output=True, text=True)
    assert c.returncode != 0 and "no free GPU" in c.stderr  # both taken: waits, then times out
    for h in holders:
        h.stdin.close()
        h.wait()
    d = subprocess.run([sys.executable, "-c", code, "1", "no"], capture_output=True, text=True)
    assert d.stdout.strip() == "0"  # released when the holders exited


def test_explicit_cuda_request_without_cuda_is_an_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match="CUDA is not available"):
        devices.acquire("cuda:0")
    assert devices.acquire("auto").type == "cpu"


def test_fc_memory_estimate_counts_parameters_and_activations():
    b = sizing.fc_model_bytes(d_in=10, width=20, depth=3, d_out=5, batch=7, optimizer_slots=1)
    params = 10 * 20 + 2 * 20 * 20 + 20 * 5 + 3 * 20 + 5
    assert b == 4 * (4 * params + 7 * (10 + 3 * 20 * 3 + 5))


def test_shard_size_zero_is_chosen_from_the_memory_budget():
    study = tiny_study(
        fixed={"width": 256}, grid={"depth": [2, 8], "sigma_w2": [1.0, 1.5, 2.0, 2.5]}
    )
    small = build_study("trainable_depth", "f.yaml", study, "quick", 0, memory_budget_mb=8)
    big = build_study("trainable_depth", "f.yaml", study, "quick", 0, memory_budget_mb=8000)

    def sizes(st):
        return sorted(len(s.runs) for s in st.shards)

    assert len(big.shards) == 2  # one shard per depth: everything fits
    assert len(small.shards) > 2 and max(sizes(small)) < 8
    for shard in small.shards:  # a shard fits in half the budget, or holds a single model
        per_model = sizing.run_bytes(shard.runs[0], (64,), 10)
        assert len(shard.runs) == 1 or len(shard.runs) * per_model <= 0.5 * 8 * 2**20
