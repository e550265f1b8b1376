"""Atomic writes: every file the workflow produces is written to a temporary file beside it and
renamed into place, so a killed job never leaves half a file, and a write that fails (a full
disk, a read-only folder, a serializer error) leaves nothing behind: the temporary file is
removed on any error.  A full disk is reported as such, with the path."""

from __future__ import annotations

import contextlib
import errno
import os
import re
from pathlib import Path

TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.tmp(?P<pid>\d+)(?P<suffix>\.[^.]*)?$")
"""A temporary file of :func:`target`: ``.<name>.tmp<pid>[<suffix>]``."""


class DiskFullError(OSError):
    """No space left on the device that holds a file being written."""


def _no_space(e: BaseException, folder: Path) -> bool:
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(e).lower()
    if "no space left" in text or "disk quota" in text:
        return True
    # torch.save's zip writer reports a short write as "unexpected pos N vs M"
    free = _free_bytes(folder)
    return "unexpected pos" in text and isinstance(free, int) and free < 16 * 2**20


@contextlib.contextmanager
def target(path: str | Path, suffix: str = ""):
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on any error it
    is removed and the error re-raised (a full disk as :class:`DiskFullError` naming ``path``).
    ``suffix`` keeps an extension that a writer needs (e.g. ``.png``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}{suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if _no_space(e, path.parent):
            free = _free_bytes(path.parent)
            raise DiskFullError(
                errno.ENOSPC,
                f"no space left on device writing {path} "
                f"({free} bytes free in {path.parent}); nothing was written: "
                f"free some space and rerun",
            ) from e
        raise


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user: alive
        return True
    return True


ORPHAN_AGE_S = 300.0
"""A temporary file untouched for this long whose process is not running here is an orphan.
(The age guards a cluster job on another host, whose process id means nothing here: a file
being written is touched continually.)"""


def remove_orphans(root: str | Path, min_age_s: float = ORPHAN_AGE_S) -> list[Path]:
    """Remove the temporary files of :func:`target` under ``root`` whose writing process is gone
    (a job killed with SIGKILL cannot remove its own) and that nothing has touched for
    ``min_age_s``; returns what it removed.  Files of a living process, this one included, are
    left alone."""
    import time

    root = Path(root)
    removed = []
    now = time.time()
    if not root.is_dir():
        return removed
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            m = TEMP_NAME.match(f)
            if m and not _alive(int(m.group("pid"))):
                p = Path(dirpath) / f
                with contextlib.suppress(OSError):
                    if now - p.stat().st_mtime >= min_age_s:
                        p.unlink()
                        removed.append(p)
    return removed


def write_bytes(path: str | Path, data: bytes) -> Path:
    with target(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    with target(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def _free_bytes(folder: Path) -> int | str:
    try:
        st = os.statvfs(folder)
        return st.f_bavail * st.f_frsize
    except OSError:
        return "?"
