"""End-to-end tests of prepare()/load() on embedded sets and tiny raw files."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from sigprop.data import catalog, embedded, formats
from sigprop.data.fetch import ChecksumError, UnpinnedChecksumError
from sigprop.data.prepare import load, prepare


def _helpers():
    name = "_sigprop_test_data_helpers"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).with_name("test_data_helpers.py")
        )
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


H = _helpers()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- embedded sets ------------------------------------------------------------------


def test_digits_end_to_end(tmp_path):
    out = prepare("digits", tmp_path / "d" / "digits.npz")
    assert sorted(p.name for p in out.parent.iterdir()) == ["digits.npz"]  # no temp files
    ds = load(out)
    assert ds.x_train.shape == (1347, 64) and ds.x_test.shape == (450, 64)
    assert ds.x_train.dtype == np.float32 and ds.y_train.dtype == np.int64
    assert set(np.unique(ds.y_train)) == set(range(10))
    std = ds.x_train.std(0)
    const = std < 1e-6
    assert const.any()  # the always-blank corner pixels
    np.testing.assert_allclose(ds.x_train.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(std[~const], 1, atol=1e-4)
    assert not ds.x_train[:, const].any() and not ds.x_test[:, const].any()
    meta = ds.meta
    assert meta["name"] == "digits" and meta["task"] == "classification"
    assert meta["normalization"]["kind"] == "per_feature"
    assert meta["normalization"]["n_constant_features"] == int(const.sum())
    assert meta["n_train"] == 1347 and meta["input_shape"] == [64]


def test_digits_deterministic_and_seeded(tmp_path):
    a = load(prepare("digits", tmp_path / "a.npz"))
    b = load(prepare("digits", tmp_path / "b.npz", options={"seed": 0}))
    c = load(prepare("digits", tmp_path / "c.npz", options={"seed": 1, "test_fraction": 0.5}))
    np.testing.assert_array_equal(a.x_train, b.x_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert c.x_test.shape == (899, 64) and c.meta["options"] == {"seed": 1, "test_fraction": 0.5}
    # stratified: every class keeps its share in the test split
    counts = np.bincount(a.y_test, minlength=10)
    assert counts.min() >= 43 and counts.max() <= 47


def test_synthetic_regression_shapes_and_determinism(tmp_path):
    opts = {
        "n_train": 300,
        "n_test": 100,
        "d_in": 8,
        "d_out": 3,
        "teacher_depth": 4,
        "teacher_width": 16,
        "seed": 5,
    }
    a = load(prepare("synthetic_regression", tmp_path / "a.npz", options=opts))
    b = load(prepare("synthetic_regression", tmp_path / "b.npz", options=opts))
    assert a.x_train.shape == (300, 8) and a.x_test.shape == (100, 8)
    assert a.y_train.shape == (300, 3)
    assert a.y_train.dtype == np.float32 and a.meta["task"] == "regression"
    assert a.meta["normalization"] == {"kind": "none"}
    for key in ("x_train", "y_train", "x_test", "y_test"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key))
    other = load(prepare("synthetic_regression", tmp_path / "c.npz", options={**opts, "seed": 6}))
    assert not np.allclose(other.x_train, a.x_train)


def test_synthetic_regression_teacher_is_exact_linear_and_scaled():
    x, y, x_te, y_te = embedded.synthetic_regression(n_train=2000, n_test=500, seed=3)
    w = embedded.teacher_weights(32, 4, 3, 32, seed=3)
    product = w[2] @ w[1] @ w[0] / np.sqrt(32 * 32**2)
    np.testing.assert_allclose(y, x @ product.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y_te, x_te @ product.T, rtol=1e-4, atol=1e-4)
    assert 0.05 < y.var(0).mean() < 20  # O(1) label variance
    # changing n_train changes neither the teacher nor the test set
    _, _, x_te2, y_te2 = embedded.synthetic_regression(n_train=100, n_test=500, seed=3)
    np.testing.assert_array_equal(x_te2, x_te)
    np.testing.assert_array_equal(y_te2, y_te)
    _, y_noisy, _, _ = embedded.synthetic_regression(n_train=2000, n_test=500, noise=0.5, seed=3)
    assert 0.1 < np.std(y_noisy - y) < 1.0


def test_gaussian(tmp_path):
    ds = load(prepare("gaussian", tmp_path / "g.npz", options={"n": 50, "d": 7, "seed": 2}))
    assert ds.x_train.shape == (50, 7) and ds.x_test.shape == (0, 7)
    assert not ds.y_train.any()
    x, _, x_te, _ = embedded.gaussian(n=50, d=7, n_test=5, seed=2)
    np.testing.assert_array_equal(x, ds.x_train)
    assert x_te.shape == (5, 7) and not np.allclose(x_te, x[:5])


def test_unknown_option_and_dataset(tmp_path):
    with pytest.raises(ValueError, match="'depth'"):
        prepare("synthetic_regression", tmp_path / "x.npz", options={"depth": 3})
    with pytest.raises(KeyError, match="known datasets"):
        prepare("imagenet", tmp_path / "x.npz")
    with pytest.raises(ValueError, match="'seed'"):
        prepare("mnist", tmp_path / "x.npz", raw_dir=tmp_path, options={"seed": 1})
    assert not (tmp_path / "x.npz").exists()


# --- load() validation ------------------------------------------------------------------


def _arrays():
    from sigprop.data.prepare import FORMAT_VERSION, content_digest

    arrays = {
        "x_train": np.zeros((4, 3), np.float32),
        "y_train": np.zeros(4, np.int64),
        "x_test": np.zeros((2, 3), np.float32),
        "y_test": np.zeros(2, np.int64),
    }
    meta = {
        "format_version": FORMAT_VERSION,
        "task": "classification",
        "content_sha256": content_digest(arrays),
    }
    return {**arrays, "meta": np.array(json.dumps(meta))}


@pytest.mark.parametrize(
    "change, key",
    [
        (lambda a: a.pop("y_test"), "y_test"),
        (lambda a: a.update(x_train=np.zeros((4, 3))), "x_train"),
        (lambda a: a.update(y_train=np.zeros(3, np.int64)), "y_train"),
        (lambda a: a.update(y_test=np.zeros(2, np.float32)), "y_test"),
        (lambda a: a.update(x_test=np.zeros((2, 5), np.float32)), "x_test"),
        (lambda a: a.update(meta=np.array("{not json")), "meta"),
        (lambda a: a.update(meta=np.array([{"task": "x"}], dtype=object)), "meta"),
    ],
)
def test_load_rejects_malformed_npz(tmp_path, change, key):
    arrays = _arrays()
    change(arrays)
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=f"bad.npz.*'{key}'"):
        load(path)


def test_load_accepts_good_and_rejects_non_npz(tmp_path):
    path = tmp_path / "ok.npz"
    np.savez(path, **_arrays())
    assert load(path).meta["task"] == "classification"
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"definitely not a zip")
    with pytest.raises(ValueError, match="junk.npz"):
        load(junk)
    bare = tmp_path / "bare.npy"
    np.save(bare, np.zeros(3))
    with pytest.raises(ValueError, match="bare.npy"):
        load(bare)


# --- identity and contents ---------------------------------------------------------------


def _rewritten(path: Path, out: Path, change) -> Path:
    """``path``'s arrays and meta, ``change``d, written to ``out`` as a valid .npz."""
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    np.savez(out, **arrays)
    return out


