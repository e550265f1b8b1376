"""Round-trip tests of the raw-format parsers on tiny files written in each real format."""

from __future__ import annotations

import gzip
import importlib.util
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from sigprop.data import formats


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


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# --- IDX -----------------------------------------------------------------


def test_idx_uint8_gz_round_trip(tmp_path, rng):
    x = H.images(rng, 5, (28, 28))
    path = H.write_idx(tmp_path / "train-images-idx3-ubyte.gz", x)
    out = formats.read_idx(path)
    assert out.dtype == np.uint8 and out.shape == (5, 28, 28)
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.float32, np.float64, np.int8])
def test_idx_multibyte_types_plain_file(tmp_path, rng, dtype):
    x = (rng.standard_normal((3, 4)) * 1000).astype(dtype)
    out = formats.read_idx(H.write_idx(tmp_path / "a.idx", x, gz=False))
    assert out.dtype == np.dtype(dtype) and out.dtype.isnative
    np.testing.assert_array_equal(out, x)


def test_idx_from_bytes_plain_and_gz(rng):
    y = rng.integers(0, 10, 7).astype(np.uint8)
    raw = H.idx_bytes(y)
    np.testing.assert_array_equal(formats.read_idx(raw), y)
    np.testing.assert_array_equal(formats.read_idx(gzip.compress(raw)), y)


def test_idx_bad_magic_names_file(tmp_path):
    path = tmp_path / "bogus-idx1-ubyte.gz"
    path.write_bytes(gzip.compress(b"\x00\x01\x08\x01" + b"\x00" * 8))
    with pytest.raises(ValueError, match="bogus-idx1-ubyte.gz.*not an IDX"):
        formats.read_idx(path)
    with pytest.raises(ValueError, match="not an IDX"):
        formats.read_idx(b"\x00\x00\x07\x01\x00\x00\x00\x00")  # unknown type code


def test_idx_payload_size_mismatch_names_file(tmp_path, rng):
    raw = H.idx_bytes(H.images(rng, 4, (3, 3)))
    short = tmp_path / "short.idx"
    short.write_bytes(raw[:-5])
    with pytest.raises(ValueError, match="short.idx.*payload"):
        formats.read_idx(short)
    longer = tmp_path / "long.idx"
    longer.write_bytes(raw + b"\x00")
    with pytest.raises(ValueError, match="long.idx.*payload"):
        formats.read_idx(longer)
    with pytest.raises(ValueError, match="header truncated"):
        formats.read_idx(raw[:9])


def test_idx_corrupt_gzip(tmp_path, rng):
    data = gzip.compress(H.idx_bytes(H.images(rng, 2, (2, 2))))
    path = tmp_path / "cut.gz"
    path.write_bytes(data[:-12])
    with pytest.raises(ValueError, match="cut.gz"):
        formats.read_idx(path)


# --- CIFAR binary -----------------------------------------------------------


def _cifar10_parts(rng):
    sizes = [2, 3, 1, 2, 2]
    batches = [(H.images(rng, n, (3, 32, 32)), rng.integers(0, 10, n)) for n in sizes]
    test = (H.images(rng, 3, (3, 32, 32)), rng.integers(0, 10, 3))
    return batches, test


def test_cifar10_round_trip(tmp_path, rng):
    batches, test = _cifar10_parts(rng)
    tar = H.write_cifar10_tar(tmp_path / "cifar-10-binary.tar.gz", batches, test)
    x_tr, y_tr, x_te, y_te = formats.read_cifar_binary(tar, 10)
    assert x_tr.shape == (10, 3, 32, 32) and x_tr.dtype == np.uint8
    np.testing.assert_array_equal(x_tr, np.concatenate([b[0] for b in batches]))
    np.testing.assert_array_equal(y_tr, np.concatenate([b[1] for b in batches]))
    np.testing.assert_array_equal(x_te, test[0])
    np.testing.assert_array_equal(y_te, test[1])
    assert y_tr.dtype == np.int64 and x_te.flags.c_contiguous


def test_cifar100_returns_fine_labels(tmp_path, rng):
    def part(n):
        return H.images(rng, n, (3, 32, 32)), rng.integers(0, 20, n), rng.integers(20, 100, n)

    train, test = part(4), part(2)
    tar = H.write_cifar100_tar(tmp_path / "cifar-100-binary.tar.gz", train, test)
    x_tr, y_tr, x_te, y_te = formats.read_cifar_binary(tar, 100)
    np.testing.assert_array_equal(x_tr, train[0])
    np.testing.assert_array_equal(y_tr, train[2])
    np.testing.assert_array_equal(x_te, test[0])
    np.testing.assert_array_equal(y_te, test[2])


def test_cifar_bad_record_length_and_missing_member(tmp_path, rng):
    batches, test = _cifar10_parts(rng)
    tar_path = tmp_path / "bad.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:
        for i, (x, y) in enumerate(batches, 1):
            data = H.cifar_records(x, [y])
            H._add_member(tar, f"d/data_batch_{i}.bin", data[:-1] if i == 3 else data)
        H._add_member(tar, "d/test_batch.bin", H.cifar_records(test[0], [test[1]]))
    with pytest.raises(ValueError, match="data_batch_3.bin.*3073-byte"):
        formats.read_cifar_binary(tar_path, 10)
    with pytest.raises(ValueError, match="lacks test.bin, train.bin"):
        formats.read_cifar_binary(tar_path, 100)
    with pytest.raises(ValueError, match="variant"):
        formats.read_cifar_binary(tar_path, 7)


