"""Turn a catalog dataset into one normalised ``.npz`` file, and load it back.

The file holds ``x_train, y_train, x_test, y_test`` (x float32; y int64 for
classification, float32 for regression) and ``meta``, a JSON string stored
as a numpy unicode array, so it loads with ``allow_pickle=False``.  Images
keep their ``[N, C, H, W]`` shape and vectors ``[N, D]``.

Normalisation uses train statistics only: vectors per feature to zero mean
and unit variance (features constant on train become 0), images per channel.
The generated sets (``synthetic_regression``, ``gaussian``) are already
standard normal and are stored as drawn, so the linear teacher stays exact.

A prepared file carries its identity and a digest of its contents in ``meta``: the data set's
``name``, its ``options`` and requested split ``sizes``, the ``code`` digest of the step that
made it (the prepare step's, when the workflow gives it) and ``content_sha256``
(:func:`content_digest`).  :func:`load` recomputes the digest and refuses a file whose arrays are
not the ones it was written with; given ``expect`` (what the workflow's DAG says the file must be,
:data:`IDENTITY`), it refuses a file made for another data set, options, sizes or code, naming
the file and the key.  So a file replaced behind Snakemake's back (a copy or a symlink to
another data set's file, labels permuted in place) is never trained on: Snakemake decides from
modification times and does not see it.  A symlink is read like any file: accepted when it
points at the file the job expects, refused by the same checks otherwise.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import atomic
from . import catalog, embedded, formats
from .fetch import verify

FORMAT_VERSION = 2  # 2: meta records the identity (IDENTITY) and content_sha256
_KEYS = ("x_train", "y_train", "x_test", "y_test")
IDENTITY = ("name", "options", "sizes", "code")
"""What a prepared file says it was made as (keys of its ``meta``), and what a job may expect
of it (:func:`check_identity`)."""
_GENERATORS = {
    "digits": embedded.digits,
    "digits_images": embedded.digits_images,
    "synthetic_regression": embedded.synthetic_regression,
    "gaussian": embedded.gaussian,
}
_ALREADY_STANDARD = {"synthetic_regression", "gaussian"}  # stored as generated
_CHUNK_ROWS = 2048


class DataFileError(ValueError):
    """A prepared data set that is not the one a job may read (unreadable, changed since it was
    written, written without its identity, made for something else).  ``path`` is the file;
    the workflow's steps add the command that rebuilds it."""

    def __init__(self, path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason

    def __reduce__(self):  # pickled from a job's worker process to Snakemake's
        return type(self), (self.path, self.reason)


@dataclass
class Dataset:
    """Arrays of one prepared dataset plus its metadata."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    meta: dict = field(default_factory=dict)


def _generate(spec: catalog.DatasetSpec, options: dict):
    gen = _GENERATORS[spec.fmt]
    allowed = inspect.signature(gen).parameters
    for key in options:
        if key not in allowed:
            raise ValueError(
                f"unknown option {key!r} for dataset {spec.name!r}; allowed: {', '.join(allowed)}"
            )
    return gen(**options)


def _raw_paths(spec, raw_dir, overrides) -> tuple[list[Path], dict]:
    """Locate each raw file (``raw_dir/<file>`` or ``raw_dir/<name>/<file>``) and verify it."""
    if raw_dir is None:
        raise ValueError(f"dataset {spec.name!r} is downloaded: pass raw_dir")
    paths, digests = [], {}
    for remote in spec.files:
        candidates = [Path(raw_dir) / remote.filename, Path(raw_dir) / spec.name / remote.filename]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            raise FileNotFoundError(
                f"{spec.name}: raw file {remote.filename} not found in {raw_dir}; fetch it "
                f"first (sigprop.data.fetch.fetch_dataset) or copy it there"
            )
        sha = catalog.pinned_sha256(remote, overrides, spec.name)
        verify(path, sha)  # a corrupt file is rejected here, before any parsing
        paths.append(path)
        digests[remote.filename] = sha
    return paths, digests


def _parse(spec, paths: list[Path]):
    if spec.fmt == "idx":
        x_tr, y_tr, x_te, y_te = (formats.read_idx(p) for p in paths)
        return x_tr[:, None], y_tr.astype(np.int64), x_te[:, None], y_te.astype(np.int64)
    if spec.fmt == "emnist":
        x_tr, y_tr, x_te, y_te = formats.read_emnist(paths[0], spec.name.removeprefix("emnist_"))
        return x_tr[:, None], y_tr, x_te[:, None], y_te
    if spec.fmt in ("cifar10_bin", "cifar100_bin"):
        return formats.read_cifar_binary(paths[0], 10 if spec.fmt == "cifar10_bin" else 100)
    if spec.fmt == "gisette":
        return formats.read_gisette(paths)
    if spec.fmt == "tiny_imagenet":
        return formats.read_tiny_imagenet(paths[0])
    raise ValueError(f"dataset {spec.name!r}: no parser for format {spec.fmt!r}")


def _check_parsed(spec, arrays, sizes: Mapping[str, int] | None = None) -> None:
    """Split sizes (the catalog's, or ``sizes``: ``{"n_train", "n_test"}``) and input shape."""
    x_tr, y_tr, x_te, y_te = arrays
    sizes = dict(sizes or {})
    unknown = set(sizes) - {"n_train", "n_test"}
    if unknown:
        raise ValueError(
            f"data.sizes.{spec.name}: unknown key {sorted(unknown)[0]!r}; allowed: n_train, n_test"
        )
    for key, x, split in (("n_train", x_tr, "train"), ("n_test", x_te, "test")):
        want = sizes.get(key, getattr(spec, key))
        if want is not None and len(x) != want:
            where = f"data.sizes.{spec.name}.{key}" if key in sizes else "the catalog"
            raise ValueError(
                f"{spec.name}: parsed {len(x)} {split} samples, expected {want} ({where})"
            )
    if tuple(x_tr.shape[1:]) != spec.input_shape:
        raise ValueError(
            f"{spec.name}: parsed inputs of shape {x_tr.shape[1:]}, expected {spec.input_shape}"
        )


def _standardise(x_train, x_test, per_channel: bool):
    """Float32 copies standardised with train statistics (chunked; constant -> 0)."""
    if len(x_train) == 0:
        raise ValueError("cannot standardise an empty training set")
    axes = (0,) + tuple(range(2, x_train.ndim)) if per_channel else (0,)
    keep = [1] * x_train.ndim
    keep[1] = x_train.shape[1]
    count = x_train.size // x_train.shape[1]
    chunks = range(0, len(x_train), _CHUNK_ROWS)
    total = sum(x_train[i : i + _CHUNK_ROWS].sum(axis=axes, dtype=np.float64) for i in chunks)
    mean = (total / count).reshape(keep)
    sq = sum(((x_train[i : i + _CHUNK_ROWS] - mean) ** 2).sum(axis=axes) for i in chunks)
    std = np.sqrt(sq / count).reshape(keep)
    inv = np.divide(1.0, std, out=np.zeros_like(std), where=std > 0)
    out = []
    for x in (x_train, x_test):
        y = np.empty(x.shape, np.float32)
        for i in range(0, len(x), _CHUNK_ROWS):
            y[i : i + _CHUNK_ROWS] = (x[i : i + _CHUNK_ROWS] - mean) * inv
        out.append(y)
    return out, mean.ravel(), std.ravel()


def _normalise(spec, x_train, x_test):
    if spec.fmt in _ALREADY_STANDARD:
        return x_train.astype(np.float32), x_test.astype(np.float32), {"kind": "none"}
    per_channel = x_train.ndim == 4
    (x_train, x_test), mean, std = _standardise(x_train, x_test, per_channel)
    if per_channel:
        info = {"kind": "per_channel", "mean": mean.tolist(), "std": std.tolist()}
    else:
        info = {"kind": "per_feature", "n_constant_features": int((std == 0).sum())}
    return x_train, x_test, info


def _labels(spec, y: np.ndarray, split: str) -> np.ndarray:
    if spec.task == "regression":
        return y.astype(np.float32)
    y = y.astype(np.int64)
    if y.size and (y.min() < 0 or (spec.n_classes is not None and y.max() >= spec.n_classes)):
        raise ValueError(f"{spec.name}: {split} labels outside [0, {spec.n_classes})")
    return y


def _save_npz(out: Path, arrays: dict) -> None:
    with atomic.target(out) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())


def content_digest(arrays: Mapping[str, np.ndarray]) -> str:
    """SHA-256 of a prepared set's arrays (``x_train, y_train, x_test, y_test``, in this order):
    each one's name, dtype, shape and bytes."""
    h = hashlib.sha256()
    for key in _KEYS:
        a = np.ascontiguousarray(arrays[key])
        h.update(f"{key}\0{a.dtype.str}\0{list(a.shape)}\0".encode())
        h.update(a.reshape(-1).view(np.uint8))
    return h.hexdigest()


def prepare(
    name: str,
    out,
    *,
    raw_dir=None,
    options: dict | None = None,
    sha256_overrides: Mapping[str, str] | None = None,
    sizes: Mapping[str, int] | None = None,
    code: str | None = None,
) -> Path:
    """Build dataset ``name`` and write it atomically to ``out`` (one ``.npz``); return ``out``.

    Embedded sets are generated with ``options`` as generator keyword
    arguments (an unknown key raises ValueError naming it).  Downloaded sets
    are parsed from ``raw_dir`` after each raw file's SHA-256 is checked
    against the catalog (or ``sha256_overrides``); they take no options, and
    their split sizes must be the catalog's (or ``sizes``: ``{"n_train": n, "n_test": m}``,
    for the smoke run's stand-ins, :mod:`sigprop.data.stand_ins`).  ``code``: the digest of the
    code that makes the file (the prepare step's, which the workflow passes), recorded in
    ``meta`` with the name, options, sizes and :func:`content_digest`.
    """
    spec = catalog.get(name)
    options = dict(options or {})
    digests: dict = {}
    if spec.source == "embedded":
        x_tr, y_tr, x_te, y_te = _generate(spec, options)
    else:
        if options:
            raise ValueError(
                f"unknown option {next(iter(options))!r} for dataset {name!r}; "
                f"downloaded datasets take no options"
            )
        paths, digests = _raw_paths(spec, raw_dir, sha256_overrides)
        arrays = _parse(spec, paths)
        _check_parsed(spec, arrays, sizes)
        x_tr, y_tr, x_te, y_te = arrays
    x_tr, x_te, norm = _normalise(spec, x_tr, x_te)
    y_tr, y_te = _labels(spec, y_tr, "train"), _labels(spec, y_te, "test")
    arrays = {"x_train": x_tr, "y_train": y_tr, "x_test": x_te, "y_test": y_te}
    meta = {
        "format_version": FORMAT_VERSION,
        "name": spec.name,
        "fmt": spec.fmt,
        "source": spec.source,
        "task": spec.task,
        "n_classes": spec.n_classes,
        "input_shape": list(x_tr.shape[1:]),
        "n_train": len(x_tr),
        "n_test": len(x_te),
        "options": options,
        "sizes": dict(sizes or {}),
        "code": code,
        "raw_sha256": digests,
        "normalization": norm,
        "content_sha256": content_digest(arrays),
    }
    out = Path(out)
    _save_npz(out, {**arrays, "meta": np.array(json.dumps(meta, sort_keys=True))})
    return out


def _read_meta(path: Path, arr: np.ndarray) -> dict:
    if arr.dtype.kind != "U" or arr.size != 1:
        raise DataFileError(
            path, f"key 'meta' must be one JSON string, got {arr.dtype} {arr.shape}"
        )
    try:
        meta = json.loads(str(arr.reshape(())[()]))
    except json.JSONDecodeError as exc:
        raise DataFileError(path, f"key 'meta' is not valid JSON: {exc}") from exc
    if not isinstance(meta, dict):
        raise DataFileError(path, "key 'meta' must hold a JSON object")
    if meta.get("format_version") != FORMAT_VERSION or not meta.get("content_sha256"):
        raise DataFileError(
            path,
            f"written without the identity and content digest a prepared "
            f"file carries (format_version {meta.get('format_version')}, "
            f"not {FORMAT_VERSION}: an older sigprop, or another tool)",
        )
    return meta


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True)


