"""history.jsonl in the output root: one NightRecord per line, appended after every night under a lock.

Reading it never fails a night: a line that is not a record (a damaged or hand-edited file) is reported,
with its line number, in the page and on the terminal, and left out. Dated folders whose report.json has
no line yet (a directory written before the history existed) are read too, so `ragmetrics history` works on
an old output root.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from ragmetrics._textfile import open_regular, read_bytes
from ragmetrics.errors import InputError
from ragmetrics.history.record import NightRecord, record_of
from ragmetrics.schema import Report

HISTORY_FILE = "history.jsonl"
HISTORY_PAGE = "history.html"


@dataclass
class History:
    records: list[NightRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Lines or folders that could not be read, each naming the file (and line) and what was wrong."""


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    with open(root / ".history.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def append_record(root: Path, record: NightRecord) -> None:
    """One line, written and synced while holding the root's lock (two nights at once never interleave)."""
    line = record.model_dump_json() + "\n"
    with _locked(root), open(root / HISTORY_FILE, "a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


MAX_RECORD_BYTES = 64 * 1024 * 1024
"""A history line longer than this is not a night record (a record holds one night's per-query scores)."""


def _bounded_lines(raw: BinaryIO, source: str, problems: list[str]) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of each line, a line over MAX_RECORD_BYTES skipped with a problem noted, bad
    bytes replaced (the record then fails validation and is reported)."""
    number = 0
    while True:
        chunk = raw.readline(MAX_RECORD_BYTES + 1)
        if not chunk:
            return
        number += 1
        if len(chunk) > MAX_RECORD_BYTES and not chunk.endswith(b"\n"):
            problems.append(
                f"{source}:{number}: longer than {MAX_RECORD_BYTES // (1024 * 1024)} MB, not a night record"
            )
            while chunk and not chunk.endswith(b"\n"):
                chunk = raw.readline(MAX_RECORD_BYTES + 1)
            continue
        yield number, chunk.decode("utf-8", errors="replace")


def load_history(root: Path) -> History:
    """Every night recorded under `root`, oldest first."""
    from ragmetrics.nightly.artifacts import is_dated_folder

    history = History()
    seen: set[str] = set()
    path = root / HISTORY_FILE
    if path.exists() or path.is_symlink():
        # Through the one regular-file reader: history.jsonl linked to /dev/zero or a FIFO is refused, not read
        # without end. A line past MAX_RECORD_BYTES is reported and skipped without holding it in memory.
        with open_regular(path, prefix="cannot read the history: ") as raw:
            for number, line in _bounded_lines(raw, str(path), history.problems):
                if not line.strip():
                    continue
                try:
                    record = NightRecord.model_validate_json(line)
                except ValidationError as exc:
                    first = exc.errors()[0]
                    where = ".".join(str(p) for p in first["loc"]) or "line"
                    history.problems.append(f"{path}:{number}: not a night record ({where}: {first['msg']})")
                    continue
                if record.folder in seen:
                    continue
                seen.add(record.folder)
                history.records.append(record)
    if root.is_dir():
        for folder in sorted(p for p in root.iterdir() if is_dated_folder(p) and p.name not in seen):
            report_path = folder / "report.json"
            if not report_path.exists():
                continue
            try:
                report = Report.model_validate_json(read_bytes(report_path))
                history.records.append(record_of(report, folder.name))
            except (InputError, ValidationError) as exc:
                history.problems.append(f"{report_path}: not readable as a report ({type(exc).__name__})")
                continue
    history.records.sort(key=lambda r: (r.created_at, r.folder))
    return history
