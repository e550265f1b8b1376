"""The shard trainer drives every family: images in, rows out, composition-free, resumable."""

import numpy as np
import pytest
import torch

from sigprop.runs import RunSpec, Shard
from sigprop.train.engine import Data, ShardTrainer, initial_state


def _images(n=48, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, 16, 16, generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    return Data(x[:32], y[:32], x[32:], y[32:], classes)


CASES = {
    "vcnn": dict(arch="vcnn", width=4, depth=3, activation="relu"),
    "resnet32": dict(arch="resnet32", width=4, activation="relu"),
    "lenet": dict(arch="lenet", width=8, depth=1, activation="relu"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_family_trains_in_a_shard_like_alone(name):
    torch.set_num_threads(1)
    data = _images()
    base = dict(
        dataset="toy",
        batch_size=8,
        steps=4,
        eval_every=2,
        lr=0.01,
        momentum=0.9,
        precision="float64",
        sigma_w2=2.0,
        **CASES[name],
    )
    a, b = RunSpec(**base, seed=0), RunSpec(**{**base, "lr": 0.02}, seed=1)
    frames = {}
    for runs in ((a,), (b, a)):
        shard = Shard("t", runs)
        params, buffers = initial_state(shard, (3, 16, 16), 3, torch.device("cpu"), torch.float64)
        df = ShardTrainer(shard, data, params, torch.device("cpu"), buffers=buffers).run()
        frames[len(runs)] = df[df.run_id == a.run_id].reset_index(drop=True)
    assert set(frames[1].metric) >= {"train_acc", "test_acc", "batch_loss", "diverged_step"}
    np.testing.assert_allclose(
        frames[1].value.to_numpy(), frames[2].value.to_numpy(), rtol=1e-10, atol=1e-12
    )


def test_batchnorm_shard_resumes_from_checkpoint(tmp_path):
    torch.set_num_threads(1)
    data = _images()
    run = RunSpec(
        dataset="toy",
        batch_size=8,
        steps=6,
        eval_every=2,
        lr=0.01,
        precision="float64",
        **CASES["resnet32"],
    )
    shard = Shard("t", (run, RunSpec(**{**run.non_default(), "seed": 3})))
    p, bf = initial_state(shard, (3, 16, 16), 3, torch.device("cpu"), torch.float64)
    ref = ShardTrainer(shard, data, p, torch.device("cpu"), buffers=bf).run()
    ck = tmp_path / "ck.pt"
    t = ShardTrainer(
        shard, data, p, torch.device("cpu"), buffers=bf, checkpoint=ck, checkpoint_every=2
    )
    t.evaluate()  # what run() does first
    for _ in range(3):  # interrupted after step 3 (checkpoint at 2)
        t.train_step()
        if t.step % 2 == 0:
            t.evaluate()
            t._save_checkpoint()
    resumed = ShardTrainer(
        shard, data, p, torch.device("cpu"), buffers=bf, checkpoint=ck, checkpoint_every=2
    ).run()
    np.testing.assert_allclose(resumed.value.to_numpy(), ref.value.to_numpy(), rtol=1e-12)