def check_identity(path, meta: Mapping, expect: Mapping | None) -> None:
    """The prepared file ``path``, whose ``meta`` is given, was made as ``expect`` says (keys of
    :data:`IDENTITY`: the data set's ``name``, its ``options`` and ``sizes`` as the config gives
    them, the prepare step's ``code`` digest; a key left out is not checked).  Raises
    :class:`DataFileError` naming the file and the first key that differs."""
    unknown = sorted(set(expect or {}) - set(IDENTITY))
    if unknown:
        raise ValueError(
            f"expected identity of {path}: unknown key {unknown[0]!r} (known: "
            f"{', '.join(IDENTITY)})"
        )
    for key in IDENTITY:
        if key in (expect or {}) and _canonical(meta.get(key)) != _canonical(expect[key]):
            of = "" if key == "name" else f" of data set '{expect.get('name', meta.get('name'))}'"
            raise DataFileError(
                path,
                f"made for {key} {_canonical(meta.get(key))}; the workflow "
                f"expects {key} {_canonical(expect[key])}{of}",
            )


def _open(path: Path):
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: the prepared data set is gone (deleted or moved after "
            "the workflow planned this job?): run `snakemake` again and it "
            "is rebuilt"
        )
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise DataFileError(path, f"not a readable .npz file: {exc}") from exc
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise DataFileError(path, "not an .npz archive (a bare array?)")
    return npz


