"""Tests of checked downloads (file:// URLs, no network) and of the catalog's pins."""

from __future__ import annotations

import dataclasses
import hashlib
import re

import pytest

from sigprop.data import catalog
from sigprop.data import fetch as F

BOGUS = "https://example.invalid/never/contacted/"  # would fail if ever reached


@pytest.fixture
def source(tmp_path):
    """A served folder with one file; returns (path, sha256)."""
    folder = tmp_path / "served"
    folder.mkdir()
    path = folder / "blob.bin"
    path.write_bytes(bytes(range(256)) * 40)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir())


def test_sha256_file(source):
    path, digest = source
    assert F.sha256_file(path) == digest


def test_fetch_file_url(tmp_path, source):
    path, digest = source
    dest = tmp_path / "raw" / "blob.bin"
    assert F.fetch(path.as_uri(), dest, digest) == dest
    assert dest.read_bytes() == path.read_bytes()
    assert _leftovers(dest.parent) == ["blob.bin"]
    assert F.fetch(BOGUS + "blob.bin", dest, digest.upper()) == dest  # valid copy is kept


def test_wrong_checksum_leaves_nothing(tmp_path, source):
    path, digest = source
    dest = tmp_path / "raw" / "blob.bin"
    wrong = "0" * 64
    with pytest.raises(F.ChecksumError) as err:
        F.fetch(path.as_uri(), dest, wrong)
    msg = str(err.value)
    assert "blob.bin" in msg and path.as_uri() in msg and wrong in msg and digest in msg
    assert not dest.exists()
    assert _leftovers(dest.parent) == []


def test_corrupt_existing_dest_is_replaced_or_removed(tmp_path, source):
    path, digest = source
    dest = tmp_path / "blob.bin"
    dest.write_bytes(b"stale")
    F.fetch(path.as_uri(), dest, digest)
    assert F.sha256_file(dest) == digest
    dest.write_bytes(b"stale")
    with pytest.raises(F.FetchError):
        F.fetch((tmp_path / "missing.bin").as_uri(), dest, digest)
    assert not dest.exists()


def test_mirror_replaces_base_url(tmp_path, source):
    path, digest = source
    mirrors = [path.parent.as_uri(), path.parent.as_uri() + "/", str(path.parent)]
    for i, mirror in enumerate(mirrors):
        dest = tmp_path / f"m{i}" / "blob.bin"
        F.fetch(BOGUS + "blob.bin", dest, digest, mirror=mirror)
        assert F.sha256_file(dest) == digest


def test_local_dir_is_copied(tmp_path, source):
    path, digest = source
    dest = tmp_path / "raw" / "blob.bin"
    F.fetch(BOGUS + "blob.bin", dest, digest, local_dir=path.parent)
    assert dest.read_bytes() == path.read_bytes()
    # a local_dir without the file falls back to the URL
    other = tmp_path / "raw2" / "blob.bin"
    F.fetch(path.as_uri(), other, digest, local_dir=tmp_path / "empty")
    assert other.is_file()


def test_local_dir_with_bad_copy_is_rejected(tmp_path, source):
    path, _ = source
    dest = tmp_path / "raw" / "blob.bin"
    with pytest.raises(F.ChecksumError, match=re.escape(str(path))):
        F.fetch(BOGUS + "blob.bin", dest, "1" * 64, local_dir=path.parent)
    assert _leftovers(dest.parent) == []


def test_unreachable_source_leaves_nothing(tmp_path):
    dest = tmp_path / "raw" / "x.bin"
    with pytest.raises(F.FetchError, match="local_dir"):
        F.fetch((tmp_path / "nope.bin").as_uri(), dest, "2" * 64)
    assert _leftovers(dest.parent) == []


def test_empty_sha_is_refused_with_config_hint(tmp_path, source):
    path, _ = source
    dest = tmp_path / "raw" / "blob.bin"
    with pytest.raises(F.UnpinnedChecksumError, match="sha256_overrides.*blob.bin"):
        F.fetch(path.as_uri(), dest, "")
    assert not dest.exists()
    with pytest.raises(F.ChecksumError, match="sha256_overrides"):
        F.verify(path, "  ")
    with pytest.raises(ValueError, match="64 hex"):
        F.fetch(path.as_uri(), dest, "abc")


def test_verify_detects_truncation(tmp_path, source):
    path, digest = source
    copy = tmp_path / "copy.bin"
    copy.write_bytes(path.read_bytes())
    assert F.verify(copy, digest) == copy
    copy.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(F.ChecksumError, match=f"copy.bin.*expected {digest}"):
        F.verify(copy, digest)
    with pytest.raises(FileNotFoundError):
        F.verify(tmp_path / "absent.bin", digest)


def test_fetch_dataset_with_override(tmp_path, source, monkeypatch):
    path, digest = source
    unpinned = catalog.RemoteFile("blob.bin", BOGUS + "blob.bin", "")
    spec = dataclasses.replace(catalog.get("tiny_imagenet"), files=(unpinned,))
    monkeypatch.setitem(catalog.DATASETS, "tiny_imagenet", spec)
    with pytest.raises(F.UnpinnedChecksumError):
        F.fetch_dataset("tiny_imagenet", tmp_path / "raw", mirror=str(path.parent))
    got = F.fetch_dataset(
        "tiny_imagenet",
        tmp_path / "raw",
        mirror=str(path.parent),
        sha256_overrides={"blob.bin": digest.upper()},
    )
    assert got == [tmp_path / "raw" / "blob.bin"]


# --- catalog ------------------------------------------------------------------------


def test_registry_names_and_unknown():
    assert catalog.names("embedded") == [
        "digits",
        "digits_images",
        "gaussian",
        "synthetic_regression",
    ]
    assert set(catalog.names("download")) == {
        "mnist",
        "fashion_mnist",
        "emnist_balanced",
        "cifar10",
        "cifar100",
        "gisette",
        "tiny_imagenet",
    }
    with pytest.raises(KeyError, match="known datasets: cifar10"):
        catalog.get("imagenet")
    with pytest.raises(ValueError):
        catalog.names("elsewhere")


def test_registry_pins_are_well_formed():
    unpinned = []
    for name in catalog.names("download"):
        spec = catalog.get(name)
        assert spec.files and spec.task == "classification" and spec.n_classes
        for f in spec.files:
            assert f.url.startswith(("https://", "http://")) and f.url.endswith("/" + f.filename)
            if f.sha256:
                assert re.fullmatch(r"[0-9a-f]{64}", f.sha256), (name, f.filename)
            else:
                unpinned.append(f.filename)
    assert unpinned == ["tiny-imagenet-200.zip"]
    for name in catalog.names("embedded"):
        assert catalog.get(name).files == ()
    assert catalog.get("cifar10").files[0].filename == "cifar-10-binary.tar.gz"
    assert [f.filename for f in catalog.get("gisette").files] == [
        "gisette_train.data",
        "gisette_train.labels",
        "gisette_valid.data",
        "gisette_valid.labels",
    ]
    assert catalog.get("emnist_balanced").n_classes == 47
