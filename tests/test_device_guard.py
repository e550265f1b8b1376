"""Device-safe code, tested without a GPU: every family, trainer path, pruner and measurement of
the shared layers runs with ``torch.set_default_device("meta")`` while the shard's own device
is the CPU.

Under that guard a factory call without an explicit device (``torch.tensor``, ``zeros``,
``arange``, ``as_tensor``, ``randn``, a module's parameters, ...) makes a *meta* tensor, which
fails as soon as it meets a CPU tensor ("Tensor on device meta is not on the expected device")
or is copied out (``.cpu()``, ``.item()``, ``.numpy()``).  On a GPU the same call would put a
tensor on the CPU next to CUDA tensors, so a test that passes here has no device-less tensor
creation on the paths it runs.  Every result is also checked to be on the CPU (a meta tensor
that never met a CPU tensor would otherwise go unnoticed) and, for the trainer, equal to the
same run without the guard.  :func:`test_guard_catches_a_device_less_tensor` is the negative
control: the guard fails a deliberately device-less creation.

What the guard caught, each fixed in f6bd570 (2026-11-23): ``class_balanced_batch`` copied the
data to the default device; probe inputs, NTK scales and embeddings, dropout-learning
permutations, the naive per-example norms, the fallback family's module template and the fc
sigma vectors were created without a device; diversity_linear's keys and sigma vectors
(ecd932c).  The same pass removed two per-step host syncs ("any model active", the dropout keep
thresholds) and made the fc init decide orthogonality on the host.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from sigprop import prune
from sigprop.nets import families
from sigprop.prune.stage import mask_report, shard_masks, start_params
from sigprop.runs import RunSpec, Shard
from sigprop.train.engine import Data, ShardTrainer, initial_state

CPU = torch.device("cpu")
N_OUT = 3


@contextlib.contextmanager
def meta_default():
    """``torch.set_default_device("meta")`` for the block, the previous default restored after."""
    prev = torch.get_default_device()
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(None if prev == CPU else prev)


@pytest.fixture(autouse=True)
def _restore_default_device():
    """Whatever a test does, the default device is the CPU again after it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        if torch.get_default_device() != CPU:
            torch.set_default_device(None)
        torch.set_num_threads(threads)