def _step_error(path: Path, expect: dict) -> str:
    """What a shard's init job says of the data set ``path`` made for ``expect``."""
    from sigprop.runs import RunSpec, Shard
    from sigprop.steps.shards import init_shard

    shard = Shard(
        "s", (RunSpec(width=4, depth=1, steps=2, eval_every=1, batch_size=8, dataset="digits"),)
    )
    with pytest.raises(ValueError) as e:
        init_shard(
            shard.to_json(),
            str(path),
            str(path.parent / "init.pt"),
            device="cpu",
            data_expect=json.dumps(expect),
        )
    assert not (path.parent / "init.pt").exists()
    import pickle  # as a job's worker process sends it to Snakemake's

    assert str(pickle.loads(pickle.dumps(e.value))) == str(e.value)
    return str(e.value)


def test_a_file_whose_arrays_changed_after_it_was_written_is_refused(tmp_path):
    """A valid digits file whose training labels were permuted, its meta kept (what a
    Snakemake run cannot see: a symlink to it with an older time replans nothing): refused
    naming the file, by load and by every shard step; the file as written is accepted."""
    path = prepare("digits", tmp_path / "made" / "digits.npz")
    good = load(path)
    permuted = _rewritten(
        path,
        tmp_path / "permuted.npz",
        lambda a: a.update(y_train=np.random.default_rng(0).permutation(a["y_train"])),
    )
    link = tmp_path / "data" / "digits.npz"
    link.parent.mkdir()
    link.symlink_to(permuted)
    for bad in (permuted, link):
        with pytest.raises(
            ValueError, match=re.escape(f"{bad}: its arrays are not the ones it was written with")
        ):
            load(bad)
    expect = {"name": "digits", "options": {}, "sizes": {}}
    said = _step_error(link, expect)
    assert said.startswith(f"{link}: its arrays are not the ones it was written with")
    assert said.endswith(f"rebuild it with `snakemake --force {link}`")
    assert load(path, expect).meta == good.meta


