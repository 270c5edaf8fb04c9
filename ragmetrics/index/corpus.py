"""A corpus as the index reads it: (chunk id, text) pairs streamed, so a million chunks never sit in memory.

An index is built in passes over the corpus (hash every text; embed or tokenise what it lacks), so it takes
either a sequence of pairs or a function that returns a fresh iterator over them, such as one reading a JSONL
file line by line. Only ids and 32-byte text hashes are kept between passes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError

__all__ = ["BuildCounts", "Chunks", "CorpusScan", "iterate", "scan"]

Chunks = Sequence[tuple[str, str]] | Callable[[], Iterable[tuple[str, str]]]
"""(id, text) pairs, or a function giving a fresh iterator over them (one call per pass)."""


def iterate(chunks: Chunks) -> Iterator[tuple[str, str]]:
    return iter(chunks() if callable(chunks) else chunks)


@dataclass
class BuildCounts:
    """What building (or finding) an index cost: the number a night reports beside its index seconds."""

    embedded: int = 0
    """Chunks sent to the embedding model (0 on an unchanged corpus)."""
    reused: int = 0
    """Chunks whose vector was already stored (under any id, by any earlier night or test-set build)."""
    built: bool = False
    """True when an index file was written now, False when a stored one was read."""

    def add(self, other: BuildCounts) -> None:
        self.embedded += other.embedded
        self.reused += other.reused
        self.built = self.built or other.built


@dataclass(frozen=True)
class CorpusScan:
    ids: list[str]
    digests: NDArray[Any]
    """SHA-256 of each chunk's text, in corpus order (numpy S32)."""

    def key(self, *parts: str) -> str:
        """A key for an index of these texts in this order under `parts` (model, settings)."""
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part.encode("utf-8") + b"\x00")
        digest.update(np.ascontiguousarray(self.digests).tobytes())
        return digest.hexdigest()


def scan(chunks: Chunks, source: str = "corpus") -> CorpusScan:
    """One pass: every id (checked: a non-empty string, not seen before) and its text's hash."""
    ids: list[str] = []
    seen: set[str] = set()
    digests = bytearray()
    for line, pair in enumerate(iterate(chunks), start=1):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InputError(
                f"expected an (id, text) pair, got {type(pair).__name__}", source=source, line=line
            )
        cid, text = pair
        if not isinstance(cid, str) or not cid.strip():
            raise InputError("missing or empty chunk id", source=source, line=line, field="id")
        if not isinstance(text, str):
            raise InputError(f"chunk {cid!r} has no text", source=source, line=line, field="text")
        if cid in seen:
            raise InputError(f"duplicate chunk id {cid!r}", source=source, line=line, field="id")
        seen.add(cid)
        ids.append(cid)
        digests += hashlib.sha256(text.encode("utf-8")).digest()
    if not ids:
        raise InputError("no chunks to index", source=source)
    return CorpusScan(ids, np.frombuffer(bytes(digests), dtype="S32").copy())
