"""What chunking works on and produces: whole documents, chunks that remember where they came from, and the
configuration that says how documents are cut.

Why offsets: a chunk id means nothing once the chunker changes, but (document id, start, end) does. Every
chunk keeps the character offsets of its text in its document, so judgments made as spans of a document
(`ragmetrics.chunking.spans`) carry over to any chunking of it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["CHUNKER_VERSION", "Chunk", "ChunkingConfig", "ChunkingMethod", "Document", "chunk_id"]

CHUNKER_VERSION = 2  # 2: combined characters kept together, CRLF blank lines are paragraph breaks
"""Bumped whenever a built-in chunker would cut the same text differently, so fingerprints (and the indexes
keyed by them) change with it."""

ChunkingMethod = Literal["tokens", "sentences", "recursive", "custom"]


@dataclass(frozen=True, slots=True)
class Document:
    """A whole document: its id and its text. Offsets of chunks and spans index into `text` (Python `str`
    indices, i.e. Unicode code points)."""

    id: str
    text: str


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document: ``text == document.text[start:end]`` always holds for chunks made here."""

    id: str
    doc_id: str
    start: int
    end: int
    text: str

    def __len__(self) -> int:
        return self.end - self.start


def chunk_id(doc_id: str, start: int, end: int) -> str:
    """The id of the chunk at [start, end) of a document: built from the offsets, so the same piece of the same
    document has the same id under every chunking that makes it (an index keyed by id can reuse it)."""
    return f"{doc_id}:{start}-{end}"


class ChunkingConfig(BaseModel):
    """How documents are cut into chunks (the `chunking:` block of a config; one axis of a sweep).

    - ``tokens``: windows of `size` tokens of the MiniLM tokenizer the project ships, consecutive windows
      sharing `overlap` tokens.
    - ``sentences``: windows of `size` sentences (paragraph breaks and sentencex's boundaries), sharing
      `overlap` sentences.
    - ``recursive``: split at the highest-level structure that makes pieces fit (Markdown headings, blank
      lines, line breaks, sentence ends, spaces, then a hard cut) and pack consecutive pieces into chunks of
      at most `size` (`length`: characters or tokens), repeating up to `overlap` of the previous chunk's end.
    - ``custom``: the team's callable (`callable`, ``"package.module:function"``), given a document's text
      and returning its chunks (see `ragmetrics.chunking.chunkers.custom_chunks`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: ChunkingMethod
    size: int | None = Field(default=None, gt=0, description="chunk size in the method's unit")
    overlap: int = Field(default=0, ge=0, description="units shared by consecutive chunks")
    length: Literal["characters", "tokens"] = Field(
        default="characters", description="recursive: the unit `size` and `overlap` count"
    )
    separators: tuple[str, ...] | None = Field(
        default=None, description="recursive: regular expressions to split at, highest level first"
    )
    language: str | None = Field(
        default=None, description="sentences: ISO 639-1 code; unset, detected per document from its script"
    )
    callable: str | None = Field(default=None, description="custom: 'package.module:function'")

    @model_validator(mode="after")
    def _consistent(self) -> ChunkingConfig:
        if self.method == "custom":
            if not self.callable or ":" not in self.callable:
                raise ValueError("method 'custom' needs callable: 'package.module:function'")
            return self
        if self.callable is not None:
            raise ValueError(f"callable applies to method 'custom', not {self.method!r}")
        if self.size is None:
            raise ValueError(f"method {self.method!r} needs a size")
        if self.overlap >= self.size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
        if self.method != "recursive" and (self.length != "characters" or self.separators is not None):
            raise ValueError("length and separators apply to method 'recursive'")
        if self.method != "sentences" and self.language is not None:
            raise ValueError("language applies to method 'sentences'")
        return self

    @property
    def name(self) -> str:
        """A short readable label ("tokens-256-32", "recursive-1000c-100"), for tables and run names."""
        if self.method == "custom":
            return f"custom-{self.callable}"
        unit = {"characters": "c", "tokens": "t"}[self.length] if self.method == "recursive" else ""
        return f"{self.method}-{self.size}{unit}-{self.overlap}"

    def fingerprint(self) -> str:
        """sha256 of everything that decides the chunks (this config and `CHUNKER_VERSION`): the key an index
        of chunks is stored under. A custom chunker's code is not in it; its name is."""
        payload = {"version": CHUNKER_VERSION, **self.model_dump(mode="json")}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()
