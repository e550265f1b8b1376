"""The per-model fallback family trains any nn.Module in a shard, like the module alone."""

import numpy as np
import torch
import torch.nn.functional as F

from sigprop.nets import fallback, reference
from sigprop.runs import RunSpec, Shard
from sigprop.train.engine import Data, ShardTrainer, initial_state


def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(48, 3, 8, 8, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (48,), generator=g)
    return Data(x[:32], y[:32], x[32:], y[32:], 3)


def test_fc_loop_matches_torch_optim_and_is_composition_free():
    torch.set_num_threads(1)
    data = _data()
    base = dict(
        arch="fc_loop",
        width=8,
        depth=2,
        batch_size=8,
        steps=5,
        eval_every=5,
        lr=0.1,
        dataset="toy",
        precision="float64",
    )
    runs = (RunSpec(**base, sigma_w2=1.5), RunSpec(**base, sigma_w2=2.5, seed=1))
    shard = Shard("t", runs)
    params, buffers = initial_state(shard, (3, 8, 8), 3, torch.device("cpu"), torch.float64)
    tr = ShardTrainer(shard, data, params, torch.device("cpu"), buffers=buffers)
    df = tr.run()
    for m, run in enumerate(runs):
        mod = reference.from_stacked("fc", run, (3, 8, 8), 3, params, buffers, m, torch.float64)
        opt = torch.optim.SGD(mod.parameters(), lr=run.lr)
        for step in range(run.steps):
            xb, yb = tr.batch(step)
            loss = F.cross_entropy(mod(xb[m]), yb[m])
            opt.zero_grad()
            loss.backward()
            opt.step()
        for p, q in zip(tr.params, mod.parameters()):
            torch.testing.assert_close(
                p.detach()[m].reshape(q.shape), q.detach(), rtol=1e-10, atol=1e-12
            )
        alone = Shard("t", (run,))
        pa, ba = initial_state(alone, (3, 8, 8), 3, torch.device("cpu"), torch.float64)
        da = ShardTrainer(alone, data, pa, torch.device("cpu"), buffers=ba).run()
        np.testing.assert_allclose(
            df[df.run_id == run.run_id].value.to_numpy(), da.value.to_numpy(), rtol=1e-12
        )


def test_fallback_carries_batchnorm_buffers_per_model():
    torch.set_num_threads(1)

    def builder(run, in_shape, n_out):
        return torch.nn.Sequential(
            torch.nn.Conv2d(in_shape[0], run.width, 3),
            torch.nn.BatchNorm2d(run.width),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(),
            torch.nn.Linear(run.width, n_out),
        )

    fam = fallback.PerModel("bn_loop", builder)
    runs = (
        RunSpec(arch="fc_loop", width=4, sigma_w2=2.0),
        RunSpec(arch="fc_loop", width=4, seed=1),
    )
    keys = torch.tensor([r.key for r in runs])
    params, buffers = fam.init(runs, keys, (3, 8, 8), 3, "cpu", torch.float64)
    assert len(buffers) == 2 and buffers[0].shape == (2, 4)  # running mean and var per model
    x = torch.randn(2, 6, 3, 8, 8, dtype=torch.float64)
    x2 = x.clone()
    x2[1] *= 3.0
    _, b1 = fam.apply(runs, params, buffers, x, True, keys, 0)
    _, b2 = fam.apply(runs, params, buffers, x2, True, keys, 0)
    assert torch.equal(b1[0][0], b2[0][0]) and not torch.equal(b1[1][1], b2[1][1])
    assert not torch.equal(b1[0], buffers[0])  # running statistics moved
