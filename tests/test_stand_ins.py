"""Stand-in raw files (sigprop.data.stand_ins): written in the real formats, fetched through the
checksum code with dataset-qualified digests, parsed and prepared at their own sizes."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from sigprop.cli import main
from sigprop.data import catalog, fetch, prepare, stand_ins

SMALL = {
    "mnist": (20, 10),
    "fashion_mnist": (30, 10),
    "emnist_balanced": (47, 47),
    "cifar10": (20, 10),
    "cifar100": (100, 100),
    "gisette": (6, 4),
    "tiny_imagenet": (200, 200),
}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("stand-ins")
    return out, stand_ins.write_stand_ins(out, sizes=SMALL)


def test_every_downloaded_data_set_gets_a_stand_in(written):
    out, frag = written
    data = frag["data"]
    assert set(data["sizes"]) == set(catalog.names("download")) == set(SMALL)
    assert yaml.safe_load((out / "stand-ins.yaml").read_text()) == frag
    for name in SMALL:
        for remote in catalog.get(name).files:
            path = out / name / remote.filename
            assert fetch.sha256_file(path) == data["sha256_overrides"][f"{name}/{remote.filename}"]
    # MNIST and Fashion-MNIST share file names; their digests are kept apart by the data set
    f = "train-images-idx3-ubyte.gz"
    assert data["sha256_overrides"][f"mnist/{f}"] != data["sha256_overrides"][f"fashion_mnist/{f}"]


@pytest.mark.parametrize("name", sorted(SMALL))
def test_stand_in_is_fetched_checked_parsed_and_prepared(written, tmp_path, name):
    out, frag = written
    data = frag["data"]
    spec = catalog.get(name)
    raw = tmp_path / "raw" / name
    got = fetch.fetch_dataset(
        name, raw, local_dir=data["local_dir"], sha256_overrides=data["sha256_overrides"]
    )
    assert [p.name for p in got] == [f.filename for f in spec.files]
    sizes = data["sizes"][name]
    path = prepare.prepare(
        name,
        tmp_path / f"{name}.npz",
        raw_dir=raw,
        sha256_overrides=data["sha256_overrides"],
        sizes=sizes,
    )
    ds = prepare.load(path)
    assert ds.x_train.shape == (sizes["n_train"], *spec.input_shape)
    assert ds.x_test.shape == (sizes["n_test"], *spec.input_shape)
    for y in (ds.y_train, ds.y_test):  # every class, equally often
        assert np.array_equal(
            np.bincount(y, minlength=spec.n_classes),
            np.full(spec.n_classes, len(y) // spec.n_classes),
        )
    assert ds.meta["raw_sha256"] == {
        f.filename: data["sha256_overrides"][f"{name}/{f.filename}"] for f in spec.files
    }
    # without the stand-in sizes the catalog's real sizes are expected, and the error says so
    with pytest.raises(
        ValueError,
        match=rf"{name}: parsed {sizes['n_train']} train samples, "
        rf"expected {spec.n_train} \(the catalog\)",
    ):
        prepare.prepare(
            name, tmp_path / "again.npz", raw_dir=raw, sha256_overrides=data["sha256_overrides"]
        )
    assert not (tmp_path / "again.npz").exists()


def test_stand_in_without_its_digest_is_refused(written, tmp_path):
    out, _ = written
    with pytest.raises(fetch.ChecksumError, match="SHA-256 mismatch"):
        fetch.fetch_dataset("mnist", tmp_path / "raw", local_dir=out)  # the real digests
    assert not list((tmp_path / "raw").glob("*"))


def test_a_bare_file_name_override_is_still_honoured_and_the_qualified_one_wins():
    remote = catalog.get("mnist").files[0]
    a, b = "a" * 64, "b" * 64
    assert catalog.pinned_sha256(remote, {remote.filename: a}, "mnist") == a
    assert (
        catalog.pinned_sha256(remote, {remote.filename: a, f"mnist/{remote.filename}": b}, "mnist")
        == b
    )
    assert (
        catalog.pinned_sha256(remote, {f"fashion_mnist/{remote.filename}": b}, "mnist")
        == remote.sha256
    )


def test_sizes_with_an_unknown_key_or_a_wrong_multiple_are_refused(written, tmp_path):
    out, data = written
    raw = tmp_path / "raw"
    fetch.fetch_dataset(
        "gisette", raw, local_dir=out, sha256_overrides=data["data"]["sha256_overrides"]
    )
    with pytest.raises(ValueError, match=r"data.sizes.gisette: unknown key 'n_val'"):
        prepare.prepare(
            "gisette",
            tmp_path / "g.npz",
            raw_dir=raw,
            sha256_overrides=data["data"]["sha256_overrides"],
            sizes={"n_val": 3},
        )
    with pytest.raises(ValueError, match="multiples of its 47 classes"):
        stand_ins.write_stand_ins(
            tmp_path / "x", ["emnist_balanced"], sizes={"emnist_balanced": (50, 47)}
        )
    with pytest.raises(ValueError, match="embedded"):
        stand_ins.write_stand_ins(tmp_path / "x", ["digits"])


def test_cli_writes_the_config_fragment(tmp_path, capsys):
    assert main(["stand-ins", str(tmp_path / "si"), "--datasets", "gisette"]) == 0
    assert "gisette: 512 train, 128 test" in capsys.readouterr().out
    frag = yaml.safe_load((tmp_path / "si" / "stand-ins.yaml").read_text())
    assert set(frag["data"]["sizes"]) == {"gisette"}
    assert main(["stand-ins", str(tmp_path / "si"), "--datasets", "nope"]) == 2
    assert "unknown dataset 'nope'" in capsys.readouterr().err


def test_sizes_for_holds_the_largest_batch_of_every_data_set():
    from types import SimpleNamespace as R

    runs = [
        R(dataset="cifar10", batch_size=1000),
        R(dataset="cifar10", batch_size=128),
        R(dataset="emnist_balanced", batch_size=1000),
        R(dataset="digits", batch_size=4096),
    ]
    s = stand_ins.sizes_for(runs, ["cifar10", "emnist_balanced", "mnist"])
    assert s["cifar10"] == (1000, stand_ins.default_sizes(catalog.get("cifar10"))[1])
    assert s["emnist_balanced"][0] == 47 * 22 and s["emnist_balanced"][0] >= 1000  # whole classes
    assert s["mnist"] == stand_ins.default_sizes(catalog.get("mnist"))
