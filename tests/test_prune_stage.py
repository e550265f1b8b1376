"""The prune stage (003 Hayou et al., pruning at initialization) and masked training.

- the new RunSpec fields keep every old run id; config errors name the file and the key;
- ``ShardTrainer(masks=...)``: masked weights are exactly zero after every step, for the fully
  connected and the convolutional families; a model trains with its mask as it does alone;
  all-ones masks change nothing; checkpoints resume (and ignore other masks);
- ``prune.stage.shard_masks``: one shard mixing pruners, sparsities and dense runs;
- the real workflow: masks and the per-layer report, masked training, nothing to redo, and an
  edited sparsity reruns prune + train of that shard only.
"""

from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import run_snakemake, tiny_study, write_config

from sigprop.config import ConfigError, build_study
from sigprop.runs import RunSpec, Shard
from sigprop.train import engine
from sigprop.train.engine import Data, ShardTrainer, initial_state

CPU = torch.device("cpu")


def _flat(n=96, d=64, classes=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.arange(n) % classes
    return Data(x[:64], y[:64], x[64:], y[64:], classes)


def _images(n=48, classes=3, seed=0, side=8):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, side, side, generator=g, dtype=torch.float64)
    y = torch.arange(n) % classes
    return Data(x[:32], y[:32], x[32:], y[32:], classes)


