"""Writers of files in each raw dataset format: IDX, the CIFAR binary archives, NIST's EMNIST
``gzip.zip``, Gisette's text files and Tiny ImageNet's zip layout.

The inverse of :mod:`sigprop.data.formats`; the data tests write tiny files with them, and
:mod:`sigprop.data.stand_ins` writes the smoke run's stand-in raw files.
"""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np

_IDX_CODES = {
    np.dtype(np.uint8): 0x08,
    np.dtype(np.int8): 0x09,
    np.dtype(np.int16): 0x0B,
    np.dtype(np.int32): 0x0C,
    np.dtype(np.float32): 0x0D,
    np.dtype(np.float64): 0x0E,
}


def idx_bytes(arr: np.ndarray) -> bytes:
    """Encode ``arr`` in the IDX format (big-endian)."""
    arr = np.asarray(arr)
    header = bytes([0, 0, _IDX_CODES[arr.dtype], arr.ndim])
    header += struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def write_idx(path: Path, arr: np.ndarray, gz: bool = True) -> Path:
    """Write ``arr`` as an IDX file, gzipped (as MNIST ships it) unless ``gz`` is False."""
    data = idx_bytes(arr)
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


def images(rng, n: int, shape) -> np.ndarray:
    """``n`` uniform random ``uint8`` images of ``shape``."""
    return rng.integers(0, 256, size=(n, *shape), dtype=np.uint8)


def _add_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def cifar_records(x: np.ndarray, labels: list[np.ndarray]) -> bytes:
    """Records: the label bytes (one per array in ``labels``) then 3072 pixel bytes."""
    cols = [np.asarray(lab, np.uint8)[:, None] for lab in labels]
    return np.concatenate(cols + [x.reshape(len(x), -1)], axis=1).tobytes()


def write_cifar10_tar(path: Path, batches, test) -> Path:
    """``batches``: 5 ``(x, y)`` pairs; ``test``: one pair; writes a .tar.gz."""
    with tarfile.open(path, "w:gz") as tar:
        _add_member(tar, "cifar-10-batches-bin/batches.meta.txt", b"airplane\n")
        for i, (x, y) in enumerate(batches, 1):
            _add_member(tar, f"cifar-10-batches-bin/data_batch_{i}.bin", cifar_records(x, [y]))
        _add_member(tar, "cifar-10-batches-bin/test_batch.bin", cifar_records(test[0], [test[1]]))
    return path


def write_cifar100_tar(path: Path, train, test) -> Path:
    """``train``/``test``: ``(x, coarse, fine)`` triples; writes a .tar.gz."""
    with tarfile.open(path, "w:gz") as tar:
        for name, (x, coarse, fine) in (("train.bin", train), ("test.bin", test)):
            _add_member(tar, f"cifar-100-binary/{name}", cifar_records(x, [coarse, fine]))
    return path


def write_emnist_zip(path: Path, split: str, x_train, y_train, x_test, y_test) -> Path:
    """Store upright images transposed, as NIST's gzip.zip does."""
    with zipfile.ZipFile(path, "w") as zf:
        for part, x, y in (("train", x_train, y_train), ("test", x_test, y_test)):
            stem = f"gzip/emnist-{split}-{part}"
            zf.writestr(
                f"{stem}-images-idx3-ubyte.gz",
                gzip.compress(idx_bytes(np.ascontiguousarray(x.transpose(0, 2, 1)))),
            )
            labels = gzip.compress(idx_bytes(y.astype(np.uint8)))
            zf.writestr(f"{stem}-labels-idx1-ubyte.gz", labels)
        zf.writestr(f"gzip/emnist-{split}-mapping.txt", "0 48\n")
    return path


def write_gisette(folder: Path, x_train, y_train, x_test, y_test) -> list[Path]:
    """UCI text layout: space-separated ints with a trailing space; labels -1/1."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for stem, x, y in (("train", x_train, y_train), ("valid", x_test, y_test)):
        data = folder / f"gisette_{stem}.data"
        data.write_text("".join(" ".join(map(str, row)) + " \n" for row in x))
        labels = folder / f"gisette_{stem}.labels"
        labels.write_text("".join(f"{v}\n" for v in y))
        paths += [data, labels]
    return paths


def jpeg_bytes(color, size: int = 64, mode: str = "RGB") -> bytes:
    """A solid ``size`` x ``size`` JPEG of ``color`` (an RGB triple, or a grey level for "L")."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new(mode, (size, size), color).save(buf, format="JPEG", quality=95)
    return buf.getvalue()


# Two classes; train/val images are solid colours so decoding is checkable.
TINY_WNIDS = ("n02000002", "n01000001")
TINY_COLORS = {"n01000001": (200, 30, 30), "n02000002": (20, 40, 220)}


def write_tiny_imagenet_zip(path: Path, n_train: int = 3, grey_val: bool = True) -> Path:
    """A 2-class tiny-imagenet-200.zip: train/<wnid>/images, val/images + annotations."""
    root = "tiny-imagenet-200/"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(root + "wnids.txt", "\n".join(TINY_WNIDS) + "\n")
        zf.writestr(root + "words.txt", "n01000001\tred thing\nn02000002\tblue thing\n")
        for wnid in TINY_WNIDS:
            zf.writestr(root + f"train/{wnid}/{wnid}_boxes.txt", "")
            for i in range(n_train):
                zf.writestr(
                    root + f"train/{wnid}/images/{wnid}_{i}.JPEG", jpeg_bytes(TINY_COLORS[wnid])
                )
        zf.writestr(root + "val/images/val_0.JPEG", jpeg_bytes(TINY_COLORS["n02000002"]))
        grey = jpeg_bytes(128, mode="L") if grey_val else jpeg_bytes(TINY_COLORS["n01000001"])
        zf.writestr(root + "val/images/val_1.JPEG", grey)
        zf.writestr(
            root + "val/val_annotations.txt",
            "val_0.JPEG\tn02000002\t0\t0\t10\t10\nval_1.JPEG\tn01000001\t1\t2\t30\t40\n",
        )
        zf.writestr(root + "test/images/test_0.JPEG", jpeg_bytes((0, 0, 0)))
    return path
