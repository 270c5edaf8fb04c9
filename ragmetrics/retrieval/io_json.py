"""JSON readers: one object ``{query id: {document id: value}}``, or JSON Lines with one entry per line."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ragmetrics.errors import InputError, json_fault, json_problem
from ragmetrics.retrieval._build import Columns, Origin
from ragmetrics.retrieval.io_dict import columns_from_flat, columns_from_nested
from ragmetrics.retrieval.io_trec import read_bytes


def _text(path: str | Path) -> str:
    source = str(path)
    data = read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not valid UTF-8 text ({exc.reason})", source=source, line=line) from None
    if not text.strip():
        raise InputError("empty file: no entries", source=source)
    return text


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`json` keeps the last of repeated keys; a document listed twice for one query must be an error."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def _loads(text: str, source: str, line: int | None = None) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InputError(
            json_problem(exc),
            source=source,
            line=json_fault(exc)[0] if line is None else line,
        ) from None
    except _DuplicateKey as exc:
        raise InputError(
            f"key {exc.key!r} appears twice in one JSON object (a query, a document of one query, "
            "or a field listed twice)",
            source=source,
            line=line,
        ) from None


def json_columns(path: str | Path, value_name: str) -> Columns:
    """Columns from a file holding one JSON object of objects."""
    source = str(path)
    data = _loads(_text(path), source)
    columns = columns_from_nested(data, source, value_name)
    if columns.doc_codes.shape[0] == 0:
        raise InputError("no entries", source=source)
    return columns


def jsonl_rows(path: str | Path, keys: tuple[str, str, str]) -> Iterator[tuple[int, object, object, object]]:
    """(line number, query, document, value) of each ``{q_key: ..., doc_key: ..., value_key: ...}`` line of a
    JSON Lines file, the values as JSON gave them (the caller validates them for what they hold).

    Blank lines are skipped; other keys in an object are ignored (a line may carry a passage's text).
    """
    source = str(path)
    for number, line in enumerate(_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        entry = _loads(line, source, number)
        if not isinstance(entry, dict):
            raise InputError(
                f"expected a JSON object, got {type(entry).__name__}", source=source, line=number
            )
        for key in keys:
            if key not in entry:
                raise InputError(f"missing key {key!r}", source=source, line=number, field=key)
        yield number, entry[keys[0]], entry[keys[1]], entry[keys[2]]


def jsonl_columns(path: str | Path, keys: tuple[str, str, str]) -> Columns:
    """Columns from JSON Lines, one ``{q_key: ..., doc_key: ..., value_key: ...}`` object per line (`jsonl_rows`)."""
    rows = list(jsonl_rows(path, keys))
    lines = [number for number, _, _, _ in rows]
    return columns_from_flat(
        [q for _, q, _, _ in rows],
        [d for _, _, d, _ in rows],
        [v for _, _, _, v in rows],
        Origin(str(path), positions=np.array(lines, dtype=np.int64)),
        (keys[0], keys[1]),
    )


def write_json(path: str | Path, nested: Mapping[str, Mapping[str, object]]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(nested, handle, ensure_ascii=False, indent=None)
        handle.write("\n")


def write_jsonl(path: str | Path, rows: list[dict[str, object]]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False))
            handle.write("\n")