def _random_masks(params, keep=0.5, seed=1, which=None):
    """0/1 masks on the weight tensors (ndim >= 3: [M, out, in, ...]) or on ``which``."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for j, p in enumerate(params):
        use = (p.dim() >= 3) if which is None else (j in which)
        out.append((torch.rand(p.shape, generator=g, dtype=torch.float64) < keep) if use else None)
    return out


def _fc_runs(**kw):
    base = dict(
        dataset="toy",
        width=16,
        depth=3,
        batch_size=16,
        steps=12,
        eval_every=4,
        lr=0.05,
        momentum=0.9,
        weight_decay=1e-3,
        precision="float64",
    )
    base.update(kw)
    return (RunSpec(**base, seed=0), RunSpec(**{**base, "lr": 0.02}, seed=1))


# -- run ids and configuration ---------------------------------------------------------------


def test_pruning_fields_keep_old_run_ids_and_enter_new_ones():
    dense = RunSpec(depth=5, sigma_w2=2.0)
    assert dense.non_default() == {"depth": 5, "sigma_w2": 2.0}  # no pruning field is hashed
    assert (
        dense.run_id
        == "r" + __import__("hashlib").sha256(b'{"depth":5,"sigma_w2":2.0}').hexdigest()[:12]
    )
    a = RunSpec(depth=5, pruner="magnitude", sparsity=0.5)
    b = RunSpec(depth=5, pruner="magnitude", sparsity=0.7)
    assert len({dense.run_id, a.run_id, b.run_id}) == 3
    assert a.prune_data_key == b.prune_data_key != RunSpec(depth=5, seed=1).prune_data_key
    assert RunSpec.from_dict({"pruner": "snip", "sparsity": 1}).sparsity == 1.0


def _pruning_study(**fixed):
    return tiny_study(
        fixed={"pruner": "magnitude", "sparsity": 0.5, **fixed},
        grid={"keep_rate": [1.0], "depth": [2], "sigma_w2": [1.0]},
    )


def test_unknown_pruner_names_the_file_and_the_key(tmp_path):
    path = tmp_path / "studies" / "trainable_depth.yaml"
    with pytest.raises(
        ConfigError,
        match=re.escape(
            f"{path}: key 'scales.quick.blocks[0].fixed.pruner': unknown pruner 'snipp'"
        ),
    ):
        build_study("trainable_depth", path, _pruning_study(pruner="snipp"), "quick", 64)
    study = tiny_study(grid={"pruner": ["magnitude", "grasp2"], "sparsity": [0.5]})
    with pytest.raises(
        ConfigError,
        match=re.escape("key 'scales.quick.blocks[0].grid.pruner': unknown pruner 'grasp2'"),
    ):
        build_study("trainable_depth", path, study, "quick", 64)
    with pytest.raises(ConfigError, match="sparsity 0.5 without a pruner"):
        build_study("trainable_depth", path, tiny_study(fixed={"sparsity": 0.5}), "quick", 64)
    with pytest.raises(ConfigError, match="unknown prune_scope 'everywhere'"):
        build_study("trainable_depth", path, _pruning_study(prune_scope="everywhere"), "quick", 64)


@pytest.mark.slow
def test_unknown_pruner_in_the_workflow_is_a_clear_error(workdir):
    cfg = write_config(workdir, _pruning_study(pruner="snipp"))
    p = run_snakemake(workdir, cfg, "-n", check=False)
    assert p.returncode != 0
    want = (
        f"{workdir / 'studies' / 'trainable_depth.yaml'}: key 'scales.quick.blocks[0].fixed.pruner'"
    )
    msg = p.stdout + p.stderr
    assert want in msg and "unknown pruner 'snipp'" in msg, msg[-3000:]
    bad = _pruning_study()
    bad["scales"]["quick"]["blocks"][0]["fixed"]["sparsity"] = 1.5
    cfg = write_config(workdir, bad)
    p = run_snakemake(workdir, cfg, "-n", check=False)
    assert (
        p.returncode != 0 and "key 'scales.quick.blocks[0].fixed.sparsity'" in p.stdout + p.stderr
    )


def test_config_knows_the_pruners_of_the_package():
    from sigprop import prune
    from sigprop.config import KNOWN_PRUNERS

    assert set(KNOWN_PRUNERS) == set(prune.PRUNERS)


# -- the trainer with masks ------------------------------------------------------------------


def _train(runs, data, masks=None, steps=None, in_shape=(64,), **kw):
    shard = Shard("t", runs)
    params, buffers = initial_state(shard, in_shape, data.n_classes, CPU, torch.float64)
    t = ShardTrainer(shard, data, params, CPU, buffers=buffers, masks=masks, **kw)
    if steps is None:
        return t, t.run()
    for _ in range(steps):
        t.train_step()
    return t, None


def _assert_masked_zero_and_kept_moved(trainer, params0, masks):
    n_masked = 0
    for p, p0, m in zip(trainer.params, params0, masks):
        if m is None:
            continue
        drop = m == 0
        n_masked += int(drop.sum())
        assert torch.count_nonzero(p.detach()[drop]) == 0  # exactly zero
        keep = ~drop
        moved = (p.detach()[keep] != p0[keep]).double().mean()
        assert moved > 0.9, float(moved)  # the kept weights do train
    assert n_masked > 0


def test_masked_fc_weights_stay_exactly_zero_through_training():
    torch.set_num_threads(1)
    runs, data = _fc_runs(), _flat()
    params, _ = initial_state(Shard("t", runs), (64,), 10, CPU, torch.float64)
    masks = _random_masks(params)
    t, df = _train(runs, data, masks)
    _assert_masked_zero_and_kept_moved(t, params, masks)
    assert not df.value.isna().any()
    # the forward pass used the pruned weights from step 0: the first losses differ from dense
    dense = _train(runs, data)[1]
    first = (df.metric == "train_loss") & (df.step == 0)
    assert not np.allclose(df[first].value, dense[first].value)


@pytest.mark.parametrize(
    "arch, side", [("vcnn", 8), ("lenet", 16)]
)  # digits-shaped; LeNet's two 5x5 convs need 16
def test_masked_conv_weights_stay_exactly_zero_through_training(arch, side):
    torch.set_num_threads(1)
    base = dict(
        arch=arch,
        dataset="toy",
        width=4,
        depth=2,
        activation="relu",
        batch_size=8,
        steps=5,
        eval_every=5,
        lr=0.05,
        momentum=0.9,
        weight_decay=1e-3,
        precision="float64",
        sigma_w2=2.0,
    )
    runs = (RunSpec(**base), RunSpec(**base, seed=1))
    data = _images(side=side)
    params, _ = initial_state(Shard("t", runs), (1, side, side), 3, CPU, torch.float64)
    masks = _random_masks(params)
    assert any(m is not None and p.dim() == 5 for p, m in zip(params, masks))  # conv kernels
    t, _ = _train(runs, data, masks, steps=5, in_shape=(1, side, side))
    _assert_masked_zero_and_kept_moved(t, params, masks)


def test_a_model_trains_with_its_mask_as_alone_and_all_ones_masks_change_nothing():
    torch.set_num_threads(1)
    a, b = _fc_runs()
    data = _flat()
    pa, _ = initial_state(Shard("t", (a,)), (64,), 10, CPU, torch.float64)
    pb, _ = initial_state(Shard("t", (b,)), (64,), 10, CPU, torch.float64)
    ma, mb = _random_masks(pa, 0.3, seed=2), _random_masks(pb, 0.8, seed=3)
    both = [torch.cat([x, y]) if x is not None else None for x, y in zip(mb, ma)]
    alone = _train((a,), data, ma)[1]
    shard = _train((b, a), data, both)[1]
    np.testing.assert_allclose(
        shard[shard.run_id == a.run_id].value.to_numpy(),
        alone.value.to_numpy(),
        rtol=1e-10,
        atol=1e-12,
    )
    ones = [None if m is None else torch.ones_like(m) for m in both]
    dense, with_ones = _train((b, a), data)[1], _train((b, a), data, ones)[1]
    pd.testing.assert_frame_equal(dense, with_ones)


def test_mask_shapes_are_checked():
    runs = _fc_runs()
    params, _ = initial_state(Shard("t", runs), (64,), 10, CPU, torch.float64)
    bad = _random_masks(params)
    bad[0] = bad[0][:1]
    with pytest.raises(ValueError, match="mask 0 has shape"):
        ShardTrainer(Shard("t", runs), _flat(), params, CPU, masks=bad)
    with pytest.raises(ValueError, match="masks for"):
        ShardTrainer(Shard("t", runs), _flat(), params, CPU, masks=bad[:2])


def test_masked_shard_resumes_from_checkpoint_and_ignores_other_masks(tmp_path, caplog):
    torch.set_num_threads(1)
    runs, data = _fc_runs(), _flat()
    shard = Shard("t", runs)
    params, _ = initial_state(shard, (64,), 10, CPU, torch.float64)
    masks = _random_masks(params)
    ref = ShardTrainer(shard, data, params, CPU, masks=masks).run()
    ck = tmp_path / "ck.pt"
    t = ShardTrainer(shard, data, params, CPU, masks=masks, checkpoint=ck, checkpoint_every=4)
    t.evaluate()
    for _ in range(6):  # killed after step 6, checkpoint at 4
        t.train_step()
        if t.step % 4 == 0:
            t.evaluate()
            t._save_checkpoint()
    resumed = ShardTrainer(shard, data, params, CPU, masks=masks, checkpoint=ck, checkpoint_every=4)
    out = resumed.run()
    assert resumed.step == 12
    np.testing.assert_allclose(out.value.to_numpy(), ref.value.to_numpy(), rtol=1e-12)
    # the same checkpoint with other masks: not resumed, a fresh run with the new masks
    other = _random_masks(params, seed=9)
    with caplog.at_level(logging.WARNING, logger="sigprop.train"):
        got = ShardTrainer(
            shard, data, params, CPU, masks=other, checkpoint=ck, checkpoint_every=100
        ).run()
    assert "other pruning masks" in caplog.text
    fresh = ShardTrainer(shard, data, params, CPU, masks=other).run()
    pd.testing.assert_frame_equal(got, fresh)


def test_mask_file_round_trip_and_shard_check(tmp_path):
    runs = _fc_runs()
    shard = Shard("t", runs)
    params, _ = initial_state(shard, (64,), 10, CPU, torch.float64)
    masks = _random_masks(params)
    engine.save_masks(masks, shard, tmp_path / "m.pt")
    got = engine.load_masks(tmp_path / "m.pt", shard)
    assert [g is None for g in got] == [m is None for m in masks]
    assert all(
        g.dtype == torch.bool and torch.equal(g, m) for g, m in zip(got, masks) if m is not None
    )
    with pytest.raises(
        ValueError,
        match=rf"holds the masks of shard {shard.shard_id}; the "
        rf"workflow expects shard {Shard('t', runs[:1]).shard_id}",
    ):
        engine.load_masks(tmp_path / "m.pt", Shard("t", runs[:1]))


# -- masks of a shard: mixed pruners, sparsities and dense runs --------------------------------


def _digits_like(n=200, classes=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 64, generator=g)
    return x, torch.arange(n) % classes


def test_shard_masks_mix_pruners_sparsities_and_dense_runs_per_model():
    from sigprop import prune
    from sigprop.prune.stage import prune_groups, shard_masks

    torch.set_num_threads(1)
    base = dict(dataset="digits", width=16, depth=3)
    runs = (
        RunSpec(**base, pruner="magnitude", sparsity=0.5),
        RunSpec(**base),  # dense
        RunSpec(**base, pruner="magnitude", sparsity=0.8, seed=1),
        RunSpec(**base, pruner="snip", sparsity=0.5, prune_scope="layerwise"),
    )
    shard = Shard("t", runs)
    assert sorted(map(sorted, prune_groups(shard).values())) == [[0], [2], [3]]
    x, y = _digits_like()
    params, buffers = initial_state(shard, (64,), 10, CPU, torch.float32)
    masks = shard_masks(shard, params, buffers, x, y)
    flags = prune.prunable("fc", params)
    assert [m is not None for m in masks] == flags
    n = sum(p[0].numel() for p, f in zip(params, flags) if f)
    kept = [sum(int(m[i].sum()) for m in masks if m is not None) for i in range(4)]
    assert kept == [n - round(0.5 * n), n, n - round(0.8 * n), kept[3]]
    for m, p in zip(masks, params):  # layerwise: half of every layer (round half up)
        if m is not None:
            k = p[0].numel()
            assert int(m[3].sum()) == k - int(np.floor(0.5 * k + 0.5))
    # magnitude (003 Sec. 2): every kept |W| >= every removed |W| of the same model
    for i in (0, 2):
        w = torch.cat([p[i].abs().flatten() for p, f in zip(params, flags) if f])
        k = torch.cat([m[i].flatten() for m in masks if m is not None])
        assert w[k].min() >= w[~k].max()
    # each model's mask is what it gets alone: masks do not depend on the shard
    for i, r in enumerate(runs):
        one = Shard("t", (r,))
        p1, b1 = initial_state(one, (64,), 10, CPU, torch.float32)
        m1 = shard_masks(one, p1, b1, x, y)
        for a, b in zip(masks, m1):
            if not r.pruner:  # a dense run: no masks alone, all ones in a pruned shard
                assert b is None and (a is None or bool(a[i].all()))
            else:
                assert (a is None) == (b is None)
                assert a is None or torch.equal(a[i], b[0]), (r.pruner, i)


def test_start_params_mask_and_rescale_only_the_runs_that_ask():
    """003 Prop. 1 / Alg. 1, variance-preserving: each neuron's kept fan-in has sum W^2 = sigma_w2."""
    from sigprop.prune.stage import shard_masks, start_params

    base = dict(dataset="digits", width=16, depth=3, pruner="magnitude", sparsity=0.7)
    runs = (
        RunSpec(**base, sigma_w2=1.7, prune_rescale=True),
        RunSpec(**base),
        RunSpec(depth=3, width=16),
    )
    shard = Shard("t", runs)
    params, buffers = initial_state(shard, (64,), 10, CPU, torch.float64)
    x, y = _digits_like()
    masks = shard_masks(shard, params, buffers, x, y)
    start = start_params(shard, params, masks)
    for p, q, m in zip(params, start, masks):
        if m is None:
            assert torch.equal(p, q)  # biases untouched
            continue
        np.testing.assert_allclose((q[0] ** 2).sum(-1), 1.7, rtol=1e-10)
        assert torch.count_nonzero(q[0][~m[0]]) == 0
        assert torch.equal(q[1], p[1] * m[1]) and torch.equal(q[2], p[2])


