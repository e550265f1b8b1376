"""Parsers for the raw dataset formats; arrays out, nothing unpickled.

Every parser validates what it reads and raises ValueError naming the file
(and archive member) on malformed input.  Image parsers return ``uint8``
arrays; labels are ``int64``.  Binary payloads are viewed with
:func:`numpy.frombuffer` instead of being parsed element by element.
"""

from __future__ import annotations

import gzip
import io
import math
import struct
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

import numpy as np

# IDX type codes (third magic byte) -> big-endian numpy dtype.
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_CIFAR_PIXELS = 3 * 32 * 32


def _maybe_gunzip(data: bytes, label: str) -> bytes:
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise ValueError(f"{label}: corrupt gzip stream: {exc}") from exc
    return data


def read_idx(path_or_bytes, *, name: str | None = None) -> np.ndarray:
    """Read an IDX file (optionally gzipped) from a path or from bytes.

    Layout: magic ``0, 0, type code, ndim``, then ``ndim`` big-endian uint32
    dimensions, then the payload.  Returns an array in native byte order
    (read-only when the type is one byte wide).  ``name`` labels errors.
    """
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        label = name or "<bytes>"
        data = bytes(path_or_bytes)
    else:
        label = name or str(path_or_bytes)
        data = Path(path_or_bytes).read_bytes()
    data = _maybe_gunzip(data, label)
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_DTYPES:
        raise ValueError(f"{label}: not an IDX file (magic bytes {data[:4].hex() or 'missing'})")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{label}: IDX header truncated ({len(data)} bytes for {ndim} dims)")
    dims = struct.unpack(f">{ndim}I", data[4:header])
    dtype = np.dtype(_IDX_DTYPES[data[2]])
    count = math.prod(dims)
    payload = len(data) - header
    if payload != count * dtype.itemsize:
        raise ValueError(
            f"{label}: IDX payload is {payload} bytes but dims {dims} of "
            f"{dtype.str} need {count * dtype.itemsize}"
        )
    arr = np.frombuffer(data, dtype=dtype, count=count, offset=header).reshape(dims)
    if dtype.itemsize > 1:
        arr = arr.astype(dtype.newbyteorder("="))
    return arr


def _cifar_records(raw: bytes, label_bytes: int, n_classes: int, label: str):
    record = label_bytes + _CIFAR_PIXELS
    if not raw or len(raw) % record:
        raise ValueError(
            f"{label}: {len(raw)} bytes is not a whole number of {record}-byte CIFAR records"
        )
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(-1, record)
    y = rows[:, label_bytes - 1].astype(np.int64)  # CIFAR-100: the fine label is the 2nd byte
    if y.max() >= n_classes:
        raise ValueError(f"{label}: label {int(y.max())} out of range for {n_classes} classes")
    return rows[:, label_bytes:].reshape(-1, 3, 32, 32), y


def read_cifar_binary(tar_path, variant: int):
    """Read a CIFAR binary archive (``cifar-10-binary.tar.gz`` or ``cifar-100-binary.tar.gz``).

    Returns ``(x_train, y_train, x_test, y_test)``, x as ``uint8 [N, 3, 32, 32]``.
    CIFAR-10 records are 1 label byte + 3072 pixel bytes (files
    ``data_batch_1..5.bin``, ``test_batch.bin``); CIFAR-100 records carry 2
    label bytes (coarse, fine) and the fine label is returned.
    """
    if variant == 10:
        train = [f"data_batch_{i}.bin" for i in range(1, 6)]
        test, label_bytes = ["test_batch.bin"], 1
    elif variant == 100:
        train, test, label_bytes = ["train.bin"], ["test.bin"], 2
    else:
        raise ValueError(f"CIFAR variant must be 10 or 100, not {variant!r}")
    wanted, found = set(train + test), {}
    with tarfile.open(tar_path, "r:*") as tar:  # read members in archive order: one pass
        for member in tar:
            base = PurePosixPath(member.name).name
            if member.isfile() and base in wanted and base not in found:
                found[base] = tar.extractfile(member).read()
    missing = sorted(wanted - set(found))
    if missing:
        raise ValueError(f"{tar_path}: CIFAR-{variant} archive lacks {', '.join(missing)}")
    parts = {
        b: _cifar_records(found.pop(b), label_bytes, variant, f"{tar_path}:{b}")
        for b in train + test
    }
    x_train = np.concatenate([parts[b][0] for b in train])
    y_train = np.concatenate([parts[b][1] for b in train])
    x_test = np.ascontiguousarray(np.concatenate([parts[b][0] for b in test]))
    y_test = np.concatenate([parts[b][1] for b in test])
    return x_train, y_train, x_test, y_test


def read_emnist(zip_path, split: str = "balanced"):
    """Read one EMNIST split from NIST's ``gzip.zip`` archive.

    Returns ``(x_train, y_train, x_test, y_test)`` with x ``uint8 [N, 28, 28]``.
    The archive stores each image transposed; it is transposed back here so
    characters are upright.  Labels are returned as stored.
    """
    out = []
    with zipfile.ZipFile(zip_path) as zf:
        names = zf.namelist()
        for part in ("train", "test"):
            for kind, dims in (("images", 3), ("labels", 1)):
                suffix = f"emnist-{split}-{part}-{kind}-idx{dims}-ubyte.gz"
                member = next((n for n in names if n.endswith(suffix)), None)
                if member is None:
                    raise ValueError(f"{zip_path}: EMNIST archive has no member *{suffix}")
                arr = read_idx(zf.read(member), name=f"{zip_path}:{member}")
                out.append(
                    np.ascontiguousarray(arr.transpose(0, 2, 1))
                    if kind == "images"
                    else arr.astype(np.int64)
                )
    x_train, y_train, x_test, y_test = out
    for x, y, part in ((x_train, y_train, "train"), (x_test, y_test, "test")):
        if x.ndim != 3 or len(x) != len(y):
            raise ValueError(
                f"{zip_path}: EMNIST {split} {part}: {x.shape} images vs {y.shape} labels"
            )
    return x_train, y_train, x_test, y_test


