"""Dense retrieval, the old reranker name, and rerankers plugged in as a callable, a 'module:function' name or an
HTTP endpoint (Cohere/Jina/vLLM and text-embeddings-inference shapes, served on 127.0.0.1)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from test_retrievers import PASSAGES, KeywordEmbedder  # tests/collection is on sys.path (no package)

from ragmetrics import ConfigError
from ragmetrics.retrievers import search

QUERY = {"q": "with statement context manager"}


def longest_first(question: str, passages: list[str]) -> list[float]:
    """A reranker by passage length, so the expected order is known."""
    return [float(len(p)) for p in passages]


def test_dense_ranks_every_passage_by_cosine() -> None:
    ranking = search("dense", {"top_k": 3}, PASSAGES, {"q": "generator yield"}, embedder=KeywordEmbedder())[
        "q"
    ]
    assert ranking[0][0] == "p2"
    assert len(ranking) == 3
    with pytest.raises(ConfigError, match="dense: unknown parameter"):
        search("dense", {"candidates": 3}, PASSAGES, QUERY, embedder=KeywordEmbedder())


def test_the_old_name_still_works_and_gives_the_same_ranking() -> None:
    old = search("bm25_rerank", {"candidates": 3}, PASSAGES, QUERY, embedder=KeywordEmbedder())
    new = search("bm25_embedding_rerank", {"candidates": 3}, PASSAGES, QUERY, embedder=KeywordEmbedder())
    assert old == new


@pytest.mark.parametrize("reranker", [longest_first, f"{__name__}:longest_first"])
def test_a_callable_reranker_orders_the_bm25_candidates(reranker: Any) -> None:
    candidates = search("bm25", {"top_k": 3}, PASSAGES, QUERY)["q"]
    ranking = search("bm25_embedding_rerank", {"candidates": 3, "reranker": reranker}, PASSAGES, QUERY)["q"]
    texts = {p["id"]: p["text"] for p in PASSAGES}
    assert {d for d, _ in ranking} == {d for d, _ in candidates}  # a reranker only reorders
    assert [s for _, s in ranking] == sorted((float(len(texts[d])) for d, _ in candidates), reverse=True)


@pytest.mark.parametrize(
    ("reranker", "message"),
    [
        ("no_colon_here", "expected 'package.module:function'"),
        ("ragmetrics:does_not_exist", "cannot import it"),
        (lambda q, ps: [1.0], "returned 1 scores for"),
        (lambda q, ps: [float("nan")] * len(ps), "not a finite number"),
        ({"url": "ftp://x"}, "http\\(s\\) URL"),
        (42, "must be a callable"),
    ],
)
def test_bad_rerankers_are_config_errors(reranker: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        search("bm25_embedding_rerank", {"candidates": 3, "reranker": reranker}, PASSAGES, QUERY)


class _Rerank(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict[str, Any]]] = []
    headers_seen: ClassVar[list[str]] = []
    fail: ClassVar[bool] = False

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        type(self).headers_seen.append(self.headers.get("Authorization", ""))
        if type(self).fail:
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"model loading")
            return
        texts = body.get("documents") or body.get("texts")
        scored = [{"index": i, "score": float(len(t))} for i, t in enumerate(texts)][::-1]  # any order
        reply: Any = scored if self.path == "/tei/rerank" else {
            "results": [{"index": s["index"], "relevance_score": s["score"]} for s in scored]
        }  # fmt: skip
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    _Rerank.bodies, _Rerank.headers_seen, _Rerank.fail = [], [], False
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Rerank)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("path", "fmt", "key"), [("/v1/rerank", "cohere", "documents"), ("/tei/rerank", "tei", "texts")]
)
def test_an_http_reranker_in_either_shape(
    endpoint: str, path: str, fmt: str, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RERANK_KEY", "sk-rerank")
    spec = {"url": endpoint + path, "format": fmt, "model": "bge-reranker", "api_key_env": "RERANK_KEY"}
    ranking = search("bm25_embedding_rerank", {"candidates": 3, "reranker": spec}, PASSAGES, QUERY)["q"]
    expected = search("bm25_embedding_rerank", {"candidates": 3, "reranker": longest_first}, PASSAGES, QUERY)[
        "q"
    ]
    assert ranking == expected
    (body,) = _Rerank.bodies
    assert body["query"] == QUERY["q"] and len(body[key]) == len(ranking) == 2  # BM25 matched two
    assert _Rerank.headers_seen == ["Bearer sk-rerank"]


def test_an_http_reranker_error_names_the_endpoint_and_its_message(endpoint: str) -> None:
    _Rerank.fail = True
    with pytest.raises(ConfigError, match=r"/v1/rerank: HTTP 503: model loading"):
        search(
            "bm25_embedding_rerank",
            {"candidates": 3, "reranker": {"url": endpoint + "/v1/rerank"}},
            PASSAGES,
            QUERY,
        )
