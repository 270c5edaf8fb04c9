"""A small but real RAG pipeline over the built-in collection, the way a team would hand theirs to ragmetrics.

- `answer(sample)`: what `runs: [{source: pipeline, target: "rag_pipeline:answer"}]` calls once per question.
  BM25 (bm25s) over the collection's 481 passages, top 3, then an extractive answerer: the sentences of the
  contexts that share the most content words with the question. Returns the answer, the contexts with their
  passage ids and scores, and the token usage and cost of a (pretend) hosted generator.
- `generate(inputs)`: what `generator: {target: "rag_pipeline:generate"}` calls for retriever, file and fusion
  runs: the same extractive answerer over the contexts it is given.
- `serve(port)`: the same pipeline behind HTTP (`python examples/rag_pipeline.py --serve 8765`), for
  `target: {url: http://127.0.0.1:8765/answer}`.

Run it: `ragmetrics run configs/own_pipeline.yaml` (needs the `examples` extra for bm25s).
"""

from __future__ import annotations

import json
import re
import threading
from functools import cache
from typing import Any

TOP_K = 3
PRICE_PER_1K_TOKENS = 0.0005
"""An illustrative price, so the report's cost column has something to show; set your model's."""

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "python",
    ]
)
_lock = threading.Lock()


@cache
def _index() -> tuple[Any, list[dict[str, str]]]:
    import bm25s

    from ragmetrics.collection import load_passages

    passages = load_passages()
    tokens = bm25s.tokenize([p["text"] for p in passages], stopwords="en", show_progress=False)
    model = bm25s.BM25()
    model.index(tokens, show_progress=False)
    return model, passages


def retrieve(question: str, k: int = TOP_K) -> list[tuple[dict[str, str], float]]:
    """The top-k passages for a question with their BM25 scores (empty when no word of it is indexed)."""
    import bm25s

    with _lock:  # bm25s' index is not documented as thread-safe; ragmetrics calls this from several threads
        model, passages = _index()
        query = bm25s.tokenize([question], stopwords="en", show_progress=False, return_ids=False)[0]
        known = [t for t in query if t in model.vocab_dict]
        if not known:
            return []
        scores = model.get_scores(known)
    order = sorted(range(len(passages)), key=lambda i: (-float(scores[i]), passages[i]["id"]))[:k]
    return [(passages[i], float(scores[i])) for i in order if scores[i] > 0]


def _content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP}


def extract_answer(question: str, contexts: list[str], max_sentences: int = 2) -> str:
    """The context sentences sharing the most content words with the question; a refusal when none does."""
    wanted = _content_words(question)
    scored = []
    for c, context in enumerate(contexts):
        for s, sentence in enumerate(_SENTENCE.split(context)):
            overlap = len(wanted & _content_words(sentence))
            if overlap:
                scored.append((-overlap, c, s, sentence.strip()))
    if not scored:
        return "I don't know: the retrieved passages do not answer this."
    best = sorted(scored)[:max_sentences]
    return " ".join(sentence for *_, sentence in sorted(best, key=lambda t: (t[1], t[2])))


def _usage(question: str, contexts: list[str], answer: str) -> dict[str, Any]:
    prompt = len(question.split()) + sum(len(c.split()) for c in contexts)
    completion = len(answer.split())
    return {
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
        "cost": round((prompt + completion) / 1000 * PRICE_PER_1K_TOKENS, 8),
    }


def answer(sample: dict[str, Any]) -> dict[str, Any]:
    """The pipeline: retrieve, then answer from what was retrieved."""
    hits = retrieve(sample["question"])
    contexts = [p["text"] for p, _ in hits]
    text = extract_answer(sample["question"], contexts)
    return {
        "answer": text,
        "contexts": contexts,
        "context_ids": [p["id"] for p, _ in hits],
        "context_scores": [score for _, score in hits],
        **_usage(sample["question"], contexts, text),
    }


def generate(inputs: dict[str, Any]) -> dict[str, Any]:
    """The generator alone: an answer from the contexts a run retrieved."""
    text = extract_answer(inputs["question"], list(inputs["contexts"]))
    return {"answer": text, **_usage(inputs["question"], list(inputs["contexts"]), text)}


def serve(port: int) -> None:
    """The pipeline behind HTTP: POST /answer and /generate take and return the same JSON as above."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            payload = json.loads(self.rfile.read(length))
            fn = {"/answer": answer, "/generate": generate}.get(self.path)
            if fn is None:
                self.send_error(404)
                return
            body = json.dumps(fn(payload)).encode("utf-8")
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=int, metavar="PORT", help="serve the pipeline on 127.0.0.1:PORT")
    parser.add_argument("question", nargs="?", default="What does the nonlocal statement do?")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
    else:
        print(json.dumps(answer({"id": "cli", "question": args.question}), indent=2)[:2000])
