"""The one way ragmetrics reads a file it is given (data, configs, baselines, history, labels, caches' links).

Rules, each enforced here and nowhere else (docs/robustness.md):
- only a regular file is read: a FIFO would block forever and a device such as /dev/zero would be read until
  memory runs out, so the file is opened without blocking and checked by `fstat` on the open descriptor (a
  symlink is followed once, to what it names, and that is what is checked; no race between check and read);
- whole-file reads stop at a size limit (`RAGMETRICS_MAX_FILE_MB`, default 2048 MB; smaller for configs and
  pointers), so a huge or growing file is an error, not an out-of-memory kill;
- every failure (missing, a broken link, unreadable, not UTF-8, too large) is an InputError naming the file
  and, for bad bytes, the 1-based line, so it reaches the CLI as exit 2 and never as a traceback.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import BinaryIO

from ragmetrics.errors import InputError

__all__ = [
    "MAX_FILE_BYTES",
    "check_regular_file",
    "max_file_bytes",
    "open_regular",
    "read_bytes",
    "read_utf8",
    "write_atomic",
]

MAX_FILE_BYTES = 2048 * 1024 * 1024
"""Default limit of a whole-file read; `RAGMETRICS_MAX_FILE_MB` overrides it."""


def max_file_bytes() -> int:
    """The whole-file read limit in bytes (`RAGMETRICS_MAX_FILE_MB`, else MAX_FILE_BYTES)."""
    raw = os.environ.get("RAGMETRICS_MAX_FILE_MB", "").strip()
    if raw:
        try:
            megabytes = float(raw)
        except ValueError:
            raise InputError(f"RAGMETRICS_MAX_FILE_MB must be a number of megabytes, not {raw!r}") from None
        if megabytes > 0:
            return int(megabytes * 1024 * 1024)
    return MAX_FILE_BYTES


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a device"


def open_regular(path: Path | str, *, prefix: str = "") -> BinaryIO:
    """Open `path` for reading in binary, after checking on the open descriptor that it is a regular file.

    Opened with O_NONBLOCK so opening a FIFO returns at once (then refused), and the flag cleared before
    reading. A missing file, a dangling symlink and an unreadable one are InputErrors naming the file."""
    source = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError(
                f"{prefix}a symbolic link to a file that does not exist", source=source
            ) from None
        raise InputError(f"{prefix}file not found", source=source) from None
    except IsADirectoryError:
        raise InputError(f"{prefix}is a directory, expected a file", source=source) from None
    except OSError as exc:
        raise InputError(f"{prefix or 'cannot read file: '}{exc.strerror or exc}", source=source) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = _kind(mode)
            if what == "a directory":
                raise InputError(f"{prefix}is a directory, expected a file", source=source)
            raise InputError(f"{prefix}not a regular file ({what}); give a file", source=source)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return io.open(fd, "rb", closefd=True)  # noqa: UP020 - a descriptor, not a path
    except BaseException:
        os.close(fd)
        raise


def check_regular_file(path: Path | str, *, prefix: str = "") -> None:
    """Refuse what is not a regular file before reading it: a FIFO would block forever and a device such as
    /dev/zero would be read until memory runs out. A missing path is left to the reader to report."""
    import stat

    try:
        mode = Path(path).stat().st_mode
    except OSError:
        return
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    raise InputError(f"{prefix}not a regular file ({kind}); give a file", source=str(path))


def read_bytes(path: Path | str, *, prefix: str = "", limit: int | None = None) -> bytes:
    """The file's bytes, at most `limit` (default `max_file_bytes()`); every failure an InputError naming the
    file (its message led by `prefix`)."""
    source = str(path)
    cap = max_file_bytes() if limit is None else limit
    with open_regular(path, prefix=prefix) as handle:
        try:
            data = handle.read(cap + 1)
        except OSError as exc:
            raise InputError(
                f"{prefix or 'cannot read file: '}{exc.strerror or exc}", source=source
            ) from None
    if len(data) > cap:
        raise InputError(
            f"{prefix}larger than {cap / 1024 / 1024:g} MB, the limit for this file "
            "(RAGMETRICS_MAX_FILE_MB raises the general one)",
            source=source,
        )
    return data


def read_utf8(
    path: Path | str, *, allow_empty: bool = False, limit: int | None = None, prefix: str = "cannot read: "
) -> str:
    """The file's text (a UTF-8 byte-order mark dropped); an empty or blank file is an error unless allowed."""
    source = str(path)
    data = read_bytes(path, prefix=prefix, limit=limit)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start}); save the file as UTF-8",
            source=source,
            line=line,
        ) from None
    text = text.removeprefix("\ufeff")
    if not allow_empty and not text.strip():
        raise InputError("empty file: nothing to read", source=source)
    return text


def write_atomic(path: Path, text: str) -> None:
    """`text` to `path` through a temporary file, fsync and an atomic rename: a kill leaves the old file whole."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    import tempfile

    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
