"""The labels file a labelling session writes: the format `human_labels:` reads, safe to interrupt.

Rows are (sample_id, metric, run, label), with a labeller column once a team labels (`labeling.team`). Every change rewrites the whole file through a temporary file,
fsync and an atomic rename, so a killed session leaves the previous complete file, never half a line; rows
for other metrics and runs already in the file are kept as they were. `.jsonl` and `.csv` are written (by
the file's suffix); an existing file is read with the same strict reader the report uses, so a damaged file
is an error naming its line, not a fresh start that drops someone's work.

Two sessions (two people, two terminals) may label into one file. Each change is made under an exclusive lock
on a sidecar `.lock` file: the file is read again, this session's one change applied to what is there now,
and the result written, so one person's labels are never overwritten by another's start-up copy.
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from ragmetrics._textfile import write_atomic
from ragmetrics.errors import InputError
from ragmetrics.trust.labels import load_labels

__all__ = ["LabelStore", "locked", "write_atomic"]

Key = tuple[str | None, str, str, str | None]  # run, metric, sample id, labeller
WRITABLE = (".jsonl", ".csv")


class LabelStore:
    """Labels by (run, metric, sample id), persisted to `path` on every change."""

    def __init__(self, path: Path) -> None:
        if path.suffix.lower() not in WRITABLE:
            raise InputError(
                f"labels are written as {' or '.join(WRITABLE)}; got {path.suffix!r}", source=str(path)
            )
        self.path = path
        self._labels: dict[Key, float] = {}
        self._reload()

    def _reload(self) -> None:
        """What the file holds now (another session may have written since this one started)."""
        self._labels = {}
        if self.path.exists() and self.path.stat().st_size > 0:
            for label in load_labels(self.path).labels:
                self._labels[(label.run, label.metric, label.sample_id, label.labeller)] = label.raw

    def _locked(self) -> AbstractContextManager[None]:
        return locked(self.path)

    def get(self, run: str | None, metric: str, sample_id: str, labeller: str | None = None) -> float | None:
        return self._labels.get((run, metric, sample_id, labeller))

    def for_metric(self, run: str | None, metric: str, labeller: str | None = None) -> dict[str, float]:
        """Sample id -> `labeller`'s label of `metric` for `run` (a label without a run applies to every run)."""
        general = {sid: v for (r, m, sid, who), v in self._labels.items()
                   if m == metric and r is None and who == labeller}  # fmt: skip
        own = {sid: v for (r, m, sid, who), v in self._labels.items()
               if m == metric and r == run and r is not None and who == labeller}  # fmt: skip
        return {**general, **own}

    def by_labeller(self, run: str | None, metric: str) -> dict[str, dict[str, float]]:
        """Sample id -> labeller -> label of `metric` for `run`, named labellers only, as the file holds it now."""
        with self._locked():
            self._reload()
        out: dict[str, dict[str, float]] = {}
        for (r, m, sid, who), value in self._labels.items():
            if m == metric and r in (None, run) and who is not None:
                out.setdefault(sid, {})[who] = value
        return out

    def set(self, run: str | None, metric: str, sample_id: str, value: float, labeller: str | None = None) -> None:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"a label is in [0, 1], not {value}")
        with self._locked():
            self._reload()
            self._labels[(run, metric, sample_id, labeller)] = value
            self._write()

    def remove(self, run: str | None, metric: str, sample_id: str, labeller: str | None = None) -> None:
        with self._locked():
            self._reload()
            if self._labels.pop((run, metric, sample_id, labeller), None) is not None:
                self._write()

    def _text(self) -> str:
        named = any(who is not None for (_, _, _, who) in self._labels)
        rows = [
            {"sample_id": sid, "metric": metric, "run": run or "", "label": value, **({"labeller": who or ""} if named else {})}
            for (run, metric, sid, who), value in self._labels.items()
        ]
        if self.path.suffix.lower() == ".jsonl":
            return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        buffer = io.StringIO()
        fields = ["sample_id", "metric", "run", "label", *(["labeller"] if named else [])]
        writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue()

    def _write(self) -> None:
        if not self._labels:  # an empty labels file is an error to the reader: leave none instead
            self.path.unlink(missing_ok=True)
            return
        write_atomic(self.path, self._text())


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `.<file>.lock` beside `path`, held while one change is read, made and written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
