"""New spans from a growing OTLP JSON file: the Collector's file exporter's output, or the receiver's spool.

The cursor is the file's inode and the byte offset after the last complete line read. Each poll reads whole
lines only (a line still being written waits for the next poll), at most `max_bytes` of them (a burst is read
over several polls, never held whole). Rotation is followed: when the path holds a new file (another inode),
the rest of the old one is read first where it was moved to (a file of the same inode in the same folder), then
the new one from its start; a file truncated in place (copytruncate) is read again from its start. A line that
is not an OTLP export is skipped and said so with the file and line; it never stops the watcher.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ragmetrics.errors import InputError
from ragmetrics.traces.otlp import Span, spans_of_request

__all__ = ["FileCursor", "OtlpFileTail", "Polled"]

MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class FileCursor:
    inode: int
    offset: int
    line: int = 0

    def dumps(self) -> str:
        return json.dumps({"inode": self.inode, "offset": self.offset, "line": self.line})

    @classmethod
    def loads(cls, text: str | None) -> FileCursor | None:
        if not text:
            return None
        data = json.loads(text)
        return cls(int(data["inode"]), int(data["offset"]), int(data.get("line", 0)))


@dataclass
class Polled:
    spans: list[Span] = field(default_factory=list)
    cursor: FileCursor | None = None
    notes: list[str] = field(default_factory=list)
    more: bool = False
    """More complete lines wait beyond `max_bytes`: poll again without sleeping."""


def _lines(path: Path, start: int, budget: int) -> Iterator[tuple[int, bytes]]:
    """(offset after the line, the line) for complete lines from `start`, about `budget` bytes of them."""
    with path.open("rb") as handle:
        handle.seek(start)
        read = 0
        while read < budget:
            raw = handle.readline()
            if not raw or not raw.endswith(b"\n"):
                return  # end of file, or a line still being written
            read += len(raw)
            yield start + read, raw


class OtlpFileTail:
    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes

    def _moved(self, inode: int) -> Path | None:
        folder = self.path.parent
        for candidate in sorted(folder.iterdir()) if folder.is_dir() else []:
            try:
                if candidate.is_file() and candidate.stat().st_ino == inode and candidate != self.path:
                    return candidate
            except OSError:
                continue
        return None

    def _read(self, path: Path, cursor: FileCursor, out: Polled, budget: int) -> FileCursor:
        offset, line = cursor.offset, cursor.line
        for after, raw in _lines(path, cursor.offset, budget):
            offset = after
            line += 1
            text = raw.strip()
            if not text:
                continue
            try:
                request = json.loads(text)
                for item in request if isinstance(request, list) else [request]:
                    out.spans.extend(spans_of_request(item, line=line, source=str(path)))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                out.notes.append(f"skipped {path}, line {line}: not JSON ({exc})")
            except InputError as exc:
                out.notes.append(f"skipped {exc}")
        return FileCursor(cursor.inode, offset, line)

    def poll(self, cursor: FileCursor | None) -> Polled:
        out = Polled(cursor=cursor)
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return out
        budget = self.max_bytes
        if cursor is not None and cursor.inode != stat.st_ino:
            moved = self._moved(cursor.inode)
            if moved is not None:
                before = cursor.offset
                cursor = self._read(moved, cursor, out, budget)
                budget -= cursor.offset - before
                if cursor.offset < moved.stat().st_size:
                    out.cursor, out.more = cursor, True
                    return out
            else:
                out.notes.append(f"{self.path} was replaced and the old file is gone: its unread end is lost")
            cursor = FileCursor(stat.st_ino, 0, 0)
        if cursor is None:
            cursor = FileCursor(stat.st_ino, 0, 0)
        if stat.st_size < cursor.offset:
            out.notes.append(f"{self.path} was truncated: reading it again from its start")
            cursor = FileCursor(stat.st_ino, 0, 0)
        budget = max(budget, 1)
        out.cursor = self._read(self.path, cursor, out, budget)
        out.more = out.cursor.offset - cursor.offset >= budget  # stopped by the budget, not at the end
        return out
