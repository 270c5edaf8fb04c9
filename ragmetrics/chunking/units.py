"""The units chunkers count, each located in the document by character offsets: tokens of the shipped MiniLM
tokenizer and sentences.

Why these: the tokenizer is already in the wheel (no download) and is the one the built-in dense retriever
embeds with, so a token window is what that model sees; `tokenizers` reports each token's character offsets
in the original text. Sentences come from sentencex (already a dependency: the judge segments with it),
whose pieces concatenate back to their paragraph, so their offsets are exact by construction.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = ["Span", "sentence_spans", "token_spans"]

Span = tuple[int, int]
"""A [start, end) character range of a document."""

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


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
    ends a sentence; inside a paragraph sentencex decides, in `language` (else the paragraph's script's)."""
    from sentencex import segment

    from ragmetrics.judge.text.language import detect_language

    spans: list[Span] = []
    position = 0
    for paragraph_end in [m.start() for m in _PARAGRAPH_BREAK.finditer(text)] + [len(text)]:
        paragraph = text[position:paragraph_end]
        if paragraph.strip():
            offset = position
            for piece in segment(language or detect_language(paragraph), paragraph):
                span = _stripped(text, offset, offset + len(piece))
                if span is not None:
                    spans.append(span)
                offset += len(piece)
        match = _PARAGRAPH_BREAK.match(text, paragraph_end)
        position = match.end() if match else paragraph_end
    return spans


def _stripped(text: str, start: int, end: int) -> Span | None:
    """[start, end) without the whitespace at either end; None when nothing else is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None