# -- the real workflow ---------------------------------------------------------------------------


def _jobs(output: str, rule: str) -> int:
    m = re.search(rf"^{rule}\s+(\d+)\s*$", output, re.M)
    return int(m.group(1)) if m else 0


def _workflow_study(sparsity_d2=(0.5, 0.8)):
    """Three shards (shard_size 3): depth 2 pruned at two sparsities; depth 3 one pruned and one
    dense run (mixed); depth 4 dense only (no prune job)."""
    study = tiny_study(grid={"keep_rate": [1.0], "depth": [2], "sigma_w2": [1.0]})
    fixed = study["scales"]["quick"]["blocks"][0]["fixed"]
    blocks = [
        {
            "fixed": {**fixed, "pruner": "magnitude", "depth": 2},
            "grid": {"sparsity": list(sparsity_d2)},
        },
        {"fixed": {**fixed, "pruner": "magnitude", "depth": 3}, "grid": {"sparsity": [0.5]}},
        {"fixed": {**fixed}, "grid": {"depth": [3, 4]}},
    ]
    study["scales"]["quick"]["blocks"] = blocks
    study["scales"]["paper"]["blocks"] = blocks
    return study


def _mtimes(folder):
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*") if p.is_file()}


@pytest.mark.slow
def test_workflow_prunes_once_trains_masked_and_reruns_only_edited_shards(workdir):
    from sigprop.data.prepare import load
    from sigprop.prune.stage import start_params

    study = _workflow_study()
    cfg = write_config(workdir, study, shard_size=3)
    target = "results/trainable_depth/metrics.parquet"
    first = run_snakemake(workdir, cfg, target)
    out = first.stdout + first.stderr
    st = build_study("trainable_depth", workdir / "studies/trainable_depth.yaml", study, "quick", 3)
    by_depth = {s.runs[0].depth: s for s in st.shards}
    assert sorted(by_depth) == [2, 3, 4] and len(st.shards) == 3
    assert _jobs(out, "prune_shard") == 2 and _jobs(out, "train_shard") == 3, out[-3000:]
    res = workdir / "results/trainable_depth"
    masks_dir = res / "masks"
    assert sorted(p.name for p in masks_dir.glob("*.pt")) == sorted(
        f"{by_depth[d].shard_id}.pt" for d in (2, 3)
    )  # the dense shard has none
    assert all((masks_dir / f"{by_depth[d].shard_id}.pt").is_file() for d in (2, 3))

    # the per-layer report agrees with the mask file; 0.5 of 656 weights is exactly 328
    for d in (2, 3):
        shard = by_depth[d]
        masks = engine.load_masks(masks_dir / f"{shard.shard_id}.pt", shard)
        rep = pd.read_parquet(masks_dir / f"{shard.shard_id}_layers.parquet")
        assert set(rep.run_id) == {r.run_id for r in shard.runs if r.pruner}
        for i, r in enumerate(shard.runs):
            if not r.pruner:
                assert all(bool(m[i].all()) for m in masks if m is not None)
                continue
            rows = rep[rep.run_id == r.run_id].sort_values("layer")
            layers = [m[i] for m in masks if m is not None]
            assert rows.n_weights.tolist() == [m.numel() for m in layers]
            assert rows.n_kept.tolist() == [int(m.sum()) for m in layers]
            np.testing.assert_array_equal(rows.kept_fraction, rows.n_kept / rows.n_weights)
            n = rows.n_weights.sum()
            assert rows.n_kept.sum() == n - int(np.floor(r.sparsity * n + 0.5))
            assert (rows.pruner == "magnitude").all() and (rows.sparsity == r.sparsity).all()
    half = pd.read_parquet(masks_dir / f"{by_depth[2].shard_id}_layers.parquet").query(
        "sparsity == 0.5"
    )
    assert (half.n_weights.sum(), half.n_kept.sum()) == (64 * 8 + 8 * 8 + 8 * 10, 328)
    # magnitude masks of the shard's initial weights; training used them: the rows equal an
    # in-process masked run, whose masked weights are exactly zero at the end
    shard = by_depth[3]
    torch.set_num_threads(1)
    data = engine.to_data(load(workdir / "results/data/digits.npz"), CPU, torch.float32)
    params, _ = initial_state(shard, (64,), 10, CPU, torch.float32)
    masks = engine.load_masks(masks_dir / f"{shard.shard_id}.pt", shard)
    w = torch.cat([p[0].abs().flatten() for p, m in zip(params, masks) if m is not None])
    k = torch.cat([m[0].flatten() for m in masks if m is not None])
    assert w[k].min() >= w[~k].max()
    trainer = ShardTrainer(shard, data, start_params(shard, params, masks), CPU, masks=masks)
    ref = trainer.run()
    for p, m in zip(trainer.params, masks):
        if m is not None:
            assert torch.count_nonzero(p.detach()[~m]) == 0
            assert torch.count_nonzero(p.detach()[m]) == int(m.sum())
    got = pd.read_parquet(res / "runs" / f"{shard.shard_id}.parquet")
    key = ["run_id", "step", "metric"]
    a, b = got.sort_values(key).reset_index(drop=True), ref.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a[key], b[key])
    np.testing.assert_allclose(a.value, b.value, rtol=1e-6, atol=1e-9, equal_nan=True)
    dense = ShardTrainer(shard, data, params, CPU).run().sort_values(key).reset_index(drop=True)
    pruned_run = a.run_id == shard.runs[0].run_id
    assert not np.allclose(a.value[pruned_run], dense.value[pruned_run])
    assert {"pruner", "sparsity", "prune_rescale"} <= set(got.columns)

    again = run_snakemake(workdir, cfg, target)
    assert "Nothing to be done" in again.stdout + again.stderr

    # edit one sparsity: only the depth-2 shard is drawn, pruned and trained again
    before = {**_mtimes(masks_dir), **_mtimes(res / "runs")}
    study = _workflow_study((0.5, 0.7))
    write_config(workdir, study, shard_size=3)
    p = run_snakemake(workdir, cfg, target)
    out = p.stdout + p.stderr
    assert (_jobs(out, "init_shard"), _jobs(out, "prune_shard"), _jobs(out, "train_shard")) == (
        1,
        1,
        1,
    ), out[-3000:]
    st2 = build_study(
        "trainable_depth", workdir / "studies/trainable_depth.yaml", study, "quick", 3
    )
    new = {s.shard_id for s in st2.shards} - {s.shard_id for s in st.shards}
    assert len(new) == 1 and next(iter(new)) != by_depth[2].shard_id
    after = {**_mtimes(masks_dir), **_mtimes(res / "runs")}
    for d in (3, 4):
        for name in (
            f"{by_depth[d].shard_id}.pt",
            f"{by_depth[d].shard_id}_layers.parquet",
            f"{by_depth[d].shard_id}.parquet",
        ):
            if name in before:
                assert after[name] == before[name], name
    merged = pd.read_parquet(res / "metrics.parquet")
    assert sorted(merged.sparsity.unique()) == [0.0, 0.5, 0.7]