_GISETTE = (
    "gisette_train.data",
    "gisette_train.labels",
    "gisette_valid.data",
    "gisette_valid.labels",
)


def _gisette_paths(dir_or_paths) -> list[Path]:
    if isinstance(dir_or_paths, Mapping):
        return [Path(dir_or_paths[k]) for k in _GISETTE]
    if isinstance(dir_or_paths, Sequence) and not isinstance(dir_or_paths, str):
        if len(dir_or_paths) != 4:
            raise ValueError(
                "gisette needs 4 paths: train data, train labels, valid data, valid labels"
            )
        return [Path(p) for p in dir_or_paths]
    return [Path(dir_or_paths) / k for k in _GISETTE]


def _load_text(path: Path, ndmin: int) -> np.ndarray:
    try:
        return np.loadtxt(path, dtype=np.int32, ndmin=ndmin)
    except ValueError as exc:
        raise ValueError(f"{path}: not whitespace-separated integer text: {exc}") from exc


def read_gisette(dir_or_paths):
    """Read the UCI Gisette text files.

    ``dir_or_paths``: a folder holding ``gisette_{train,valid}.{data,labels}``,
    a mapping from those names to paths, or 4 paths in the order train data,
    train labels, valid data, valid labels.  Returns ``(x_train, y_train,
    x_test, y_test)``: x ``int32 [N, 5000]``, labels mapped -1/+1 -> 0/1.
    """
    paths = _gisette_paths(dir_or_paths)
    out = []
    for data_path, label_path in (paths[:2], paths[2:]):
        x = _load_text(data_path, 2)
        y = _load_text(label_path, 1)
        if not np.isin(y, (-1, 1)).all():
            raise ValueError(f"{label_path}: labels must be -1 or 1")
        if len(x) != len(y):
            raise ValueError(f"{data_path}: {len(x)} rows but {label_path} has {len(y)} labels")
        out += [x, (y > 0).astype(np.int64)]
    if out[0].shape[1] != out[2].shape[1]:
        raise ValueError(f"{paths[2]}: {out[2].shape[1]} features, train has {out[0].shape[1]}")
    return tuple(out)


def _decode_jpeg(data: bytes, label: str, size: int) -> np.ndarray:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as img:
            rgb = np.asarray(img.convert("RGB"), dtype=np.uint8)
    except OSError as exc:
        raise ValueError(f"{label}: cannot decode image: {exc}") from exc
    if rgb.shape != (size, size, 3):
        raise ValueError(f"{label}: image is {rgb.shape}, expected ({size}, {size}, 3)")
    return rgb.transpose(2, 0, 1)


def read_tiny_imagenet(zip_path, *, size: int = 64):
    """Read ``tiny-imagenet-200.zip``: train split and the labelled val split as test.

    Classes are the wnids of ``wnids.txt`` in sorted order (label = index).
    Train images are ``train/<wnid>/images/*.JPEG``; test images are
    ``val/images/*`` labelled by ``val/val_annotations.txt``.  Grey images
    are converted to RGB.  Returns ``(x_train, y_train, x_test, y_test)``
    with x ``uint8 [N, 3, size, size]``, in sorted file-name order.
    """
    with zipfile.ZipFile(zip_path) as zf:
        names = [n for n in zf.namelist() if not n.endswith("/")]
        wnid_files = sorted((n for n in names if PurePosixPath(n).name == "wnids.txt"), key=len)
        if not wnid_files:
            raise ValueError(f"{zip_path}: no wnids.txt in the archive")
        root = wnid_files[0][: -len("wnids.txt")]
        wnids = sorted(set(zf.read(wnid_files[0]).decode().split()))
        index = {w: i for i, w in enumerate(wnids)}

        train = []
        for n in names:
            parts = PurePosixPath(n[len(root) :]).parts if n.startswith(root) else ()
            if len(parts) == 4 and parts[0] == "train" and parts[2] == "images":
                if parts[1] not in index:
                    raise ValueError(f"{zip_path}:{n}: class {parts[1]} not in wnids.txt")
                train.append((parts[1], n))
        train.sort()

        ann_name = root + "val/val_annotations.txt"
        if ann_name not in names:
            raise ValueError(f"{zip_path}: missing {ann_name}")
        test = []
        for line_no, line in enumerate(zf.read(ann_name).decode().splitlines(), 1):
            fields = line.split("\t") if "\t" in line else line.split()
            if not line.strip():
                continue
            if len(fields) < 2 or fields[1] not in index:
                raise ValueError(f"{zip_path}:{ann_name}:{line_no}: bad annotation {line!r}")
            member = root + "val/images/" + fields[0]
            if member not in names:
                raise ValueError(f"{zip_path}:{ann_name}:{line_no}: no image {member}")
            test.append((fields[1], member))
        test.sort(key=lambda t: t[1])

        out = []
        for items in (train, test):
            x = np.empty((len(items), 3, size, size), dtype=np.uint8)
            for i, (_, member) in enumerate(items):
                x[i] = _decode_jpeg(zf.read(member), f"{zip_path}:{member}", size)
            out += [x, np.array([index[w] for w, _ in items], dtype=np.int64)]
    if len(out[0]) == 0:
        raise ValueError(f"{zip_path}: no training images under {root}train/<wnid>/images/")
    return tuple(out)