def test_a_file_made_for_another_data_set_or_options_is_refused_naming_the_key(tmp_path):
    """A valid prepared file of another data set, other options, sizes or prepare code, under
    the name the workflow reads (copied or symlinked there): refused naming the file and the
    key; the file made as expected passes."""
    from sigprop.data.prepare import check

    expect = {"name": "digits", "options": {}, "sizes": {}, "code": "c1"}
    right = prepare("digits", tmp_path / "right.npz", code="c1")
    assert load(right, expect).meta["name"] == "digits"
    assert check(right, expect)["content_sha256"] == load(right).meta["content_sha256"]
    foreign = {
        "name": prepare(
            "gaussian", tmp_path / "gaussian.npz", options={"n": 64, "d": 64}, code="c1"
        ),
        "options": prepare("digits", tmp_path / "seed1.npz", options={"seed": 1}, code="c1"),
        "code": prepare("digits", tmp_path / "old_code.npz", code="c0"),
    }
    sized = dict(expect, sizes={"n_train": 512, "n_test": 128})  # a smoke run's stand-in sizes
    for key, made in foreign.items():
        at = tmp_path / "data" / key / "digits.npz"
        at.parent.mkdir(parents=True)
        at.symlink_to(made)
        for read in (load, check):
            with pytest.raises(ValueError, match=re.escape(f"{at}: made for {key} ")):
                read(at, expect)
        said = _step_error(at, expect)
        assert said.startswith(f"{at}: made for {key} ") and "rebuild it with" in said
    with pytest.raises(
        ValueError,
        match=re.escape(
            f'{right}: made for sizes {{}}; the workflow expects sizes {{"n_test": 128, '
            f"\"n_train\": 512}} of data set 'digits'"
        ),
    ):
        load(right, sized)
    with pytest.raises(ValueError, match="unknown key 'nmae'"):
        load(right, {"nmae": "digits"})


def test_a_prepared_file_without_its_identity_is_refused_with_a_rebuild_hint(tmp_path):
    """A file prepared before files carried their identity (format 1: no content digest, no
    options or code recorded) is refused by load and, with the command that rebuilds it, by the
    shard steps."""
    path = prepare("digits", tmp_path / "data" / "digits.npz")

    def older(arrays):
        meta = json.loads(str(arrays["meta"]))
        for key in ("content_sha256", "sizes", "code"):
            del meta[key]
        arrays["meta"] = np.array(json.dumps(dict(meta, format_version=1)))

    _rewritten(path, path, older)
    with pytest.raises(ValueError, match=re.escape(f"{path}: written without the identity")):
        load(path)
    said = _step_error(path, {"name": "digits"})
    assert (
        said.endswith(f"rebuild it with `snakemake --force {path}`") and "format_version 1" in said
    )


