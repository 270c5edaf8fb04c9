"""One index file: named numpy arrays behind a checksummed header, written whole or not at all, read memory-mapped.

Why this format rather than `.npy`/`.npz`: an index is read by the next night, possibly while another process is
writing the same key, and possibly after a kill or a full disk left half a file behind. So every file

- is written to a private temporary name beside its final one, flushed and fsynced, then renamed over it
  (`os.replace` is atomic on POSIX): a reader sees the old file, the new file, or none, never half of one;
- carries in its header the SHA-256 of everything after the header, its arrays' dtypes and shapes and the key it
  was built for; `open_arrays` checks the magic, the header, the file's length and the checksum before any array
  is used, so a truncated, corrupted or misplaced file raises `IndexFileError` and is rebuilt, never trusted;
- is read with `numpy.memmap`, so a million-row array costs page cache, not process memory, and two processes
  reading one file share its pages.

Concurrent writers of one key each write their own temporary file and the last rename wins; both hold the same
content (the key decides it), so either is right.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["IndexFileError", "IndexFileWriter", "open_arrays", "write_arrays"]

MAGIC = b"RAGMETRICS-INDEX-1\n"
HEADER_BYTES = 4096
"""The header's fixed size: the payload starts page-aligned, so every array can be memory-mapped in place."""
_ALIGN = 64
_HASH_BLOCK = 1 << 24  # 16 MiB read at a time when checksumming: bounded memory for any file size


class IndexFileError(Exception):
    """An index file that cannot be trusted: truncated, corrupted, of another format or built for another key."""


def _layout(specs: Mapping[str, tuple[str, tuple[int, ...]]]) -> tuple[list[dict[str, Any]], int]:
    entries: list[dict[str, Any]] = []
    offset = 0
    for name, (dtype, shape) in specs.items():
        nbytes = int(np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64)))
        entries.append({"name": name, "dtype": np.dtype(dtype).str, "shape": list(shape), "offset": offset,
                        "nbytes": nbytes})  # fmt: skip
        offset += -(-nbytes // _ALIGN) * _ALIGN
    return entries, offset


def _payload_sha256(handle: Any, length: int) -> str:
    digest = hashlib.sha256()
    handle.seek(HEADER_BYTES)
    left = length
    while left > 0:
        block = handle.read(min(_HASH_BLOCK, left))
        if not block:
            break
        digest.update(block)
        left -= len(block)
    return digest.hexdigest()


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some file systems do not open directories; the rename is still atomic there
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class IndexFileWriter:
    """A file being written: fill its arrays (memory-mapped on the temporary file), then `commit` or `abort`.

    Arrays are filled in place, block by block, so a file larger than memory is written without holding it."""

    def __init__(self, path: Path, key: str, meta: Mapping[str, Any],
                 specs: Mapping[str, tuple[str, tuple[int, ...]]]) -> None:  # fmt: skip
        self.path = path
        self._key = key
        self._meta = dict(meta)
        self._entries, self._length = _layout(specs)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
        with self._tmp.open("wb") as handle:
            handle.truncate(HEADER_BYTES + self._length)
        self._maps: dict[str, np.memmap[Any, Any]] = {}
        for entry in self._entries:
            if entry["nbytes"]:
                self._maps[entry["name"]] = np.memmap(self._tmp, dtype=entry["dtype"], mode="r+",
                                                      offset=HEADER_BYTES + entry["offset"],
                                                      shape=tuple(entry["shape"]))  # fmt: skip

    def array(self, name: str) -> NDArray[Any]:
        """The named array, writable; an empty array (a zero in its shape) is a plain empty array."""
        if name in self._maps:
            return self._maps[name]
        entry = next(e for e in self._entries if e["name"] == name)
        return np.empty(tuple(entry["shape"]), dtype=entry["dtype"])

    def commit(self) -> Path:
        """Checksum the payload, write the header, fsync, and rename into place atomically."""
        for mapped in self._maps.values():
            mapped.flush()
        self._maps.clear()
        with self._tmp.open("r+b") as handle:
            header = {"key": self._key, "meta": self._meta, "arrays": self._entries, "length": self._length,
                      "sha256": _payload_sha256(handle, self._length)}  # fmt: skip
            raw = MAGIC + json.dumps(header, sort_keys=True).encode("utf-8") + b"\n"
            if len(raw) > HEADER_BYTES:
                raise ValueError(
                    f"index header of {len(raw)} bytes exceeds {HEADER_BYTES}: too much metadata"
                )
            handle.seek(0)
            handle.write(raw.ljust(HEADER_BYTES, b" "))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(self._tmp, self.path)
        _fsync_dir(self.path.parent)
        return self.path

    def abort(self) -> None:
        self._maps.clear()
        self._tmp.unlink(missing_ok=True)


def write_arrays(path: Path, key: str, meta: Mapping[str, Any], arrays: Mapping[str, NDArray[Any]]) -> Path:
    """Write `arrays` (held in memory already) as one index file at `path` (module docstring)."""
    writer = IndexFileWriter(path, key, meta, {n: (a.dtype.str, tuple(a.shape)) for n, a in arrays.items()})
    try:
        for name, values in arrays.items():
            if values.size:
                writer.array(name)[...] = values
        return writer.commit()
    except BaseException:
        writer.abort()
        raise


def open_arrays(
    path: Path, key: str | None = None, *, verify: bool = True
) -> tuple[dict[str, Any], dict[str, NDArray[Any]]]:
    """(meta, name -> read-only memory-mapped array) of the index file at `path`.

    Raises `IndexFileError` when the file is not a whole, uncorrupted index file (or, given `key`, was built for
    another key); `verify=False` skips only the checksum (for files this process has just written)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(HEADER_BYTES)
            if len(head) < HEADER_BYTES or not head.startswith(MAGIC):
                raise IndexFileError(f"{path}: not an index file (bad magic or short header)")
            try:
                header = json.loads(head[len(MAGIC) :].decode("utf-8").strip())
                length, entries = int(header["length"]), list(header["arrays"])
            except (ValueError, KeyError, TypeError) as exc:
                raise IndexFileError(f"{path}: unreadable header ({exc})") from None
            size = os.fstat(handle.fileno()).st_size
            if size != HEADER_BYTES + length:
                raise IndexFileError(f"{path}: {size} bytes, expected {HEADER_BYTES + length} (truncated?)")
            if key is not None and header.get("key") != key:
                raise IndexFileError(f"{path}: built for key {header.get('key')!r}, not {key!r}")
            if verify and _payload_sha256(handle, length) != header.get("sha256"):
                raise IndexFileError(f"{path}: checksum mismatch (corrupted)")
    except OSError as exc:
        raise IndexFileError(f"{path}: cannot read ({exc})") from None
    arrays: dict[str, NDArray[Any]] = {}
    for entry in entries:
        shape = tuple(int(n) for n in entry["shape"])
        if int(np.prod(shape, dtype=np.int64)) == 0:
            arrays[entry["name"]] = np.empty(shape, dtype=entry["dtype"])
            continue
        arrays[entry["name"]] = np.memmap(path, dtype=entry["dtype"], mode="r",
                                          offset=HEADER_BYTES + int(entry["offset"]), shape=shape)  # fmt: skip
    return dict(header.get("meta") or {}), arrays