def _member(path: Path, npz, key: str) -> np.ndarray:
    if key not in npz.files:
        raise DataFileError(path, f"missing key {key!r}")
    try:
        return npz[key]
    except (ValueError, OSError, zipfile.BadZipFile) as exc:  # e.g. a pickled array
        raise DataFileError(path, f"key {key!r} cannot be read: {exc}") from exc


def check(path, expect: Mapping | None = None) -> dict:
    """The ``meta`` of a file written by :func:`prepare`, read without its arrays: it records
    its identity and content digest, and it was made as ``expect`` says
    (:func:`check_identity`).  :func:`load` checks the arrays against the digest."""
    path = Path(path)
    with _open(path) as npz:
        meta = _read_meta(path, _member(path, npz, "meta"))
    check_identity(path, meta, expect)
    return meta


def load(path, expect: Mapping | None = None) -> Dataset:
    """Read and validate a file written by :func:`prepare` (never unpickles): its keys, dtypes
    and shapes, its arrays against the content digest it records, and, given ``expect``, its
    identity (:func:`check_identity`).  Every refusal is a :class:`DataFileError` naming the
    file."""
    path = Path(path)
    arrays = {}
    with _open(path) as npz:
        for key in _KEYS + ("meta",):
            arrays[key] = _member(path, npz, key)
    meta = _read_meta(path, arrays.pop("meta"))
    x_tr, y_tr, x_te, y_te = (arrays[k] for k in _KEYS)
    for key in ("x_train", "x_test"):
        if arrays[key].dtype != np.float32:
            raise DataFileError(path, f"key {key!r} must be float32, not {arrays[key].dtype}")
    if x_tr.ndim < 2 or x_te.shape[1:] != x_tr.shape[1:]:
        raise DataFileError(
            path, f"key 'x_test' has shape {x_te.shape}, incompatible with x_train {x_tr.shape}"
        )
    want = {"classification": (np.int64,), "regression": (np.float32,)}.get(
        meta.get("task"), (np.int64, np.float32)
    )
    for key, x_key in (("y_train", "x_train"), ("y_test", "x_test")):
        y = arrays[key]
        if y.dtype not in want:
            raise DataFileError(
                path,
                f"key {key!r} has dtype {y.dtype}, expected "
                f"{' or '.join(np.dtype(d).name for d in want)}",
            )
        if len(y) != len(arrays[x_key]):
            raise DataFileError(
                path, f"key {key!r} has {len(y)} rows but {x_key!r} has {len(arrays[x_key])}"
            )
    if y_tr.dtype != y_te.dtype:
        raise DataFileError(path, f"key 'y_test' dtype {y_te.dtype} differs from y_train")
    got = content_digest(arrays)
    if got != meta["content_sha256"]:
        raise DataFileError(
            path,
            f"its arrays are not the ones it was written with (content "
            f"SHA-256 {got[:16]}..., recorded {str(meta['content_sha256'])[:16]}"
            "...): changed after it was written",
        )
    check_identity(path, meta, expect)
    return Dataset(x_tr, y_tr, x_te, y_te, meta)