@pytest.mark.slow
def test_a_replaced_data_file_stops_the_shard_that_would_read_it(tmp_path):
    """``results/data/digits.npz`` replaced, behind Snakemake's back, by a symlink to a valid
    digits file whose labels were permuted (with the replaced file's time, so Snakemake plans
    nothing):
    a forced shard fails naming the file and the command that rebuilds it, and trains nothing;
    after that command the shard trains again."""
    import os

    from conftest import run_snakemake, tiny_study, write_config

    cfg = write_config(
        tmp_path, tiny_study(grid={"depth": [2], "keep_rate": [1.0], "sigma_w2": [1.0]})
    )
    metrics = "results/trainable_depth/metrics.parquet"
    run_snakemake(tmp_path, cfg, metrics)
    (table,) = (tmp_path / "results/trainable_depth/runs").glob("*.parquet")
    data = tmp_path / "results/data/digits.npz"
    made = data.stat()
    permuted = _rewritten(
        data,
        tmp_path / "permuted.npz",
        lambda a: a.update(y_train=np.random.default_rng(0).permutation(a["y_train"])),
    )
    data.unlink()
    data.symlink_to(permuted)
    for f in (permuted, data):
        os.utime(f, ns=(made.st_atime_ns, made.st_mtime_ns), follow_symlinks=False)
    assert "Nothing to be done" in run_snakemake(tmp_path, cfg, "-n", metrics).stdout
    target, trained = str(table.relative_to(tmp_path)), table.stat().st_mtime_ns
    p = run_snakemake(tmp_path, cfg, "--force", target, check=False)
    out = p.stdout + p.stderr
    assert p.returncode != 0
    assert "results/data/digits.npz: its arrays are not the ones it was written with" in out, out[
        -3000:
    ]
    assert "rebuild it with `snakemake --force results/data/digits.npz`" in out
    assert table.stat().st_mtime_ns == trained  # its init job stopped: no training
    run_snakemake(tmp_path, cfg, "--force", "results/data/digits.npz")
    run_snakemake(tmp_path, cfg, "--force", target)
    assert table.stat().st_mtime_ns > trained and not data.is_symlink()


# --- downloadable sets from tiny raw files ---------------------------------------------


def _patch(monkeypatch, name, paths, **changes):
    """Point catalog entry ``name`` at the tiny files (their digests; no size checks)."""
    files = tuple(
        catalog.RemoteFile(p.name, "https://example.invalid/" + p.name, _sha(p)) for p in paths
    )
    changes = {"n_train": None, "n_test": None, **changes}
    spec = dataclasses.replace(catalog.get(name), files=files, **changes)
    monkeypatch.setitem(catalog.DATASETS, name, spec)


def _raw_mnist(raw, rng):
    x_tr, x_te = H.images(rng, 6, (28, 28)), H.images(rng, 3, (28, 28))
    y_tr, y_te = rng.integers(0, 10, 6).astype(np.uint8), rng.integers(0, 10, 3).astype(np.uint8)
    paths = [
        H.write_idx(raw / n, a)
        for n, a in (
            ("train-images-idx3-ubyte.gz", x_tr),
            ("train-labels-idx1-ubyte.gz", y_tr),
            ("t10k-images-idx3-ubyte.gz", x_te),
            ("t10k-labels-idx1-ubyte.gz", y_te),
        )
    ]
    return paths, (x_tr[:, None], y_tr, x_te[:, None], y_te), {}


