"""Persisted indexes (issue 69, item 3): built once, keyed by content, never trusted when damaged.

The embedder here counts every text it is asked for, so "embeds nothing" is a count, not a timing; the BM25
index is held to bm25s's own rankings and scores. No assertion on time.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from ragmetrics.index import IndexStore, build_bm25, build_dense, close_all
from ragmetrics.retrievers import search, timed_search

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega", "context", "manager", "generator", "yield", "dictionary", "sort", "key", "value"]  # fmt: skip


def corpus(n: int = 60, seed: int = 3) -> list[tuple[str, str]]:
    """Documents d0..d(n/3) of three chunks each, texts drawn from WORDS (fixed seed), all distinct."""
    rng = np.random.default_rng(seed)
    return [(f"d{i // 3}#{i % 3}", " ".join(rng.choice(WORDS, size=int(rng.integers(5, 14)))) + f" n{i}")
            for i in range(n)]  # fmt: skip


class CountingEmbedder:
    """Hash-seeded unit vectors (deterministic per text), counting every text it embeds."""

    def __init__(self, name: str = "counting-v1", dim: int = 16) -> None:
        self.name, self.dim = name, dim
        self.seen: list[str] = []

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.seen.extend(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(f"{self.name}\n{text}".encode()).digest()[:8], "little")
            vec = np.random.default_rng(seed).standard_normal(self.dim)
            out[i] = vec / np.linalg.norm(vec)
        return out


@pytest.fixture(autouse=True)
def _fresh_process_state() -> None:
    close_all()  # every check reads from disk, not from indexes this test process holds open


def test_a_second_build_on_unchanged_chunks_embeds_nothing_and_ranks_alike(tmp_path: Path) -> None:
    chunks, model = corpus(), CountingEmbedder()
    first, counts = build_dense(tmp_path, chunks, model)
    assert counts.embedded == len(chunks) and counts.built and len(model.seen) == len(chunks)
    second, counts = build_dense(tmp_path, chunks, CountingEmbedder())
    assert counts.embedded == 0 and counts.reused == len(chunks) and not counts.built
    query = model.encode(["gamma delta"])[0]
    assert first.search(query, 10) == second.search(query, 10)
    # through the retriever, as a night calls it: the count is in its timing, the ranking is the in-memory one
    passages = [{"id": cid, "text": text} for cid, text in chunks]
    queries = {"q1": "gamma delta", "q2": "yield generator"}
    in_memory = search("dense", {}, passages, queries, embedder=CountingEmbedder())
    close_all()
    again = CountingEmbedder()
    persisted, timing = timed_search("dense", {}, passages, queries, embedder=again, index_dir=tmp_path)
    assert timing.embedded == 0 and timing.reused == len(chunks)
    assert again.seen == list(queries.values())  # only the questions were embedded
    assert persisted == in_memory


def test_a_changed_document_re_embeds_only_its_own_chunks(tmp_path: Path) -> None:
    chunks = corpus()
    build_dense(tmp_path, chunks, CountingEmbedder())
    changed = [(cid, text + " revised" if cid.startswith("d4#") else text) for cid, text in chunks]
    model = CountingEmbedder()
    index, counts = build_dense(tmp_path, changed, model)
    assert counts.embedded == 3 and sorted(model.seen) == sorted(t for c, t in changed if c.startswith("d4#"))
    # a chunk moved to another id or position is found by its text: nothing to embed
    shuffled = [(f"moved-{cid}", text) for cid, text in reversed(changed)]
    close_all()
    _, counts = build_dense(tmp_path, shuffled, CountingEmbedder())
    assert counts.embedded == 0
    fresh, _ = build_dense(tmp_path / "other", changed, CountingEmbedder())
    assert np.array_equal(np.asarray(index.vectors), np.asarray(fresh.vectors))


def _flip_byte(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupted_or_truncated_files_are_rebuilt_not_trusted(tmp_path: Path) -> None:
    chunks = corpus()
    good, _ = build_dense(tmp_path, chunks, CountingEmbedder())
    query = CountingEmbedder().encode(["alpha"])[0]
    expected = good.search(query, 20)
    (dense_file,) = (tmp_path / "dense").glob("*.rmx")
    _flip_byte(dense_file, dense_file.stat().st_size - 7)  # one vector's byte: only the checksum can tell
    model = CountingEmbedder()
    rebuilt, counts = build_dense(tmp_path, chunks, model)
    assert counts.built and counts.embedded == 0  # the matrix is gathered again from the intact store
    assert rebuilt.search(query, 20) == expected
    # a truncated segment of the store: moved aside, its chunks embedded again, never read
    (segment,) = (tmp_path / "embeddings").glob("*/seg-*.rmx")
    with segment.open("r+b") as handle:
        handle.truncate(segment.stat().st_size - 100)
    dense_file.unlink()
    model = CountingEmbedder()
    again, counts = build_dense(tmp_path, chunks, model)
    assert counts.embedded == len(chunks) and len(list(segment.parent.glob("*.bad"))) == 1
    assert again.search(query, 20) == expected
    # a BM25 file with a damaged header, then one with a damaged posting
    bm25, counts = build_bm25(tmp_path, chunks)
    ranking = bm25.search("gamma delta sigma", 20)
    (bm25_file,) = (tmp_path / "bm25").glob("*.rmx")
    for at in (30, bm25_file.stat().st_size - 3):
        _flip_byte(bm25_file, at)
        close_all()
        reread, counts = build_bm25(tmp_path, chunks)
        assert counts.built and reread.search("gamma delta sigma", 20) == ranking


def test_keys_change_with_the_model_and_the_tokenizer_settings(tmp_path: Path) -> None:
    chunks = corpus()
    build_dense(tmp_path, chunks, CountingEmbedder("model-a"))
    _, counts = build_dense(tmp_path, chunks, CountingEmbedder("model-b"))
    assert counts.embedded == len(chunks)  # another model never answers from model-a's vectors
    _, counts = build_dense(tmp_path, chunks, CountingEmbedder("model-a"))
    assert counts.embedded == 0
    first, counts = build_bm25(tmp_path, chunks)
    assert counts.built
    for settings in (
        {"k1": 1.2},
        {"b": 0.5},
        {"method": "bm25+"},
        {"stopwords": None},
        {"stopwords": ["alpha"]},
    ):
        other, counts = build_bm25(tmp_path, chunks, **settings)  # type: ignore[arg-type]
        assert counts.built and other.key != first.key, settings
    same, counts = build_bm25(tmp_path, chunks, k1=1.5, b=0.75, method="lucene", stopwords="en")
    assert not counts.built and same.key == first.key
    assert len(list((tmp_path / "bm25").glob("*.rmx"))) == 6


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_persisted_bm25_ranks_and_scores_as_bm25s(tmp_path: Path, method: str) -> None:
    pytest.importorskip("bm25s")
    from ragmetrics.retrievers._inputs import Corpus
    from ragmetrics.retrievers.bm25 import BM25Index as InMemory

    chunks = [*corpus(90), ("empty", ""), ("stop", "the and of")]
    ids, texts = zip(*chunks, strict=True)
    reference = InMemory(Corpus(tuple(ids), tuple(texts)), method=method, k1=1.2, b=0.6)
    stored, _ = build_bm25(tmp_path, lambda: iter(chunks), method=method, k1=1.2, b=0.6)  # streamed
    for query in (
        "gamma delta",
        "yield yield generator",
        "sigma tau n7",
        "the",
        "unknownword",
        "context manager",
    ):
        expected = reference.search_one(query, 30)
        assert [(ids[p], s) for p, s in stored.search(query, 30)] == expected, query


KILLED_BUILD = """
import os, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_persisted_index import CountingEmbedder, corpus
from ragmetrics.index import dense, embeddings