def _assert_cpu(obj, where="result"):
    """Every tensor in ``obj`` (nested lists / tuples / dicts / a GradNorms-like object) is on
    the CPU."""
    if torch.is_tensor(obj):
        assert obj.device == CPU, f"{where}: a tensor on {obj.device}"
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _assert_cpu(v, f"{where}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _assert_cpu(v, f"{where}[{i}]")
    elif hasattr(obj, "__dataclass_fields__"):
        for k in obj.__dataclass_fields__:
            _assert_cpu(getattr(obj, k), f"{where}.{k}")


def _data(in_shape, n_train=32, n_test=16, classes=N_OUT, seed=0, dtype=torch.float32) -> Data:
    """A tiny classification set on the CPU, every class in the training set often enough for
    a class-balanced scoring batch of 2 per class."""
    g = torch.Generator(device=CPU).manual_seed(seed)
    n = n_train + n_test
    x = torch.randn((n,) + tuple(in_shape), generator=g, dtype=torch.float64, device=CPU)
    y = torch.arange(n, device=CPU) % classes
    return Data(x[:n_train].to(dtype), y[:n_train], x[n_train:].to(dtype), y[n_train:], classes)


# -- negative control ---------------------------------------------------------------------------


def _leaky(x: torch.Tensor) -> torch.Tensor:
    return x + torch.zeros(3)  # no device: the default device's


def _tight(x: torch.Tensor) -> torch.Tensor:
    return x + torch.zeros(3, device=x.device)


def test_guard_catches_a_device_less_tensor():
    x = torch.ones(3, device=CPU)
    with meta_default():
        with pytest.raises(RuntimeError, match="meta"):
            _leaky(x)
        # a device-less tensor that meets no CPU tensor is caught by the device check of results
        with pytest.raises(AssertionError, match="meta"):
            _assert_cpu({"out": [torch.arange(3)]})
        assert torch.equal(_tight(x), x)
    assert torch.get_default_device() == CPU
    assert torch.equal(_leaky(x), x)  # without the guard the same code runs


# -- every family: init and training ----------------------------------------------------------

# arch -> (run fields, input shape): the smallest nets of each family
FAMILY_CASES = {
    "fc": (dict(width=8, depth=3, activation="tanh", keep_rate=0.9), (6,)),
    "fc_loop": (dict(width=8, depth=2, activation="tanh"), (6,)),
    "resnet_fc": (dict(width=8, depth=2, activation="relu", branch_depth=2, alpha=0.5), (6,)),
    "stable_resnet_fc": (dict(width=8, depth=2, activation="tanh", branch_depth=2), (2, 3)),
    "densenet_fc": (dict(width=8, depth=3, activation="relu"), (6,)),
    "resnet18": (dict(width=2, activation="relu", head_depth=1, head_width=5), (3, 8, 8)),
    "resnet34": (dict(width=2, activation="relu"), (3, 8, 8)),
    "resnet32": (dict(width=2, activation="relu"), (3, 8, 8)),
    "stable_resnet32": (dict(width=2, activation="relu"), (3, 8, 8)),
    "resnet50": (dict(width=2, activation="relu"), (3, 8, 8)),
    "stable_resnet50": (dict(width=2, activation="relu"), (3, 8, 8)),
    "resnet104": (dict(width=2, activation="relu"), (3, 8, 8)),
    "stable_resnet104": (dict(width=2, activation="relu"), (3, 8, 8)),
    "vgg16": (dict(width=2, activation="relu"), (3, 32, 32)),
    "vgg16x3": (dict(width=2, activation="relu"), (3, 32, 32)),
    "vcnn": (dict(width=4, depth=3, activation="tanh"), (1, 6, 6)),
    "lenet": (dict(width=4, depth=2, activation="relu"), (1, 16, 16)),
}


def test_every_family_has_a_case():
    assert set(FAMILY_CASES) == set(families.FAMILIES)


def _family_runs(arch, kw, **more):
    base = dict(
        arch=arch, dataset="toy", batch_size=8, steps=3, eval_every=2, lr=1e-2, sigma_b2=0.05, **kw
    )
    base.update(more)
    return (RunSpec(**base, sigma_w2=2.0, seed=0), RunSpec(**base, sigma_w2=1.5, seed=1))


def _train(shard, data, in_shape, dtype=torch.float32, guard=True, **trainer_kw):
    ctx = meta_default() if guard else contextlib.nullcontext()
    with ctx:
        params, buffers = initial_state(shard, in_shape, data.n_classes, CPU, dtype)
        _assert_cpu((params, buffers), "initial state")
        trainer = ShardTrainer(shard, data, params, CPU, buffers=buffers, **trainer_kw)
        df = trainer.run(progress_every=1e9)
        _assert_cpu((trainer.params, trainer.buffers, trainer.opt.state), "trained state")
    return trainer, df


@pytest.mark.parametrize("arch", sorted(FAMILY_CASES))
def test_family_inits_and_trains_under_the_guard(arch):
    kw, in_shape = FAMILY_CASES[arch]
    shard = Shard("guard", _family_runs(arch, kw))
    data = _data(in_shape)
    _, df = _train(shard, data, in_shape)
    assert {"train_loss", "test_acc", "batch_loss"} <= set(df.metric)
    assert np.isfinite(df[df.metric == "train_loss"].value).all()


# -- trainer paths --------------------------------------------------------------------------------


def _fc_runs(per_model=({}, {}), **kw):
    base = dict(
        arch="fc",
        dataset="toy",
        width=8,
        depth=2,
        activation="tanh",
        batch_size=8,
        steps=6,
        eval_every=2,
        lr=0.05,
        sigma_w2=1.5,
        sigma_b2=0.05,
    )
    base.update(kw)
    return tuple(RunSpec(**{**base, **extra}, seed=i) for i, extra in enumerate(per_model))


# name -> (shared run fields, per-model fields)
TRAINER_PATHS = {
    "micro_batch": (dict(micro_batch=4), ({"batch_size": 8}, {"batch_size": 4})),
    "mixed_batch": ({}, ({"batch_size": 8}, {"batch_size": 4})),
    "lr_schedule": (
        dict(lr_milestones="0.5, 5", lr_step_every=2, lr_gamma=0.5),
        ({"lr": 0.05}, {"lr": 0.02}),
    ),
    "momentum_nesterov_decay": (
        dict(momentum=0.9, nesterov=True, weight_decay=1e-3),
        ({}, {"momentum": 0.0}),
    ),
    "rmsprop": (dict(optimizer="rmsprop", lr=1e-3, weight_decay=1e-4), ({}, {})),
    "target_acc": ({}, ({"target_acc": 0.01}, {"target_loss": 1e-6})),
    "diverged": (dict(activation="relu"), ({"lr": 1e30, "sigma_w2": 50.0}, {})),
    "float64": (dict(precision="float64"), ({}, {})),
    "bf16": (dict(precision="bf16"), ({}, {})),
    "tf32": (dict(precision="tf32"), ({}, {})),
}


@pytest.mark.parametrize("path", sorted(TRAINER_PATHS))
def test_trainer_path_under_the_guard_equals_the_unguarded_run(path):
    shared, per_model = TRAINER_PATHS[path]
    shard = Shard("guard", _fc_runs(per_model, **shared))
    dtype = torch.float64 if shared.get("precision") == "float64" else torch.float32
    data = _data((6,), dtype=dtype)
    trainer, df = _train(shard, data, (6,), dtype)
    _, ref = _train(shard, data, (6,), dtype, guard=False)
    pd.testing.assert_frame_equal(df, ref)
    if path == "target_acc":
        assert trainer.target_step[0] == 0 and trainer.target_step[1] == -1
    if path == "diverged":
        assert trainer.diverged_step[0] >= 0 and trainer.diverged_step[1] == -1


def _random_masks(params, keep=0.6, seed=1):
    g = torch.Generator(device=CPU).manual_seed(seed)
    return [
        (torch.rand(p.shape, generator=g, device=CPU) < keep) if p.dim() >= 3 else None
        for p in params
    ]


@pytest.mark.parametrize("arch", ["fc", "vcnn", "resnet32"])
def test_masked_training_under_the_guard(arch):
    kw, in_shape = FAMILY_CASES[arch]
    shard = Shard("guard", _family_runs(arch, kw, steps=4))
    data = _data(in_shape)
    params, buffers = initial_state(shard, in_shape, N_OUT, CPU, torch.float32)
    masks = _random_masks(params)
    with meta_default():
        trainer = ShardTrainer(shard, data, params, CPU, buffers=buffers, masks=masks)
        df = trainer.run(progress_every=1e9)
        _assert_cpu((trainer.params, trainer.masks), "masked shard")
    ref = ShardTrainer(shard, data, params, CPU, buffers=buffers, masks=masks).run(
        progress_every=1e9
    )
    pd.testing.assert_frame_equal(df, ref)
    for p, m in zip(trainer.params, masks):
        if m is not None:
            assert not p.detach()[~m].any()  # masked weights stay exactly zero


class _Killed(Exception):
    pass


@pytest.mark.parametrize("micro", [0, 4])
def test_resume_from_a_checkpoint_under_the_guard(tmp_path, micro):
    """Killed after step 5 (checkpoint at step 3, inside a micro-batch accumulation when
    ``micro``), a new trainer resumes from the checkpoint: the rows equal an uninterrupted run's."""
    runs = _fc_runs(({}, {"lr": 0.02}), steps=8, momentum=0.9, micro_batch=micro)
    shard = Shard("guard", runs)
    data = _data((6,))
    params, _ = initial_state(shard, (6,), N_OUT, CPU, torch.float32)
    ref = ShardTrainer(shard, data, params, CPU).run(progress_every=1e9)
    ck = tmp_path / "ck.pt"
    with meta_default():
        first = ShardTrainer(shard, data, params, CPU, checkpoint=ck, checkpoint_every=3)
        step = first.train_step

        def killed_after_5():
            if first.step == 5:
                raise _Killed
            step()

        first.train_step = killed_after_5
        with pytest.raises(_Killed):
            first.run(progress_every=1e9)
        assert ck.exists()
        resumed = ShardTrainer(shard, data, params, CPU, checkpoint=ck, checkpoint_every=3)
        df = resumed.run(progress_every=1e9)
        _assert_cpu((resumed.params, resumed.opt.state, resumed._acc), "resumed shard")
    assert resumed.step == 8
    pd.testing.assert_frame_equal(df, ref)


# -- pruners (the prune stage) ------------------------------------------------------------------

RESCALABLE = ("fc", "vcnn", "lenet", "vgg16")
# (pruner, family): every pruner on a fully connected and a conv family (sbp_sr: Stable ResNets)
PRUNE_CASES = [(p, a) for p in prune.PRUNERS if p != "sbp_sr" for a in ("fc", "vcnn")] + [
    ("snip", "resnet32"),
    ("grasp", "resnet_fc"),
    ("synflow", "resnet32"),
    ("sbp_sr", "stable_resnet32"),
    ("sbp_sr", "stable_resnet_fc"),
]


def test_every_pruner_has_a_case():
    assert {p for p, _ in PRUNE_CASES} == set(prune.PRUNERS)


def _pruned_shard(pruner, arch, **more):
    kw, _ = FAMILY_CASES[arch]
    prune_fields = dict(
        pruner=pruner, sparsity=0.6, prune_batch=2, prune_rounds=3, prune_rescale=arch in RESCALABLE
    )
    runs = _family_runs(arch, kw, steps=2, **more)
    return Shard("guard", (dataclasses.replace(runs[0], **prune_fields), runs[1]))


def _stage(shard, data, in_shape):
    """Init, masks, rescaled starting weights, report and masked training of a shard."""
    params, buffers = initial_state(shard, in_shape, N_OUT, CPU, torch.float32)
    masks = shard_masks(shard, params, buffers, data.x_train, data.y_train)
    start = start_params(shard, params, masks)
    report = mask_report(shard, masks, prune.prunable(shard.runs[0].arch, params))
    trainer = ShardTrainer(shard, data, start, CPU, buffers=buffers, masks=masks)
    df = trainer.run(progress_every=1e9)
    _assert_cpu((masks, start, trainer.params), "pruned shard")
    return masks, report, df


@pytest.mark.parametrize("pruner, arch", PRUNE_CASES)
def test_pruner_under_the_guard(pruner, arch):
    _, in_shape = FAMILY_CASES[arch]
    shard = _pruned_shard(pruner, arch)
    data = _data(in_shape)
    with meta_default():
        masks, report, df = _stage(shard, data, in_shape)
    ref_masks, ref_report, ref_df = _stage(shard, data, in_shape)
    assert len(masks) == len(ref_masks)
    for m, r in zip(masks, ref_masks):
        assert (m is None) == (r is None) and (m is None or torch.equal(m, r))
    assert any(m is not None for m in masks)
    pd.testing.assert_frame_equal(report, ref_report)
    pd.testing.assert_frame_equal(df, ref_df)


def test_scores_thresholds_and_rescaling_under_the_guard():
    """The rest of :mod:`sigprop.prune`: batched and float64 scoring, layerwise masks, the
    critical sparsity (exact and by bisection), the rescaling factors per layer."""
    kw, in_shape = FAMILY_CASES["vcnn"]
    runs = _family_runs("vcnn", kw)
    data = _data(in_shape)
    params, buffers = initial_state(Shard("guard", runs), in_shape, N_OUT, CPU, torch.float32)
    fam = families.get("vcnn")
    with meta_default():
        x, y = prune.class_balanced_batch(data.x_train, data.y_train, 2, [r.key for r in runs])
        flags = prune.prunable("vcnn", params)
        out = {}
        for pruner in ("snip", "grasp"):
            out[pruner] = prune.compute_scores(
                pruner, fam, runs, params, buffers, x, y, batched=True, dtype=torch.float64
            )
        out["synflow"] = prune.compute_scores(
            "synflow", "vcnn", runs, params, buffers, in_shape=in_shape
        )
        out["layerwise"] = prune.compute_masks(
            "magnitude", fam, runs, params, buffers, x, y, [0.3, 0.5], scope="layerwise"
        )
        out["synflow_masks"] = prune.compute_masks(
            "synflow",
            fam,
            runs,
            params,
            buffers,
            None,
            None,
            0.5,
            rounds=2,
            in_shape=in_shape,
            batched=True,
        )
        cr = prune.critical_sparsity_from_scores(out["snip"])
        out["collapsed"] = prune.critical_sparsity(out["layerwise"], flags)
        bis = prune.critical_sparsity_bisect(
            lambda s: prune.compute_masks("magnitude", fam, runs, params, buffers, x, y, s),
            flags,
            len(runs),
            tol=0.05,
        )
        out["rho"] = prune.rescaling_factors(
            "vcnn", params, out["layerwise"], sigma_w2=2.0, per="layer"
        )
        out["rescaled"] = prune.rescale("vcnn", params, out["layerwise"])
        rep = prune.layer_report(out["layerwise"], flags)
        _assert_cpu(out, "prune")
    assert (cr.s_cr > 0).all() and np.isfinite(bis).all() and len(rep) > 0


# -- measurements (sigprop.measure) --------------------------------------------------------------


def _init(runs, in_shape, n_out=N_OUT, dtype=torch.float64):
    return initial_state(Shard("guard", runs), in_shape, n_out, CPU, dtype)


def _dropout_fc_runs(**kw):
    base = dict(
        arch="fc",
        dataset="toy",
        width=8,
        depth=3,
        activation="tanh",
        sigma_b2=0.05,
        keep_rate=0.9,
        precision="float64",
    )
    base.update(kw)
    return (RunSpec(**base, sigma_w2=1.5, seed=0), RunSpec(**base, sigma_w2=2.0, seed=1))


def test_maps_gradients_and_gradient_runs_under_the_guard():
    from sigprop.measure import gradient_runs, gradients, maps

    runs = _dropout_fc_runs()
    shard = Shard("guard", runs)
    params, _ = _init(runs, (8,))
    with meta_default():
        q = np.array([0.5, 1.0])
        m = maps.one_layer_maps(params, runs, q, np.array([0.2, 0.9]))
        g = gradients.gradient_metrics(params, runs)
        rows = gradients.metric_rows(shard, params, "cpu")
        mat, layers = gradient_runs.matrix(rows, {"sigma_w2": 1.5}, "g_aa")
    assert np.isfinite(m[["q_out", "c_out"]].to_numpy()).all()
    assert g["g_aa"].shape == (2, 3) and np.isfinite(g["g_ab"]).all()
    assert mat.shape == (1, 3) and list(layers) == [1, 2, 3]
    ref = gradients.metric_rows(shard, params, "cpu")
    pd.testing.assert_frame_equal(rows, ref)


@pytest.mark.parametrize("arch", ["resnet_fc", "densenet_fc", "fc"])
def test_jacobians_under_the_guard(arch):
    from sigprop.studies.jacobian_moments import jacobians

    kw = dict(width=6, depth=2, activation="relu", precision="float64")
    if arch == "resnet_fc":
        kw.update(branch_depth=2, alpha=0.5)
    runs = (
        RunSpec(arch=arch, sigma_w2=2.0, seed=0, lr=0.5, **kw),
        RunSpec(arch=arch, sigma_w2=1.5, seed=1, lr=0.5, **kw),
    )
    params, _ = _init(runs, (5,), n_out=2)
    data = _data((5,), n_train=12, n_test=4, classes=2, dtype=torch.float64)
    with meta_default():
        r = jacobians.jacobian_moments(arch, runs, params, chunk=1)
        eta = torch.tensor([r_.lr for r_ in runs], dtype=torch.float64, device=CPU)
        k = jacobians.train_kernel_change(
            arch,
            runs,
            params,
            data.x_train,
            data.y_train,
            data.x_test[:3],
            steps=2,
            batch=4,
            eta=eta,
            n_eval=8,
        )
    assert np.isfinite(r["jac_sq_total"]).all() and ("f_reduced" in r) == (arch == "resnet_fc")
    assert np.isfinite(k["ntk_rel_change"]).all()
    ref = jacobians.jacobian_moments(arch, runs, params, chunk=1)
    for key in r:
        np.testing.assert_array_equal(r[key], ref[key])


@pytest.mark.parametrize("arch", ["resnet_fc", "densenet_fc"])
@pytest.mark.parametrize("method", ["vp", "jacobian"])
def test_ntk_under_the_guard(arch, method):
    from sigprop.studies.residual_ntk import ntk

    runs = tuple(
        RunSpec(
            arch=arch,
            width=6,
            depth=2,
            branch_depth=2,
            alpha=0.3,
            activation="relu",
            sigma_w2=2.0,
            sigma_b2=0.0,
            precision="float64",
            seed=s,
        )
        for s in range(2)
    )
    params, _ = _init(runs, (7,), n_out=1)
    with meta_default():
        x1, x2 = ntk.fig2_probe_inputs(np.linspace(0, np.pi, 3), 7, 2.0, torch.float64)
        xd = ntk.embed([[1.0]], 7, 1.0, torch.float64)
        g = ntk.empirical_ntk(runs, params, x1.to(CPU), x2.to(CPU), method)
        gd = ntk.empirical_ntk(runs, params, xd.to(CPU), xd.to(CPU), method)
    assert g.shape == (2, 1, 3) and gd.shape == (2, 1, 1) and np.isfinite(g).all()


def test_dropout_learning_and_dropout_mc_under_the_guard():
    from sigprop.studies.dropout_training import learning as dl
    from sigprop.studies.dropout_training import monte_carlo as mc

    run = RunSpec(
        arch="fc",
        dataset="toy",
        width=4,
        depth=2,
        activation="sigmoid",
        keep_rate=0.5,
        steps=2,
        eval_every=1,
        lr=0.1,
        momentum=0.5,
        batch_size=4,
        weight_decay=1e-4,
        precision="float64",
        sigma_b2=0.05,
        sigma_w2=1.0,
    )
    params, _ = _init((run,), (5,))
    ws, bs = mc.split_params(params, 0)
    d = _data((5,), n_train=12, n_test=6, dtype=torch.float64)
    data = {
        "x_train": d.x_train.sigmoid(),
        "y_train": d.y_train,
        "x_test": d.x_test.sigmoid(),
        "y_test": d.y_test,
    }
    p = {
        "n_inputs": 2,
        "mc_samples": 16,
        "mc_samples_trajectory": 8,
        "mc_chunk": 0,
        "pairs_per_layer": 2,
        "sparsity_inputs": 4,
        "mc_eval_samples": 2,
        "active_threshold": 0.5,
        "sparse_threshold": 0.1,
        "hist_bins": 4,
    }
    with meta_default():
        rows = dl.measure_run(ws, bs, data, run, p, 0.8, CPU)
        keeps = mc.layer_keeps(len(ws), 0.8, 0.5)
        st = mc.mc_input_stats(
            ws,
            bs,
            data["x_test"][0],
            keeps,
            12,
            mc.seeded_generator(run.key, 1, CPU),
            "dropin",
            chunk=5,
        )
        _assert_cpu(st, "mc_input_stats")
    assert {"E", "V", "test_acc_mc", "dropin_traj_V", "act_hist"} <= set(rows.metric)
    det = rows[~rows.metric.str.endswith("seconds")].reset_index(drop=True)
    ref = dl.measure_run(ws, bs, data, run, p, 0.8, CPU)
    pd.testing.assert_frame_equal(
        det, ref[~ref.metric.str.endswith("seconds")].reset_index(drop=True)
    )


def test_ensembles_mc_under_the_guard():
    from sigprop.studies.dropout_ensemble import monte_carlo as mc

    runs = (
        RunSpec(
            arch="fc",
            width=5,
            depth=2,
            activation="linear",
            keep_rate=0.5,
            precision="float64",
            seed=0,
        ),
    )
    params, _ = _init(runs, (4,), n_out=2)
    with meta_default():
        ws, bs = mc.fc_layers(params, 0)
        keeps = mc.layer_keeps(0.8, 0.5, len(ws))
        x = mc.input_vector(runs[0].key, ws[0].shape[1])
        sim = mc.linear_mc(ws, bs, keeps, x, 64, runs[0].key, cov_units=3, device="cpu")
        ex = mc.exact_linear_moments(ws, bs, keeps, x)
        rng = mc.generator(runs[0].key, mc.STREAM_SAMPLING)
        samp = mc.sampling_experiment(rng, {"dist": "uniform", "low": 0.0, "high": 1.0}, 4, 3)
    assert len(sim) == len(ex["mean"]) == 3 and np.isfinite(sim[-1]["var"]).all()
    assert all(np.all(np.isfinite(np.asarray(v, float))) for v in samp.values())


def test_per_example_gradient_norms_under_the_guard():
    from sigprop.studies.diversity_linear import per_example as pe

    runs = _dropout_fc_runs(keep_rate=1.0, depth=2, width=4)
    params, _ = _init(runs, (3,), n_out=2)
    g = torch.Generator(device=CPU).manual_seed(0)
    x = torch.randn(7, 3, generator=g, dtype=torch.float64, device=CPU)
    y = torch.randn(7, 2, generator=g, dtype=torch.float64, device=CPU)
    with meta_default():
        eff = pe.fc_grad_norms(pe.fc_layers(params), x, y, "tanh", "mse", chunk=3)
        fn = pe.fc_loss_fn("tanh", "mse", True)
        func = pe.func_grad_norms(fn, params, x, y, chunk=3)
        naive = pe.naive_grad_norms(fn, params, x, y)
        div = eff.diversity([1.0] * len(params))
        _assert_cpu((eff, func, naive, div), "gradient norms")
    torch.testing.assert_close(eff.per_example, naive.per_example)
    torch.testing.assert_close(func.sum_sq, naive.sum_sq)


def test_run_table_measures_under_the_guard():
    """:mod:`sigprop.studies.training_speed.speed` and
    :mod:`sigprop.studies.trainable_depth.trainability` (pandas only) on the run table of a shard
    trained under the guard."""
    from sigprop.studies.trainable_depth import trainability
    from sigprop.studies.training_speed import speed

    runs = _fc_runs(({"target_acc": 0.01}, {"target_acc": 0.99}))
    data = _data((6,))
    with meta_default():
        _, df = _train(Shard("guard", runs), data, (6,))
        taus = speed.tau_table(df)
        c = speed.curves(taus)
        acc = trainability.final_accuracy(df.assign(block="b"), "train_acc", chance=1 / N_OUT)
        cells = trainability.trainable(acc, chance=1 / N_OUT)
    assert list(taus.reached) == [True, False] and len(c) == 1
    assert len(cells) == 1 and cells.n_runs.iloc[0] == 2


def test_cpu_simulations_under_the_guard():
    """The CPU-only torch code of the theory and the per-example benchmark name their device."""
    from sigprop.studies.diversity_linear import per_example as pe
    from sigprop.theory import gradients as theory

    with meta_default():
        sim = theory.simulate_linear_dropout(6, 2, 0.5, 0.05, [1.0, 0.8], 3, seed=0, chunk=2)
        bench = pe.benchmark(n=8, d=3, width=4, depth=1, chunk=4, naive_examples=4, reps=1)
    assert sim["g_aa"].shape == (2, 3, 2) and np.isfinite(sim["g_ab"]).all()
    assert bench["max_rel_diff_func"] < 1e-9 and bench["max_rel_diff_naive"] < 1e-9


# -- the workflow's shard steps ------------------------------------------------------------------


def test_workflow_steps_init_prune_train_under_the_guard(tmp_path):
    """``init_shard``, ``prune_shard`` and ``train_shard`` (with a checkpoint) of
    :mod:`sigprop.steps.shards` on a prepared data set, device ``cpu``, under the guard."""
    from sigprop.data.prepare import prepare
    from sigprop.steps import shards as workflow_steps

    data_path = prepare("digits", tmp_path / "digits.npz")
    base = dict(
        arch="fc",
        dataset="digits",
        width=8,
        depth=2,
        activation="relu",
        batch_size=16,
        steps=4,
        eval_every=2,
        lr=0.05,
        momentum=0.9,
    )
    runs = (
        RunSpec(**base, seed=0),
        RunSpec(**base, seed=1, pruner="snip", sparsity=0.5, prune_batch=2, prune_rescale=True),
    )
    shard = Shard("guard", runs)
    js = shard.to_json()
    init, masks, report = tmp_path / "init.pt", tmp_path / "masks.pt", tmp_path / "report.parquet"
    out, ck = tmp_path / "runs.parquet", tmp_path / "ck.pt"
    with meta_default():
        workflow_steps.init_shard(js, str(data_path), str(init), device="cpu")
        workflow_steps.prune_shard(
            js, str(init), str(data_path), str(masks), str(report), device="cpu"
        )
        workflow_steps.train_shard(
            js,
            str(init),
            str(data_path),
            str(out),
            checkpoint=str(ck),
            checkpoint_every=2,
            device="cpu",
            masks_path=str(masks),
        )
    df = pd.read_parquet(out)
    assert {"train_acc", "test_loss"} <= set(df.metric) and not ck.exists()
    assert len(pd.read_parquet(report)) == 3  # the pruned model's 3 layers