def _raw_emnist(raw, rng):
    x_tr, x_te = H.images(rng, 5, (28, 28)), H.images(rng, 2, (28, 28))
    y_tr, y_te = rng.integers(0, 47, 5), rng.integers(0, 47, 2)
    path = H.write_emnist_zip(raw / "gzip.zip", "balanced", x_tr, y_tr, x_te, y_te)
    return [path], (x_tr[:, None], y_tr, x_te[:, None], y_te), {}


def _raw_cifar10(raw, rng):
    batches = [(H.images(rng, 2, (3, 32, 32)), rng.integers(0, 10, 2)) for _ in range(5)]
    test = (H.images(rng, 3, (3, 32, 32)), rng.integers(0, 10, 3))
    path = H.write_cifar10_tar(raw / "cifar-10-binary.tar.gz", batches, test)
    x_tr = np.concatenate([b[0] for b in batches])
    return [path], (x_tr, np.concatenate([b[1] for b in batches]), *test), {}


def _raw_cifar100(raw, rng):
    def part(n):
        return H.images(rng, n, (3, 32, 32)), rng.integers(0, 20, n), rng.integers(0, 100, n)

    train, test = part(6), part(2)
    path = H.write_cifar100_tar(raw / "cifar-100-binary.tar.gz", train, test)
    return [path], (train[0], train[2], test[0], test[2]), {}


def _raw_gisette(raw, rng):
    x_tr, x_te = rng.integers(0, 1000, (8, 5)), rng.integers(0, 1000, (4, 5))
    x_tr[:, 2] = 7  # a constant feature
    y_tr, y_te = np.array([1, -1] * 4), np.array([-1, 1, 1, -1])
    paths = H.write_gisette(raw, x_tr, y_tr, x_te, y_te)
    return paths, (x_tr, (y_tr > 0), x_te, (y_te > 0)), {"input_shape": (5,)}


def _raw_tiny(raw, rng):
    path = H.write_tiny_imagenet_zip(raw / "tiny-imagenet-200.zip", n_train=2)
    return [path], formats.read_tiny_imagenet(path), {}


RAW = {
    "mnist": _raw_mnist,
    "emnist_balanced": _raw_emnist,
    "cifar10": _raw_cifar10,
    "cifar100": _raw_cifar100,
    "gisette": _raw_gisette,
    "tiny_imagenet": _raw_tiny,
}


@pytest.mark.parametrize("name", sorted(RAW))
def test_prepare_downloadable(tmp_path, monkeypatch, name):
    rng = np.random.default_rng(7)
    raw = tmp_path / "raw"
    raw.mkdir()
    paths, (x_tr, y_tr, x_te, y_te), changes = RAW[name](raw, rng)
    _patch(monkeypatch, name, paths, **changes)
    ds = load(prepare(name, tmp_path / f"{name}.npz", raw_dir=raw))
    spec = catalog.get(name)
    assert ds.x_train.shape == (len(x_tr), *spec.input_shape) and ds.x_train.dtype == np.float32
    assert ds.x_test.shape == (len(x_te), *spec.input_shape)
    np.testing.assert_array_equal(ds.y_train, y_tr)
    np.testing.assert_array_equal(ds.y_test, y_te)
    assert ds.y_train.dtype == np.int64
    assert ds.meta["raw_sha256"] == {p.name: _sha(p) for p in paths}
    axes = (0,) if len(spec.input_shape) == 1 else (0, 2, 3)
    x = x_tr.astype(np.float64)
    mean, std = x.mean(axis=axes, keepdims=True), x.std(axis=axes, keepdims=True)
    want = np.divide(x - mean, std, out=np.zeros_like(x), where=std > 0)
    np.testing.assert_allclose(ds.x_train, want, atol=1e-4)
    want_te = np.divide(x_te - mean, std, out=np.zeros(x_te.shape), where=std > 0)
    np.testing.assert_allclose(ds.x_test, want_te, atol=1e-4)
    kind = ds.meta["normalization"]["kind"]
    assert kind == ("per_feature" if len(spec.input_shape) == 1 else "per_channel")


