"""The approximate dense index (`search: hnsw`, the `ann` extra): persisted beside the exact one, rebuilt when
damaged, close to exact search; without faiss, a clear error naming the extra."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from ragmetrics import ConfigError
from ragmetrics.index import build_dense, close_all
from ragmetrics.retrievers import search
from ragmetrics.retrievers.identity import ranking_identity

from .test_persisted_index import CountingEmbedder, corpus

HAS_FAISS = importlib.util.find_spec("faiss") is not None


@pytest.mark.skipif(not HAS_FAISS, reason="faiss-cpu (the ann extra) is not installed")
def test_hnsw_is_kept_checked_and_close_to_exact(tmp_path: Path) -> None:
    from ragmetrics.index.hnsw import HnswIndex

    chunks = corpus(600)
    dense, _ = build_dense(tmp_path, chunks, CountingEmbedder(dim=24))
    graph, built = HnswIndex.build(dense, tmp_path)
    assert built
    queries = CountingEmbedder(dim=24).encode([f"query {i} gamma" for i in range(30)])
    recall = np.mean([len({p for p, _ in graph.search(q, 10)} & {p for p, _ in dense.search(q, 10)}) / 10
                      for q in queries])  # fmt: skip
    assert recall >= 0.9
    again, built = HnswIndex.build(dense, tmp_path)
    assert not built and again.search(queries[0], 10) == graph.search(queries[0], 10)
    assert again.path is not None
    data = bytearray(again.path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    again.path.write_bytes(bytes(data))
    _, built = HnswIndex.build(dense, tmp_path)
    assert built  # a graph whose bytes do not match its checksum is rebuilt, never read


@pytest.mark.skipif(HAS_FAISS, reason="checks the message shown when faiss-cpu is missing")
def test_hnsw_without_faiss_names_the_extra(tmp_path: Path) -> None:
    close_all()
    passages = [{"id": cid, "text": text} for cid, text in corpus(12)]
    with pytest.raises(ConfigError, match=r"ann.*faiss-cpu"):
        search(
            "dense",
            {"search": "hnsw"},
            passages,
            {"q": "gamma"},
            embedder=CountingEmbedder(),
            index_dir=tmp_path,
        )


def test_approximate_search_is_part_of_a_dense_runs_identity() -> None:
    exact = ranking_identity("dense", {"top_k": 10, "search": "exact"})
    assert exact == ranking_identity("dense", {})
    assert ranking_identity("dense", {"search": "hnsw"}) != exact
    with pytest.raises(ConfigError, match="search must be"):
        search(
            "dense", {"search": "ivf"}, [{"id": "a", "text": "x"}], {"q": "x"}, embedder=CountingEmbedder()
        )
