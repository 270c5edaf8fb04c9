"""Reading a user's text file: every failure (missing, unreadable, not UTF-8) is an InputError naming the file
and, for bad bytes, the 1-based line, so it reaches the CLI as exit 2 and never as a traceback."""

from __future__ import annotations

from pathlib import Path

from ragmetrics.errors import InputError

__all__ = ["read_bytes", "read_utf8"]


def read_bytes(path: Path | str, *, prefix: str = "") -> bytes:
    """The file's bytes, every OS failure an InputError naming the file (its message led by `prefix`)."""
    source = str(path)
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