def test_a_pruned_shard_without_its_masks_file_is_refused(tmp_path):
    """The masks file comes from the rule (its input): a pruned shard given none, or a dense one
    given one, is refused before anything is read."""
    from sigprop.runs import RunSpec, Shard
    from sigprop.steps.shards import _check_masks

    pruned = Shard("s", (RunSpec(arch="fc", width=8, depth=2, pruner="magnitude", sparsity=0.5),))
    dense = Shard("s", (RunSpec(arch="fc", width=8, depth=2),))
    assert pruned.pruned and not dense.pruned
    with pytest.raises(ValueError, match="has pruned runs but no masks file was given"):
        _check_masks(pruned, None)
    with pytest.raises(ValueError, match="has no pruned run but got masks m.pt"):
        _check_masks(dense, "m.pt")
    _check_masks(pruned, "m.pt")
    _check_masks(dense, None)


def test_prune_max_scores_the_first_examples_of_the_class_balanced_batch():
    """prune_max (the smoke run's cap) keeps the first examples of the class-balanced scoring
    batch: the masks equal SNIP's on exactly those examples, and differ from the whole batch's."""
    from sigprop import prune
    from sigprop.nets import families
    from sigprop.prune.stage import shard_masks

    torch.set_num_threads(1)
    run = RunSpec(dataset="digits", width=16, depth=3, pruner="snip", sparsity=0.5, prune_max=6)
    x, y = _digits_like()
    shard = Shard("t", (run,))
    params, buffers = initial_state(shard, (64,), 10, CPU, torch.float32)
    got = shard_masks(shard, params, buffers, x, y)
    xb, yb = prune.class_balanced_batch(x, y, run.prune_batch, run.prune_data_key)
    fam = families.get("fc")
    want = prune.compute_masks(
        "snip",
        fam,
        [run],
        params,
        buffers,
        xb[:6].unsqueeze(0),
        yb[:6].unsqueeze(0),
        0.5,
        keys=torch.tensor([run.key]),
    )
    full = prune.compute_masks(
        "snip",
        fam,
        [run],
        params,
        buffers,
        xb.unsqueeze(0),
        yb.unsqueeze(0),
        0.5,
        keys=torch.tensor([run.key]),
    )
    assert all((a is None) == (b is None) for a, b in zip(got, want))
    assert all(a is None or torch.equal(a, b) for a, b in zip(got, want))
    assert any(a is not None and not torch.equal(a, b) for a, b in zip(got, full))
