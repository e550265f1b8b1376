"""Download (or copy) raw files and check them against pinned SHA-256 digests.

Invariant of :func:`fetch`: when it returns, ``dest`` holds a file with the
expected digest; when it raises, nothing is left at ``dest`` and no temporary
file is left in its folder.  Files are written to a temporary name in the
destination folder and moved into place with :func:`os.replace` only after
the digest has been checked.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from .. import atomic
from . import catalog

_CHUNK = 1 << 20
_HEX64 = re.compile(r"[0-9a-f]{64}")


class ChecksumError(RuntimeError):
    """A file's SHA-256 digest differs from the pinned one (or none is pinned)."""


class UnpinnedChecksumError(ChecksumError):
    """No digest is pinned for a file, so it is refused."""


class FetchError(RuntimeError):
    """A file could not be downloaded or copied."""


def sha256_file(path) -> str:
    """Hex SHA-256 digest of the file at ``path``, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _expected(sha256: str, name: str) -> str:
    """Normalise a pinned digest; refuse an empty or malformed one."""
    value = (sha256 or "").strip().lower()
    if not value:
        raise UnpinnedChecksumError(
            f"no SHA-256 is pinned for {name!r}, so it is refused; download it yourself, "
            f"check it, and pin its digest in the config: "
            + catalog.OVERRIDE_HINT.format(filename=name)
        )
    if not _HEX64.fullmatch(value):
        raise ValueError(f"pinned SHA-256 for {name!r} is not 64 hex digits: {sha256!r}")
    return value


def verify(path, sha256: str) -> Path:
    """Check an existing file against ``sha256``; raise ChecksumError if it differs.

    A missing file raises FileNotFoundError; a truncated or corrupt one raises
    ChecksumError naming both digests.
    """
    path = Path(path)
    expected = _expected(sha256, path.name)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    actual = sha256_file(path)
    if actual != expected:
        raise ChecksumError(
            f"{path}: SHA-256 mismatch (corrupt or truncated file?): "
            f"expected {expected}, got {actual}"
        )
    return path


def _source(url: str, mirror: str | None) -> str:
    """The address to read: ``url``, or ``mirror`` + the URL's file name."""
    if not mirror:
        return url
    filename = Path(urllib.parse.urlparse(url).path).name
    if "://" not in mirror:  # a plain folder acts as a mirror too
        mirror = Path(mirror).resolve().as_uri()
    return mirror.rstrip("/") + "/" + urllib.parse.quote(filename)


def _copy_into(tmp, src_path: Path) -> None:
    with open(src_path, "rb") as src:
        shutil.copyfileobj(src, tmp, _CHUNK)


def _download_into(tmp, source: str, timeout: float) -> None:
    request = urllib.request.Request(source, headers={"User-Agent": "sigprop-data/1"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            shutil.copyfileobj(resp, tmp, _CHUNK)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise FetchError(
            f"could not download {source}: {exc}; without internet, put the file in a "
            f"folder and pass it as local_dir (or a mirror)"
        ) from exc


def fetch(
    url: str,
    dest,
    sha256: str,
    *,
    mirror: str | None = None,
    local_dir=None,
    dataset: str | None = None,
    timeout: float = 60.0,
) -> Path:
    """Put the file ``url`` at ``dest`` after checking its SHA-256; return ``dest``.

    An existing ``dest`` with the right digest is kept as is (an existing one
    with a wrong digest is removed first).  If ``local_dir`` holds a file
    named like ``dest`` (as ``local_dir/<dataset>/<name>``, else as
    ``local_dir/<name>``) it is copied instead of downloading; otherwise the
    file is read from ``mirror`` (a base URL or folder replacing everything
    before the file name) or from ``url``.  An empty ``sha256`` is refused.
    """
    dest = Path(dest)
    expected = _expected(sha256, dest.name)
    if dest.is_file():
        if sha256_file(dest) == expected:
            return dest
        dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)

    local = None
    if local_dir is not None:
        candidates = ([Path(local_dir) / dataset / dest.name] if dataset else []) + [
            Path(local_dir) / dest.name
        ]
        local = next((c for c in candidates if c.is_file()), None)
    use_local = local is not None
    source = str(local) if use_local else _source(url, mirror)

    with atomic.target(dest) as tmp_name:  # nothing is left behind on any error
        with open(tmp_name, "wb") as tmp:
            if use_local:
                _copy_into(tmp, local)
            else:
                _download_into(tmp, source, timeout)
        actual = sha256_file(tmp_name)
        if actual != expected:
            raise ChecksumError(
                f"{dest.name}: SHA-256 mismatch for the file from {source}: "
                f"expected {expected}, got {actual}; nothing was written to {dest}"
            )
    return dest


def fetch_dataset(
    name: str,
    raw_dir,
    *,
    mirror: str | None = None,
    local_dir=None,
    sha256_overrides: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> list[Path]:
    """Fetch every raw file of the catalog dataset ``name`` into ``raw_dir``."""
    spec = catalog.get(name)
    return [
        fetch(
            f.url,
            Path(raw_dir) / f.filename,
            catalog.pinned_sha256(f, sha256_overrides, name),
            mirror=mirror,
            local_dir=local_dir,
            dataset=name,
            timeout=timeout,
        )
        for f in spec.files
    ]
