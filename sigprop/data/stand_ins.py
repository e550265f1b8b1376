"""Stand-in raw files for the downloaded data sets, written in their real formats.

No machine that builds this project can download MNIST, CIFAR, EMNIST, Gisette or Tiny
ImageNet, yet the paper scale reads them.  The smoke run (:mod:`sigprop.config.smoke`) therefore reads
stand-ins: small files of random pixels, features and labels in exactly the layouts the real
ones have (gzipped IDX, the CIFAR binary tar.gz, NIST's ``gzip.zip``, Gisette's four text files,
Tiny ImageNet's zip of JPEG folders), with every class present and the real input shapes, so that
the fetch (copy + SHA-256), parsing, normalisation and loading code all run.

:func:`write_stand_ins` writes ``OUT/<dataset>/<raw file name>`` and ``OUT/stand-ins.yaml``, a
config fragment to pass with ``--configfile``: ``data.local_dir`` (where fetching copies from),
``data.sha256_overrides`` keyed ``<dataset>/<file>`` (the stand-ins' own digests, so the checksum
code runs and refuses anything else) and ``data.sizes`` (their split sizes, which the prepare step
checks instead of the real ones).  Command: ``sigprop stand-ins OUT``.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import yaml

from . import catalog, raw_writers
from .fetch import sha256_file

SEED = 0


def default_sizes(spec: catalog.DatasetSpec) -> tuple[int, int]:
    """``(n_train, n_test)`` of a stand-in: at least 512 / 128 examples and 2 / 1 per class, a
    whole number per class (the smoke run's pruned runs score 1 example per class).  Small,
    because every evaluation of the smoke run reads the whole test split and up to 2048 training
    examples (Tiny ImageNet through ResNet32: about 1 GFLOP an image)."""
    k = spec.n_classes or 1
    per_train, per_test = max(2, -(-512 // k)), max(1, -(-128 // k))
    return per_train * k, per_test * k


def sizes_for(runs, datasets: list[str] | None = None) -> dict[str, tuple[int, int]]:
    """Stand-in sizes for the downloaded data sets ``runs`` read: :func:`default_sizes`, with
    at least as many training examples as the largest batch any run takes from the set
    (rounded up to a whole number per class; the trainer refuses a batch larger than its data)."""
    biggest: dict[str, int] = {}
    for r in runs:
        biggest[r.dataset] = max(biggest.get(r.dataset, 0), int(r.batch_size))
    out = {}
    for name in datasets if datasets is not None else catalog.names("download"):
        spec = catalog.get(name)
        k = spec.n_classes or 1
        n_train, n_test = default_sizes(spec)
        out[name] = (max(n_train, -(-biggest.get(name, 0) // k) * k), n_test)
    return out


def _labels(rng, n: int, k: int) -> np.ndarray:
    """Every class equally often (``n`` is a multiple of ``k``), in random order."""
    return rng.permutation(np.arange(n) % k)


def _idx(folder: Path, files, rng, shape, k, n_train, n_test) -> None:
    for remote, n, kind in zip(files, (n_train, n_train, n_test, n_test), ("x", "y", "x", "y")):
        arr = (
            raw_writers.images(rng, n, shape[1:])
            if kind == "x"
            else _labels(rng, n, k).astype(np.uint8)
        )
        raw_writers.write_idx(folder / remote.filename, arr)


def _emnist(folder: Path, files, rng, shape, k, n_train, n_test) -> None:
    raw_writers.write_emnist_zip(
        folder / files[0].filename,
        "balanced",
        raw_writers.images(rng, n_train, shape[1:]),
        _labels(rng, n_train, k),
        raw_writers.images(rng, n_test, shape[1:]),
        _labels(rng, n_test, k),
    )


def _cifar10(folder: Path, files, rng, shape, k, n_train, n_test) -> None:
    x, y = raw_writers.images(rng, n_train, shape), _labels(rng, n_train, k)
    cuts = np.array_split(np.arange(n_train), 5)  # data_batch_1..5
    raw_writers.write_cifar10_tar(
        folder / files[0].filename,
        [(x[c], y[c]) for c in cuts],
        (raw_writers.images(rng, n_test, shape), _labels(rng, n_test, k)),
    )


def _cifar100(folder: Path, files, rng, shape, k, n_train, n_test) -> None:
    parts = []
    for n in (n_train, n_test):
        fine = _labels(rng, n, k)
        parts.append((raw_writers.images(rng, n, shape), fine // 5, fine))  # 20 coarse classes of 5
    raw_writers.write_cifar100_tar(folder / files[0].filename, *parts)


def _gisette(folder: Path, files, rng, shape, k, n_train, n_test) -> None:
    arrays = []
    for n in (n_train, n_test):
        x = rng.integers(1, 1000, size=(n, shape[0]), dtype=np.int32)
        x[rng.random(x.shape) < 0.87] = 0  # the real data are ~87 % zeros
        arrays += [x, np.where(_labels(rng, n, k) == 1, 1, -1)]
    raw_writers.write_gisette(folder, *arrays)


def _jpeg(rng, size: int) -> bytes:
    """A random 8x8 colour pattern scaled to ``size`` (compresses well; decodes to that size)."""
    from PIL import Image

    small = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(small).resize((size, size), Image.NEAREST).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _tiny_imagenet(folder: Path, files, rng, shape, k, n_train, n_test) -> None:
    root, size = "tiny-imagenet-200/", shape[-1]
    wnids = [f"n{10000000 + 7919 * i:08d}" for i in range(k)]
    with zipfile.ZipFile(folder / files[0].filename, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(root + "wnids.txt", "\n".join(wnids) + "\n")
        zf.writestr(
            root + "words.txt", "".join(f"{w}\tstand-in class {i}\n" for i, w in enumerate(wnids))
        )
        for i in range(n_train):
            w = wnids[i % k]
            zf.writestr(root + f"train/{w}/images/{w}_{i // k}.JPEG", _jpeg(rng, size))
        ann = []
        for i, c in enumerate(_labels(rng, n_test, k)):
            zf.writestr(root + f"val/images/val_{i}.JPEG", _jpeg(rng, size))
            ann.append(f"val_{i}.JPEG\t{wnids[c]}\t0\t0\t{size - 1}\t{size - 1}\n")
        zf.writestr(root + "val/val_annotations.txt", "".join(ann))
        zf.writestr(root + "test/images/test_0.JPEG", _jpeg(rng, size))  # unlabelled, unread


_WRITERS = {
    "idx": _idx,
    "emnist": _emnist,
    "cifar10_bin": _cifar10,
    "cifar100_bin": _cifar100,
    "gisette": _gisette,
    "tiny_imagenet": _tiny_imagenet,
}


def write_stand_ins(
    out,
    datasets: list[str] | None = None,
    sizes: dict[str, tuple[int, int]] | None = None,
    seed: int = SEED,
) -> dict:
    """Write stand-in raw files of ``datasets`` (default: every downloaded one) under ``out``.

    ``sizes``: ``{dataset: (n_train, n_test)}`` replacing :func:`default_sizes` (each a multiple
    of the class count).  Returns the config fragment also written to ``out/stand-ins.yaml``:
    ``{"data": {"local_dir", "sha256_overrides", "sizes"}}``.  The same ``seed`` writes the same
    arrays (archive bytes may differ by timestamps, so the digests are always recomputed).
    """
    out = Path(out).resolve()
    names = catalog.names("download") if datasets is None else list(datasets)
    overrides, split_sizes = {}, {}
    for name in names:
        spec = catalog.get(name)
        if spec.source != "download":
            raise ValueError(f"dataset {name!r} is embedded: it needs no stand-in")
        n_train, n_test = (sizes or {}).get(name) or default_sizes(spec)
        k = spec.n_classes or 1
        if n_train % k or n_test % k or min(n_train, n_test) < k:
            raise ValueError(
                f"stand-in sizes of {name!r} must be positive multiples of its "
                f"{k} classes, got n_train={n_train}, n_test={n_test}"
            )
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng([seed, sum(map(ord, name))])
        _WRITERS[spec.fmt](folder, spec.files, rng, spec.input_shape, k, n_train, n_test)
        for remote in spec.files:
            overrides[f"{name}/{remote.filename}"] = sha256_file(folder / remote.filename)
        split_sizes[name] = {"n_train": n_train, "n_test": n_test}
    fragment = {
        "data": {"local_dir": str(out), "sha256_overrides": overrides, "sizes": split_sizes}
    }
    text = (
        "# Stand-in raw files written by `sigprop stand-ins` (sigprop.data.stand_ins): random\n"
        "# data in the real formats, for the smoke run only.  Use: snakemake --configfile\n"
        f"# config/config.yaml {out / 'stand-ins.yaml'} --config scale=paper smoke=true\n"
    )
    (out / "stand-ins.yaml").write_text(text + yaml.safe_dump(fragment, sort_keys=True))
    return fragment