embeddings.SEGMENT_ROWS = dense.SEGMENT_ROWS = 20  # a segment every 20 new vectors
dense.EMBED_BATCH = 10

class Dying(CountingEmbedder):
    def encode(self, texts):
        if len(self.seen) >= 40:
            os._exit(9)  # killed mid-build: no cleanup, no exception handler runs
        return super().encode(texts)

dense.build_dense({root!r}, corpus(), Dying())
"""


def test_a_build_killed_midway_keeps_what_it_saved_and_leaves_no_half_file(tmp_path: Path) -> None:
    script = KILLED_BUILD.format(tests=str(Path(__file__).parent), root=str(tmp_path))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), *sys.path])}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, timeout=120, check=False)
    assert done.returncode == 9
    assert not list((tmp_path / "dense").glob("*.rmx")) if (tmp_path / "dense").exists() else True
    model = CountingEmbedder()
    index, counts = build_dense(tmp_path, corpus(), model)
    assert counts.embedded == len(corpus()) - 40  # the two saved segments were kept, nothing else trusted
    fresh, _ = build_dense(tmp_path / "fresh", corpus(), CountingEmbedder())
    assert np.array_equal(np.asarray(index.vectors), np.asarray(fresh.vectors))


def test_concurrent_builds_of_one_corpus_agree(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_persisted_index import CountingEmbedder, corpus
        from ragmetrics.index import build_bm25, build_dense
        build_dense({str(tmp_path)!r}, corpus(300), CountingEmbedder())
        build_bm25({str(tmp_path)!r}, corpus(300))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), *sys.path])}
    workers = [subprocess.Popen([sys.executable, "-c", script], env=env) for _ in range(2)]
    assert [w.wait(timeout=120) for w in workers] == [0, 0]
    model = CountingEmbedder()
    index, counts = build_dense(tmp_path, corpus(300), model)
    assert counts.embedded == 0 and not counts.built
    fresh, _ = build_dense(tmp_path / "fresh", corpus(300), CountingEmbedder())
    assert np.array_equal(np.asarray(index.vectors), np.asarray(fresh.vectors))
    assert not list(tmp_path.rglob("*.tmp"))  # no temporary file left behind


def test_stored_vectors_serve_a_rerankers_candidates_across_runs(tmp_path: Path) -> None:
    chunks = corpus()
    store = IndexStore(tmp_path)
    build_dense(tmp_path, chunks[:30], CountingEmbedder())  # the dense run embedded the first half
    model = CountingEmbedder()
    vectors = store.vectors(model)
    texts = [t for _, t in chunks[20:40]]
    got = vectors.encode(texts)
    assert sorted(model.seen) == sorted(texts[10:]) and vectors.counts.embedded == 10
    vectors.finish()
    later = CountingEmbedder()
    assert np.array_equal(store.vectors(later).encode(texts), got) and later.seen == []


@pytest.mark.parametrize("kind", ["bm25", "bm25_embedding_rerank"])
def test_retrievers_over_the_persisted_index_rank_as_in_memory(tmp_path: Path, kind: str) -> None:
    pytest.importorskip("bm25s")
    passages = [{"id": cid, "text": text} for cid, text in corpus(90)]
    queries = {f"q{i}": f"{WORDS[i]} {WORDS[i + 3]} {WORDS[i + 7]}" for i in range(12)}
    params = {"candidates": 10} if kind == "bm25_embedding_rerank" else {"k1": 1.2}
    expected = search(kind, params, passages, queries, embedder=CountingEmbedder())
    for night in ("first", "second"):
        close_all()
        model = CountingEmbedder()
        got, timing = timed_search(kind, params, passages, queries, embedder=model, index_dir=tmp_path)
        assert got == expected, night
        if (
            night == "second"
        ):  # the reranker's candidates were stored by the first night: only questions embedded
            assert timing.embedded == 0 and set(model.seen) <= set(queries.values())


def test_many_small_segments_are_merged_into_one_without_losing_a_vector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmetrics.index import embeddings

    monkeypatch.setattr(embeddings, "MAX_SEGMENTS", 3)
    chunks = corpus(40)
    for start in range(0, 40, 8):  # five nights, each adding a few documents
        build_dense(tmp_path, chunks[: start + 8], CountingEmbedder())
    folder = next((tmp_path / "embeddings").iterdir())
    assert len(list(folder.glob("seg-*.rmx"))) <= 3 + 1
    model = CountingEmbedder()
    (tmp_path / "dense").rename(tmp_path / "dense-old")  # force a gather from the merged store
    index, counts = build_dense(tmp_path, chunks, model)
    assert counts.embedded == 0 and model.seen == []
    fresh, _ = build_dense(tmp_path / "fresh", chunks, CountingEmbedder())
    assert np.array_equal(np.asarray(index.vectors), np.asarray(fresh.vectors))
