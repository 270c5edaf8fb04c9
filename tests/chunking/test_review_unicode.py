"""Review fixes: chunk boundaries never split what a reader sees as one character, and no character of a
document is left out of every chunk (combining marks, zero-width joiners, CRLF)."""

from __future__ import annotations

import unicodedata

import pytest

from ragmetrics.chunking.chunkers import chunk_document
from ragmetrics.chunking.model import ChunkingConfig, Document

TEXT = "Cafe\u0301\u0301s na\u0308ive\r\nx \U0001f468\u200d\U0001f469\u200d\U0001f467 fam re\u0301sume\u0301.\r\n"


def _splits_a_cluster(text: str, start: int, end: int) -> bool:
    first = text[start]
    return (
        unicodedata.category(first) in ("Mn", "Mc", "Me")
        or first == "\u200d"
        or text[start - 1 : start] == "\u200d"
        or (end < len(text) and (unicodedata.category(text[end]) in ("Mn", "Me") or text[end] == "\u200d"))
        or (text[start - 1 : start] == "\r" and first == "\n")
    )


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 7])
def test_a_hard_cut_keeps_combined_characters_together(size: int) -> None:
    config = ChunkingConfig(method="recursive", size=size, overlap=0)
    chunks = chunk_document(Document("d", TEXT), config)
    assert all(TEXT[c.start : c.end] == c.text for c in chunks)
    assert [c.text for c in chunks if _splits_a_cluster(TEXT, c.start, c.end)] == []


@pytest.mark.parametrize("size", [1, 2, 3])
def test_every_character_of_a_document_is_in_a_token_chunk(size: int) -> None:
    chunks = chunk_document(Document("d", TEXT), ChunkingConfig(method="tokens", size=size, overlap=0))
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    lost = [TEXT[i] for i in range(len(TEXT)) if i not in covered and not TEXT[i].isspace()]
    assert lost == []  # before: the tokenizer's offsets left the combining marks in no chunk


def test_crlf_text_is_cut_at_paragraphs_as_lf_text_is() -> None:
    lines = ["alpha beta gamma.", "delta epsilon zeta eta.", "theta iota.", "kappa lambda mu nu xi.", "omicron."]
    lf = "\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n\n" + "pi rho sigma tau.\nupsilon phi."
    crlf = lf.replace("\n", "\r\n")
    config = ChunkingConfig(method="recursive", size=12, overlap=0, length="tokens")
    from_lf = [c.text for c in chunk_document(Document("d", lf), config)]
    from_crlf = [c.text.replace("\r\n", "\n") for c in chunk_document(Document("d", crlf), config)]
    assert from_crlf == from_lf  # before: a CRLF blank line was not a paragraph break, and chunks crossed it


def test_the_changed_cuts_change_the_fingerprint_indexes_are_keyed_by() -> None:
    from ragmetrics.chunking.model import CHUNKER_VERSION

    # The cuts above changed for the same text and config: an index of version-1 chunks must not be reused.
    assert CHUNKER_VERSION == 2
