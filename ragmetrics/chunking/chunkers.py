"""Documents cut into chunks by a `ChunkingConfig`, or by a team's own chunker, every chunk with its offsets.

A team's chunker is checked rather than trusted: each chunk it returns must be found, character for
character, at the offsets it claims in its document, else the run stops with an InputError naming the
chunker, the document and the chunk (exit 2 at the CLI). Nothing it returns is re-located by fuzzy search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.chunking.model import Chunk, ChunkingConfig, Document, chunk_id
from ragmetrics.chunking.recursive import _joins_previous, recursive_spans
from ragmetrics.chunking.units import Span, sentence_spans, token_spans
from ragmetrics.errors import InputError

__all__ = ["ChunkerFn", "chunk_document", "chunk_documents", "custom_chunks", "window_spans"]

ChunkerFn = Callable[[str], Iterable[Any]]
"""A team's chunker: a document's text in, its chunks out, each one of ``{"start": s, "end": e}`` (with an
optional ``"text"``, which must equal ``text[s:e]``), a ``(start, end)`` pair, or a ``str`` (found in the
document at or after the previous chunk's start: exactly, never fuzzily)."""


def window_spans(units: Sequence[Span], size: int, overlap: int) -> list[Span]:
    """Windows of `size` consecutive units, consecutive windows sharing `overlap` units; the last window ends
    at the last unit (no window lies wholly inside the one before it)."""
    spans: list[Span] = []
    step = size - overlap
    first = 0
    while first < len(units):
        last = min(first + size, len(units))
        spans.append((units[first][0], units[last - 1][1]))
        if last == len(units):
            break
        first += step
    return spans


def chunk_document(
    document: Document,
    config: ChunkingConfig,
    chunker: ChunkerFn | None = None,
) -> list[Chunk]:
    """`document`'s chunks under `config`, in document order. For ``method: custom`` pass the imported
    callable as `chunker` (`chunk_documents` imports it from `config.callable`)."""
    text = document.text
    if config.method == "custom":
        if chunker is None:
            raise ValueError("method 'custom' needs the chunker callable")
        spans = custom_chunks(document, chunker, label=config.callable or "chunker")
    else:
        size = config.size
        assert size is not None  # the config's validator requires it for the built-in methods
        if config.method == "tokens":
            # The tokenizer's offsets leave out combining marks it normalises away: a window ends after them.
            spans = [
                (a, _cluster_end(text, b)) for a, b in window_spans(token_spans(text), size, config.overlap)
            ]
        elif config.method == "sentences":
            spans = window_spans(sentence_spans(text, config.language), size, config.overlap)
        else:
            spans = recursive_spans(
                text, size, config.overlap, length=config.length, separators=config.separators
            )
    return [Chunk(chunk_id(document.id, s, e), document.id, s, e, text[s:e]) for s, e in spans]


def chunk_documents(
    documents: Iterable[Document],
    config: ChunkingConfig,
    *,
    chunker: ChunkerFn | None = None,
    search: Sequence[Path] = (),
) -> list[Chunk]:
    """Every document's chunks under `config`, documents in the order given. A custom chunker is imported
    from `config.callable` (looked for in `search`, then the working directory) unless passed as `chunker`."""
    if config.method == "custom" and chunker is None:
        from ragmetrics._callables import import_callable

        assert config.callable is not None
        chunker = import_callable(config.callable, [*search, Path.cwd()], "chunking.callable")
    chunks: list[Chunk] = []
    for document in documents:
        chunks.extend(chunk_document(document, config, chunker))
    return chunks


def custom_chunks(document: Document, chunker: ChunkerFn, *, label: str) -> list[Span]:
    """The [start, end) of each chunk `chunker` returns for `document`, each checked against the text."""
    text = document.text
    source = f"chunker {label}"
    try:
        returned = list(chunker(text))
    except Exception as exc:  # the team's code failed: say where, with its error
        raise InputError(
            f"raised {type(exc).__name__}: {exc}", source=source, field=f"document {document.id!r}"
        ) from None
    spans: list[Span] = []
    seen: set[Span] = set()
    cursor = 0
    for index, item in enumerate(returned):
        where = f"document {document.id!r}, chunk {index}"
        span = _located(text, item, cursor, source, where)
        if span in seen:
            raise InputError(f"chunk [{span[0]}, {span[1]}) returned twice", source=source, field=where)
        seen.add(span)
        spans.append(span)
        cursor = span[0]
    return spans


def _located(text: str, item: Any, cursor: int, source: str, where: str) -> Span:
    if isinstance(item, str):
        if not item:
            raise InputError("an empty chunk", source=source, field=where)
        start = text.find(item, cursor)
        if start < 0:
            raise InputError(
                f"chunk text {_preview(item)} is not found in the document (at or after offset {cursor})",
                source=source,
                field=where,
            )
        return start, start + len(item)
    claimed: str | None = None
    if isinstance(item, dict):
        if "start" not in item or "end" not in item:
            raise InputError("a chunk dict needs 'start' and 'end'", source=source, field=where)
        start, end, claimed = item["start"], item["end"], item.get("text")
    elif isinstance(item, tuple | list) and len(item) == 2:
        start, end = item
    else:
        raise InputError(
            f"expected a str, a (start, end) pair or a dict with start/end, got {type(item).__name__}",
            source=source,
            field=where,
        )
    if not (type(start) is int and type(end) is int):
        raise InputError(f"offsets must be integers, got {start!r}, {end!r}", source=source, field=where)
    if not 0 <= start < end <= len(text):
        raise InputError(
            f"offsets [{start}, {end}) lie outside the document (length {len(text)}) or are empty",
            source=source,
            field=where,
        )
    if claimed is not None and claimed != text[start:end]:
        raise InputError(
            f"chunk text {_preview(claimed)} is not the document's text at [{start}, {end}) "
            f"({_preview(text[start:end])})",
            source=source,
            field=where,
        )
    return start, end


def _preview(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _cluster_end(text: str, end: int) -> int:
    """`end` moved past the marks that join the character before it (so no character is in no chunk)."""
    while end < len(text) and _joins_previous(text, end):
        end += 1
    return end