def test_prepare_finds_files_in_per_dataset_subfolder(tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    (raw / "mnist").mkdir(parents=True)
    paths, arrays, _ = _raw_mnist(raw / "mnist", np.random.default_rng(0))
    _patch(monkeypatch, "mnist", paths)
    ds = load(prepare("mnist", tmp_path / "m.npz", raw_dir=raw))
    np.testing.assert_array_equal(ds.y_test, arrays[3])


def test_corrupt_raw_file_is_rejected_before_parsing(tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    raw.mkdir()
    paths, _, _ = _raw_mnist(raw, np.random.default_rng(0))
    _patch(monkeypatch, "mnist", paths)
    paths[2].write_bytes(paths[2].read_bytes()[:-10])  # truncate after pinning

    def must_not_parse(*args, **kwargs):
        raise AssertionError("parser ran on an unverified file")

    monkeypatch.setattr(formats, "read_idx", must_not_parse)
    with pytest.raises(ChecksumError, match="t10k-images-idx3-ubyte.gz"):
        prepare("mnist", tmp_path / "m.npz", raw_dir=raw)
    assert not (tmp_path / "m.npz").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw"]


def test_missing_raw_file_and_raw_dir(tmp_path):
    with pytest.raises(ValueError, match="raw_dir"):
        prepare("cifar10", tmp_path / "c.npz")
    with pytest.raises(FileNotFoundError, match="cifar-10-binary.tar.gz"):
        prepare("cifar10", tmp_path / "c.npz", raw_dir=tmp_path)


def test_unpinned_raw_file_needs_override(tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    raw.mkdir()
    path = H.write_tiny_imagenet_zip(raw / "tiny-imagenet-200.zip", n_train=1)
    spec = dataclasses.replace(catalog.get("tiny_imagenet"), n_train=None, n_test=None)
    monkeypatch.setitem(catalog.DATASETS, "tiny_imagenet", spec)
    assert spec.files[0].sha256 == ""
    with pytest.raises(UnpinnedChecksumError, match="sha256_overrides"):
        prepare("tiny_imagenet", tmp_path / "t.npz", raw_dir=raw)
    out = prepare(
        "tiny_imagenet", tmp_path / "t.npz", raw_dir=raw, sha256_overrides={path.name: _sha(path)}
    )
    assert load(out).x_train.shape == (2, 3, 64, 64)


def test_parsed_counts_are_checked(tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    raw.mkdir()
    paths, _, _ = _raw_mnist(raw, np.random.default_rng(0))
    _patch(monkeypatch, "mnist", paths, n_train=60000)
    with pytest.raises(ValueError, match="parsed 6 train samples, expected 60000"):
        prepare("mnist", tmp_path / "m.npz", raw_dir=raw)


def test_net_outputs_are_classes_or_the_regression_targets_dimension(tmp_path):
    """init sizes the readout by n_outputs: classes for classification, the target's dimension
    for regression (not 1 + the largest target value)."""
    from sigprop.steps.shards import train_shard
    from sigprop.train.engine import n_outputs

    got = {}
    for name, opts in (
        ("digits", {}),
        ("gaussian", {"n": 16, "d": 8}),
        ("synthetic_regression", {"n_train": 32, "n_test": 8, "d_out": 3}),
    ):
        out = prepare(name, tmp_path / f"{name}.npz", options=opts)
        got[name] = n_outputs(load(out))
    assert got == {"digits": 10, "gaussian": 1, "synthetic_regression": 3}
    with pytest.raises(
        ValueError, match="regression data set; the shard trainer trains classifiers"
    ):
        from sigprop.runs import RunSpec, Shard

        shard = Shard("t", (RunSpec(dataset="gaussian"),)).to_json()
        train_shard(
            shard,
            "unused.pt",
            str(tmp_path / "gaussian.npz"),
            str(tmp_path / "o.parquet"),
            device="cpu",
        )
