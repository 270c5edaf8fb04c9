"""A chunked corpus on disk: JSON Lines, one chunk a line, ``{"id", "doc_id", "start", "end", "text"}``.

The same file is a corpus every ragmetrics reader takes (`id` and `text`), and it carries what span qrels
need: the document and character range of each chunk. Reading checks what writing guarantees, so a corpus
edited by hand or made elsewhere fails on the line that breaks it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from ragmetrics._jsonl import validated_jsonl
from ragmetrics._textfile import write_atomic
from ragmetrics.chunking.model import Chunk
from ragmetrics.errors import InputError

__all__ = ["read_chunks", "write_chunks"]


class _ChunkRow(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: StrictStr = Field(min_length=1)
    doc_id: StrictStr = Field(min_length=1)
    start: StrictInt = Field(ge=0)
    end: StrictInt = Field(ge=1)
    text: StrictStr


def write_chunks(path: Path | str, chunks: Iterable[Chunk]) -> int:
    """Every chunk as a line, written atomically; the number written."""
    lines = [
        json.dumps(
            {"id": c.id, "doc_id": c.doc_id, "start": c.start, "end": c.end, "text": c.text},
            ensure_ascii=False,
        )
        for c in chunks
    ]
    write_atomic(Path(path), "\n".join(lines) + ("\n" if lines else ""))
    return len(lines)


def read_chunks(path: Path | str, documents: Mapping[str, str] | None = None) -> list[Chunk]:
    """The chunks of a chunked corpus. Each row needs id, doc_id, start < end and a text as long as its range
    (and, with `documents`, equal to the document's text there); ids are unique."""
    source = str(path)
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for line, row in validated_jsonl(Path(path), _ChunkRow, "a chunk with offsets"):
        if row.id in seen:
            raise InputError(
                f"chunk id {row.id!r} again (first at line {seen[row.id]})", source=source, line=line
            )
        seen[row.id] = line
        if row.end <= row.start:
            raise InputError(
                f"end ({row.end}) must be greater than start ({row.start})", source=source, line=line
            )
        if len(row.text) != row.end - row.start:
            raise InputError(
                f"text has {len(row.text)} characters but [{row.start}, {row.end}) spans {row.end - row.start}",
                source=source,
                line=line,
                field="text",
            )
        if documents is not None:
            if row.doc_id not in documents:
                raise InputError(
                    f"document {row.doc_id!r} is not among the documents", source=source, line=line
                )
            if documents[row.doc_id][row.start : row.end] != row.text:
                raise InputError(
                    f"text is not document {row.doc_id!r}'s text at [{row.start}, {row.end})",
                    source=source,
                    line=line,
                    field="text",
                )
        chunks.append(Chunk(row.id, row.doc_id, row.start, row.end, row.text))
    if not chunks:
        raise InputError("no chunks", source=source)
    return chunks