# --- EMNIST ---------------------------------------------------------------------


def test_emnist_images_are_upright(tmp_path, rng):
    x_tr, x_te = H.images(rng, 4, (28, 28)), H.images(rng, 2, (28, 28))
    x_tr[0] = 0
    x_tr[0, :5, :] = 255  # a bar along the top rows: must stay at the top
    y_tr, y_te = rng.integers(0, 47, 4), rng.integers(0, 47, 2)
    path = H.write_emnist_zip(tmp_path / "gzip.zip", "balanced", x_tr, y_tr, x_te, y_te)
    a, b, c, d = formats.read_emnist(path, "balanced")
    np.testing.assert_array_equal(a, x_tr)
    np.testing.assert_array_equal(c, x_te)
    np.testing.assert_array_equal(b, y_tr)
    np.testing.assert_array_equal(d, y_te)
    assert a[0, :5].min() == 255 and a[0, 5:].max() == 0
    assert b.dtype == np.int64 and a.flags.c_contiguous
    with pytest.raises(ValueError, match="emnist-letters-train-images"):
        formats.read_emnist(path, "letters")


# --- Gisette ----------------------------------------------------------------------


def _gisette(rng, n_feat=6):
    x_tr, x_te = rng.integers(0, 1000, (5, n_feat)), rng.integers(0, 1000, (3, n_feat))
    return x_tr, np.array([1, -1, 1, 1, -1]), x_te, np.array([-1, 1, -1])


def test_gisette_round_trip_dir_list_and_mapping(tmp_path, rng):
    x_tr, y_tr, x_te, y_te = _gisette(rng)
    paths = H.write_gisette(tmp_path / "g", x_tr, y_tr, x_te, y_te)
    by_name = {p.name: p for p in paths}
    for source in (tmp_path / "g", paths, by_name):
        a, b, c, d = formats.read_gisette(source)
        np.testing.assert_array_equal(a, x_tr)
        np.testing.assert_array_equal(c, x_te)
        np.testing.assert_array_equal(b, [1, 0, 1, 1, 0])
        np.testing.assert_array_equal(d, [0, 1, 0])
        assert b.dtype == np.int64


def test_gisette_rejects_bad_labels_and_ragged_rows(tmp_path, rng):
    x_tr, y_tr, x_te, y_te = _gisette(rng)
    folder = tmp_path / "g"
    H.write_gisette(folder, x_tr, np.array([1, 0, 1, 1, -1]), x_te, y_te)
    with pytest.raises(ValueError, match="gisette_train.labels.*-1 or 1"):
        formats.read_gisette(folder)
    H.write_gisette(folder, x_tr, y_tr, x_te, y_te)
    data = folder / "gisette_valid.data"
    data.write_text(data.read_text() + "1 2 3 \n")
    with pytest.raises(ValueError, match="gisette_valid.data"):
        formats.read_gisette(folder)
    with pytest.raises(ValueError, match="4 paths"):
        formats.read_gisette([data])


# --- Tiny ImageNet -------------------------------------------------------------------


def test_tiny_imagenet_round_trip(tmp_path):
    path = H.write_tiny_imagenet_zip(tmp_path / "tiny-imagenet-200.zip", n_train=3)
    x_tr, y_tr, x_te, y_te = formats.read_tiny_imagenet(path)
    assert x_tr.shape == (6, 3, 64, 64) and x_tr.dtype == np.uint8
    assert x_te.shape == (2, 3, 64, 64)
    # sorted wnids: n01000001 -> 0 (red), n02000002 -> 1 (blue)
    np.testing.assert_array_equal(y_tr, [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(y_te, [1, 0])
    red = np.array(H.TINY_COLORS["n01000001"])[:, None, None]
    blue = np.array(H.TINY_COLORS["n02000002"])[:, None, None]
    assert np.abs(x_tr[:3].astype(int) - red).max() <= 4
    assert np.abs(x_tr[3:].astype(int) - blue).max() <= 4
    assert np.abs(x_te[0].astype(int) - blue).max() <= 4
    assert np.abs(x_te[1].astype(int) - 128).max() <= 2  # grey image became 3 equal channels


def test_tiny_imagenet_rejects_bad_annotations(tmp_path):
    path = H.write_tiny_imagenet_zip(tmp_path / "t.zip")
    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("val_annotations.txt"):
                data += b"val_9.JPEG\tn09999999\t0\t0\t1\t1\n"
            dst.writestr(item, data)
    with pytest.raises(ValueError, match="val_annotations.txt:3"):
        formats.read_tiny_imagenet(broken)
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("x/readme.txt", "")
    with pytest.raises(ValueError, match="wnids.txt"):
        formats.read_tiny_imagenet(empty)
