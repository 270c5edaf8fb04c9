"""Reading a user's text file: every failure (missing, unreadable, not UTF-8) is an InputError naming the file
and, for bad bytes, the 1-based line, so it reaches the CLI as exit 2 and never as a traceback."""

from __future__ import annotations

from pathlib import Path

from ragmetrics.errors import InputError

__all__ = ["check_regular_file", "read_bytes", "read_utf8"]


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


def read_bytes(path: Path | str, *, prefix: str = "") -> bytes:
    """The file's bytes, every OS failure an InputError naming the file (its message led by `prefix`)."""
    source = str(path)
    check_regular_file(path, prefix=prefix)
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{prefix}file not found", source=source) from None
    except IsADirectoryError:
        raise InputError(f"{prefix}is a directory, expected a file", source=source) from None
    except OSError as exc:
        raise InputError(f"{prefix or 'cannot read file: '}{exc.strerror or exc}", source=source) from None


def read_utf8(path: Path | str, *, allow_empty: bool = False) -> str:
    """The file's text (a UTF-8 byte-order mark dropped); an empty or blank file is an error unless allowed."""
    source = str(path)
    data = read_bytes(path, prefix="cannot read: ")
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
