"""A team's corpus, read as a stream of chunks so a million of them never sit in memory at once.

Test-set building passes over the corpus several times (statistics, sketches, the texts it asks about), so a
corpus is a *re-iterable* source: every pass opens the file again and yields `Chunk`s in file order. Accepted:

- JSONL with `id` and `text` (`title` optional), or BEIR's corpus.jsonl (`_id`, `title`, `text`);
- CSV with the same columns (read with the standard library's reader, row by row);
- Parquet (read in record batches through pyarrow);
- a `datasets` dataset (a `Dataset` object in Python, or a folder saved with `save_to_disk`);
- the built-in collection (``builtin`` or ``pydocs``).

Every problem is an InputError naming the file and the 1-based line (row for CSV and Parquet, counting the
header as line 1 in CSV as editors do): a missing or blank id, a duplicate id (with the line it first
appeared on), a missing text, a value of the wrong type. An empty or whitespace text is a chunk like any
other (public collections hold such documents): the builder skips and counts it, retrievers may return it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics._jsonl import numbered_jsonl
from ragmetrics._textfile import check_regular_file, open_regular
from ragmetrics.errors import InputError

__all__ = ["BUILTIN_CORPUS", "Chunk", "Corpus", "open_corpus"]

BUILTIN_CORPUS = ("builtin", "pydocs")
_ID_KEYS = ("id", "_id", "doc_id", "docid")
MAX_FIELD = 16 * 1024 * 1024
"""CSV cells larger than this are refused: the csv module's default limit (128 KiB) is too small for long
chunks, and no limit would let one broken quote swallow a whole file into memory."""


@dataclass(frozen=True)
class Chunk:
    """One chunk of the corpus: its id, text, optional title, and the line (row) it came from."""

    id: str
    text: str
    title: str | None
    line: int


def _id_of(row: dict[str, Any], source: str, line: int) -> str:
    for key in _ID_KEYS:
        if key in row and row[key] is not None:
            value = row[key]
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise InputError(
                    f"expected a string or integer id, got {type(value).__name__}",
                    source=source,
                    line=line,
                    field=key,
                )
            text = str(value).strip()
            if not text:
                raise InputError("blank id", source=source, line=line, field=key)
            return text
    raise InputError(
        f"no id: expected one of the columns {', '.join(_ID_KEYS)}", source=source, line=line, field="id"
    )


def _chunk(row: dict[str, Any], source: str, line: int, text_key: str) -> Chunk:
    cid = _id_of(row, source, line)
    text = row.get(text_key)
    if text is None:
        raise InputError(f"chunk {cid!r} has no {text_key!r}", source=source, line=line, field=text_key)
    if not isinstance(text, str):
        raise InputError(
            f"chunk {cid!r}: expected a string, got {type(text).__name__}",
            source=source,
            line=line,
            field=text_key,
        )
    title = row.get("title")
    if title is not None and not isinstance(title, str):
        raise InputError(
            f"chunk {cid!r}: expected a string title, got {type(title).__name__}",
            source=source,
            line=line,
            field="title",
        )
    return Chunk(cid, text, title.strip() or None if title else None, line)


class Corpus:
    """A re-iterable, validated stream of chunks (module docstring). `len()` is known after one full pass."""

    def __init__(self, rows: Any, *, source: str, text_key: str = "text") -> None:
        self._rows = rows  # a callable returning an iterator of (line, row dict)
        self.source = source
        self.text_key = text_key
        self._count: int | None = None

    def __iter__(self) -> Iterator[Chunk]:
        seen: dict[str, int] = {}
        count = 0
        for line, row in self._rows():
            chunk = _chunk(row, self.source, line, self.text_key)
            first = seen.get(chunk.id)
            if first is not None:
                raise InputError(
                    f"duplicate id {chunk.id!r} (first on line {first})",
                    source=self.source,
                    line=line,
                    field="id",
                )
            seen[chunk.id] = line
            count += 1
            yield chunk
        if count == 0:
            raise InputError("the corpus has no chunks", source=self.source)
        self._count = count

    def offset_rows(self) -> Iterator[tuple[str, str, int, int, str]]:
        """(chunk id, document id, start, end, text) of each row that carries its place in a document (a corpus
        `ragmetrics chunk split` wrote), for the evidence spans of a test set (`testset.evidence`)."""
        for line, row in self._rows():
            doc, start, end = row.get("doc_id"), row.get("start"), row.get("end")
            if "id" in row and isinstance(doc, str) and type(start) is int and type(end) is int:
                yield _id_of(row, self.source, line), doc, start, end, str(row.get(self.text_key, ""))

    def __len__(self) -> int:
        if self._count is None:
            for _ in self:
                pass
        assert self._count is not None
        return self._count

    def texts_of(self, ids: Iterable[str]) -> dict[str, Chunk]:
        """The chunks with these ids, in one pass (the texts a test set asks about, nothing else)."""
        wanted = set(ids)
        found: dict[str, Chunk] = {}
        if not wanted:
            return found
        for chunk in self:
            if chunk.id in wanted:
                found[chunk.id] = chunk
        return found


def _jsonl_rows(path: Path) -> Any:
    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        yield from numbered_jsonl(path)

    return rows


def _csv_rows(path: Path) -> Any:
    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        csv.field_size_limit(MAX_FIELD)
        raw = open_regular(path, prefix="cannot read: ")
        with raw, io.TextIOWrapper(raw, encoding="utf-8-sig", newline="") as text:
            reader = csv.DictReader(text)
            try:
                for row in reader:
                    if None in row:
                        raise InputError(
                            "more cells than header columns", source=str(path), line=reader.line_num
                        )
                    yield reader.line_num, {k: v for k, v in row.items() if k is not None}
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"not UTF-8 text: {exc.reason}", source=str(path), line=reader.line_num + 1
                ) from None
            except csv.Error as exc:
                raise InputError(f"not valid CSV: {exc}", source=str(path), line=reader.line_num) from None

    return rows


def _parquet_rows(path: Path) -> Any:
    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        import pyarrow.parquet as pq

        check_regular_file(path)
        try:
            handle = pq.ParquetFile(str(path))
        except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
            raise InputError(f"not a Parquet file: {exc}", source=str(path)) from None
        line = 0
        for batch in handle.iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                line += 1
                yield line, row

    return rows


def _dataset_rows(dataset: Any) -> Any:
    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        for index in range(0, len(dataset), 1024):
            batch = dataset[index : index + 1024]
            keys = list(batch)
            for offset in range(len(batch[keys[0]]) if keys else 0):
                yield index + offset + 1, {k: batch[k][offset] for k in keys}

    return rows


def _builtin_rows() -> Any:
    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        from ragmetrics.collection import passages_path

        yield from numbered_jsonl(passages_path())

    return rows


def open_corpus(source: Any, *, text_key: str = "text") -> Corpus:
    """A `Corpus` over `source`: a path (JSONL, CSV, Parquet, saved dataset folder), ``"builtin"``, a
    `datasets.Dataset`, a `Corpus`, or a list of {id, text, title?} mappings."""
    if isinstance(source, Corpus):
        return source
    if isinstance(source, str) and source in BUILTIN_CORPUS:
        return Corpus(_builtin_rows(), source="the built-in collection (pydocs)")
    if isinstance(source, list | tuple):
        items = list(source)

        def listed() -> Iterator[tuple[int, dict[str, Any]]]:
            for n, item in enumerate(items, start=1):
                if not isinstance(item, dict):
                    raise InputError(
                        f"expected a mapping, got {type(item).__name__}", source="corpus", line=n
                    )
                yield n, item

        return Corpus(listed, source="corpus", text_key=text_key)
    if isinstance(source, str | Path):
        path = Path(source).expanduser()
        if not path.exists():
            raise InputError("file not found", source=str(path))
        if path.is_dir():
            return _saved_dataset(path, text_key)
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".ndjson", ".json"):
            return Corpus(_jsonl_rows(path), source=str(path), text_key=text_key)
        if suffix == ".csv":
            return Corpus(_csv_rows(path), source=str(path), text_key=text_key)
        if suffix in (".parquet", ".pq"):
            return Corpus(_parquet_rows(path), source=str(path), text_key=text_key)
        raise InputError(
            f"cannot tell the corpus format from {suffix!r}: give .jsonl, .csv, .parquet or a saved dataset "
            "folder",
            source=str(path),
        )
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets is a core dependency
        datasets = None
    if datasets is not None and isinstance(source, datasets.Dataset):
        return Corpus(_dataset_rows(source), source="datasets.Dataset", text_key=text_key)
    raise InputError(f"cannot read a corpus from {type(source).__name__}", source="corpus")


def _saved_dataset(path: Path, text_key: str) -> Corpus:
    import datasets

    try:
        loaded = datasets.load_from_disk(str(path))
    except Exception as exc:  # datasets raises many types
        raise InputError(f"not a saved dataset folder: {exc}", source=str(path)) from None
    if isinstance(loaded, datasets.DatasetDict):
        if len(loaded) != 1:
            raise InputError(
                f"a saved DatasetDict with several splits ({', '.join(loaded)}); save the corpus split alone",
                source=str(path),
            )
        loaded = next(iter(loaded.values()))
    return Corpus(_dataset_rows(loaded), source=str(path), text_key=text_key)
