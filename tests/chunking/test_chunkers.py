"""Chunkers keep offsets exactly, respect size and overlap, cut at structure, and refuse a team's chunker
that returns text its document does not hold."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ragmetrics.chunking import Chunk, ChunkingConfig, Document, chunk_document, chunk_documents
from ragmetrics.chunking.units import sentence_spans, token_spans
from ragmetrics.errors import InputError

PARAGRAPH = (
    "The quick brown fox jumps over the lazy dog. It was not amused. "
    "Dr. Smith measured 3.5 km of fence! Was it enough? Nobody knew.\n"
)
MARKDOWN = (
    "# Install\n\nRun pip install ragmetrics to get it. It needs Python 3.10.\n\n"
    "## Configure\n\nWrite a YAML file. Name your retrievers in it.\n\n"
    "## Run\n\nCall ragmetrics run with the file. Read the report.\n"
)


def _check_offsets(document: Document, chunks: list[Chunk]) -> None:
    assert chunks
    for chunk in chunks:
        assert chunk.doc_id == document.id
        assert document.text[chunk.start : chunk.end] == chunk.text
        assert chunk.text == chunk.text.strip()
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)


@pytest.mark.parametrize(
    "config",
    [
        ChunkingConfig(method="tokens", size=16, overlap=4),
        ChunkingConfig(method="sentences", size=2, overlap=1),
        ChunkingConfig(method="recursive", size=60, overlap=20),
        ChunkingConfig(method="recursive", size=12, overlap=3, length="tokens"),
    ],
    ids=lambda c: c.name,
)
def test_every_chunk_is_its_documents_text_at_its_offsets(config: ChunkingConfig) -> None:
    document = Document("doc", PARAGRAPH * 3 + "\n" + MARKDOWN)
    _check_offsets(document, chunk_document(document, config))


def test_token_windows_hold_size_tokens_and_share_overlap() -> None:
    document = Document("d", PARAGRAPH * 4)
    tokens = token_spans(document.text)
    chunks = chunk_document(document, ChunkingConfig(method="tokens", size=10, overlap=3))
    starts = [s for s, _ in tokens]
    for chunk in chunks:
        inside = [t for t in tokens if chunk.start <= t[0] and t[1] <= chunk.end]
        assert 1 <= len(inside) <= 10
    firsts = [starts.index(c.start) for c in chunks]
    assert all(b - a == 7 for a, b in itertools.pairwise(firsts))  # step = size - overlap
    assert chunks[-1].end == tokens[-1][1]  # the last token is in a chunk
    assert chunks[0].start == tokens[0][0]


def test_sentence_windows_follow_sentence_boundaries() -> None:
    text = PARAGRAPH
    sentences = [text[s:e] for s, e in sentence_spans(text)]
    assert sentences == [
        "The quick brown fox jumps over the lazy dog.",
        "It was not amused.",
        "Dr. Smith measured 3.5 km of fence!",
        "Was it enough?",
        "Nobody knew.",
    ]
    chunks = chunk_document(Document("d", text), ChunkingConfig(method="sentences", size=2, overlap=1))
    assert [c.text for c in chunks] == [" ".join(sentences[i : i + 2]) for i in range(4)]


def test_list_items_and_headings_are_sentences_of_their_own() -> None:
    text = (
        "# Install\nRun the installer. Then restart.\n- on Linux use apt\n- on macOS use brew\n2. check it\n"
    )
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "# Install", "Run the installer.", "Then restart.", "- on Linux use apt", "- on macOS use brew", "2. check it",
    ]  # fmt: skip


def test_recursive_splitting_cuts_at_headings_first() -> None:
    document = Document("guide.md", MARKDOWN)
    chunks = chunk_document(document, ChunkingConfig(method="recursive", size=80, overlap=0))
    assert [c.text.split("\n")[0] for c in chunks] == ["# Install", "## Configure", "## Run"]
    assert all(len(c) <= 80 for c in chunks)


def test_recursive_chunks_respect_size_and_repeat_at_most_overlap() -> None:
    document = Document("d", PARAGRAPH * 6)
    chunks = chunk_document(document, ChunkingConfig(method="recursive", size=70, overlap=25))
    assert all(len(c) <= 70 for c in chunks)
    shared = [max(0, a.end - b.start) for a, b in itertools.pairwise(chunks)]
    assert max(shared) <= 25 and any(shared)


def test_a_repeated_passage_gets_the_offsets_of_each_copy() -> None:
    # Searching for a chunk's text (chunking_evaluation's way) finds the first copy twice.
    text = "Same paragraph here.\n\nSame paragraph here.\n\nSame paragraph here.\n"
    chunks = chunk_document(Document("d", text), ChunkingConfig(method="recursive", size=25, overlap=0))
    assert [c.start for c in chunks] == [0, 22, 44]
    assert len({c.id for c in chunks}) == 3


def test_config_refuses_inconsistent_settings() -> None:
    with pytest.raises(ValueError, match="overlap"):
        ChunkingConfig(method="tokens", size=10, overlap=10)
    with pytest.raises(ValueError, match="needs a size"):
        ChunkingConfig(method="sentences")
    with pytest.raises(ValueError, match="callable"):
        ChunkingConfig(method="custom")
    with pytest.raises(ValueError, match="length and separators"):
        ChunkingConfig(method="tokens", size=5, length="tokens")
    assert (
        ChunkingConfig(method="tokens", size=5).fingerprint()
        != ChunkingConfig(method="tokens", size=6).fingerprint()
    )


def test_a_custom_chunker_gets_its_offsets_checked() -> None:
    document = Document("doc-7", "alpha beta gamma delta")
    config = ChunkingConfig(method="custom", callable="team:chunker")
    good = chunk_document(document, config, lambda text: ["alpha beta", {"start": 11, "end": 22}, (6, 16)])
    assert [(c.start, c.end, c.text) for c in good] == [
        (0, 10, "alpha beta"),
        (11, 22, "gamma delta"),
        (6, 16, "beta gamma"),
    ]

    with pytest.raises(InputError, match=r"document 'doc-7', chunk 1.*not the document's text") as exc:
        chunk_document(document, config, lambda text: ["alpha", {"start": 6, "end": 10, "text": "BETA"}])
    assert exc.value.source == "chunker team:chunker"
    with pytest.raises(InputError, match=r"chunk 0.*'epsilon' is not found"):
        chunk_document(document, config, lambda text: ["epsilon"])
    with pytest.raises(InputError, match=r"chunk 0.*outside the document"):
        chunk_document(document, config, lambda text: [(5, 99)])


def test_chunk_documents_imports_a_custom_chunker_by_name(tmp_path: Path) -> None:
    (tmp_path / "team_chunker.py").write_text(
        "def paragraphs(text):\n    return [p for p in text.split('\\n\\n') if p]\n", encoding="utf-8"
    )
    config = ChunkingConfig(method="custom", callable="team_chunker:paragraphs")
    chunks = chunk_documents([Document("a", "one\n\ntwo")], config, search=[tmp_path])
    assert [(c.start, c.end) for c in chunks] == [(0, 3), (5, 8)]
