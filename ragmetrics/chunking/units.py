"""The units chunkers count, each located in the document by character offsets: tokens of the shipped MiniLM
tokenizer and sentences.

Why these: the tokenizer is already in the wheel (no download) and is the one the built-in dense retriever
embeds with, so a token window is what that model sees; `tokenizers` reports each token's character offsets
in the original text. Sentences come from sentencex (already a dependency: the judge segments with it),
whose pieces concatenate back to their paragraph, so their offsets are exact by construction.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

__all__ = ["Span", "TokenIndex", "sentence_spans", "token_spans"]

Span = tuple[int, int]
"""A [start, end) character range of a document."""

# Lines that start a block of their own: list items and Markdown headings (a heading also ends its block).
_LIST_OR_HEADING = re.compile(r"[ \t]*(?:[-*•]|\d{1,3}[.)]|#{1,6})[ \t]+")
_HEADING = re.compile(r"[ \t]*#{1,6}[ \t]")


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from tokenizers import Tokenizer

    from ragmetrics.embeddings.minilm import TOKENIZER_PATH

    tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def token_spans(text: str) -> list[Span]:
    """The character range of every token of `text` (no special tokens), in order."""
    if not text:
        return []
    encoding = _tokenizer().encode(text, add_special_tokens=False)
    return [(int(start), int(end)) for start, end in encoding.offsets if end > start]


def sentence_spans(text: str, language: str | None = None) -> list[Span]:
    """The character range of every sentence of `text`, whitespace around it excluded. A blank line always
    ends a sentence, a list item or a Markdown heading starts one (and a heading line is one), as in the
    judge's segmentation; inside a block sentencex decides, in `language` (else the block's script's). A list
    marker ("- ", "2. ") stays with its item's first sentence rather than being taken for a sentence."""
    from sentencex import segment

    from ragmetrics.judge.text.language import detect_language

    spans: list[Span] = []
    for start, body, end in _blocks(text):
        offset = body
        first = True
        for piece in segment(language or detect_language(text[body:end]), text[body:end]):
            span = _stripped(text, start if first else offset, offset + len(piece))
            if span is not None:
                spans.append(span)
                first = False
            offset += len(piece)
    return spans


def _blocks(text: str) -> list[tuple[int, int, int]]:
    """(start, start of the text after a list marker, end) of each block: lines up to a blank line, a list
    item or a heading; a heading line alone."""
    blocks: list[list[int]] = []  # [start, body start, end]
    open_block = False
    heading = False
    position = 0
    for line in text.splitlines(keepends=True):
        line_start, position = position, position + len(line)
        if not line.strip():
            open_block = False
            continue
        marker = _LIST_OR_HEADING.match(line)
        if not open_block or marker is not None or heading:
            blocks.append([line_start, line_start + (marker.end() if marker else 0), position])
            open_block = True
        blocks[-1][2] = position
        heading = _HEADING.match(line) is not None
    return [(start, body, end) for start, body, end in blocks]


def _stripped(text: str, start: int, end: int) -> Span | None:
    """[start, end) without the whitespace at either end; None when nothing else is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


class TokenIndex:
    """Character ranges of documents turned into token ranges (index of the first token, one past the last),
    so span metrics can count tokens instead of characters: a token belongs to a range when they share a
    character. Each document is tokenized once, when first asked about."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self._texts = texts
        self._tokens: dict[str, tuple[list[int], list[int]]] = {}

    def range(self, doc_id: str, start: int, end: int) -> Span:
        if doc_id not in self._tokens:
            spans = token_spans(self._texts[doc_id])
            self._tokens[doc_id] = ([s for s, _ in spans], [e for _, e in spans])
        starts, ends = self._tokens[doc_id]
        return bisect.bisect_right(ends, start), bisect.bisect_left(starts, end)
