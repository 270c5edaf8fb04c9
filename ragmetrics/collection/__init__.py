"""The built-in evaluation collection "pydocs": Python's own documentation, judged questions, RAG answers.

Shipped data files (built once by tools/build_collection.py on CPython 3.11; see docs/collection.md):

- ``passages.jsonl``: {id, title, source, text}, paragraph-aligned passages of the standard library's help
  topics (``pydoc_data``) and module docstrings, PSF licence
- ``questions.jsonl``: {id, question, reference}
- ``qrels.txt``: graded judgments 0-3 in TREC format, every judged (pooled) passage including grade 0
- ``passage_embeddings.npz``: MiniLM vectors of the passages (float16, keyed by sha256 of the text), so the
  reranker does not re-embed 500 long passages on every run
- ``qa.jsonl``: per question the contexts and answer of a simulated RAG system (BM25 top-3), its run
  (retrieved_ids, retrieved_scores), the relevant passages with grades, and ``answer_quality``

Nothing here downloads or regenerates anything: the files are read from the installed package.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics._jsonl import read_jsonl
from ragmetrics.errors import InputError

if TYPE_CHECKING:
    from ragmetrics.judge.base import RagSample
    from ragmetrics.retrieval.qrels import Qrels
    from ragmetrics.retrieval.run import Run

NAME = "pydocs"

__all__ = [
    "NAME",
    "load_passage_embeddings",
    "load_passages",
    "load_pipeline_run",
    "load_qa",
    "load_qrels",
    "load_questions",
    "load_samples",
    "passage_embeddings_path",
    "passages_path",
    "qa_path",
    "qrels_path",
    "questions_path",
]


def _data_file(name: str) -> Path:
    path = Path(str(resources.files("ragmetrics.collection").joinpath("data", name)))
    if not path.is_file():
        raise InputError(
            f"the built-in collection file is missing; reinstall ragmetrics ({path})", source=name
        )
    return path


def passages_path() -> Path:
    return _data_file("passages.jsonl")


def qa_path() -> Path:
    return _data_file("qa.jsonl")


def passage_embeddings_path() -> Path:
    return _data_file("passage_embeddings.npz")


def qrels_path() -> Path:
    return _data_file("qrels.txt")


def questions_path() -> Path:
    return _data_file("questions.jsonl")


@cache
def _passages() -> tuple[dict[str, Any], ...]:
    return tuple(read_jsonl(passages_path()))


@cache
def _qa() -> tuple[dict[str, Any], ...]:
    return tuple(read_jsonl(qa_path()))


def load_passages() -> list[dict[str, str]]:
    """Every passage as {id, title, source, text}, in a fixed order (fresh copies: callers may mutate them)."""
    return [dict(p) for p in _passages()]


def load_questions() -> list[tuple[str, str]]:
    """(question id, question) pairs in id order: the queries for `ragmetrics.retrievers.build_run`."""
    return [(str(row["id"]), str(row["question"])) for row in _qa()]


def load_qa() -> list[dict[str, Any]]:
    """The rows of qa.jsonl as dicts (fresh copies), including the documentation-only `answer_quality`."""
    return [json.loads(json.dumps(row)) for row in _qa()]


def load_passage_embeddings() -> tuple[str, dict[str, NDArray[np.float32]]]:
    """(embedder name, {sha256 of passage text: unit vector}) as computed at build time."""
    path = passage_embeddings_path()
    with np.load(path, allow_pickle=False) as data:
        model = str(data["model"])
        digests = [str(d) for d in data["sha256"]]
        vectors = np.asarray(data["vectors"], dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(digests):
        raise InputError(f"vectors have shape {vectors.shape} for {len(digests)} passages", source=str(path))
    return model, dict(zip(digests, vectors, strict=True))


def load_qrels() -> Qrels:
    """The graded judgments (0-3) of every pooled passage, as `Qrels`."""
    from ragmetrics.retrieval.qrels import Qrels

    return Qrels.from_trec(qrels_path())


def load_pipeline_run(name: str = "pipeline") -> Run:
    """The simulated RAG system's own ranking (BM25, top 20) stored in qa.jsonl, as a `Run`."""
    from ragmetrics.retrieval.run import Run

    ranking: dict[str, dict[str, float]] = {}
    for row in _qa():
        ranking[str(row["id"])] = dict(zip(row["retrieved_ids"], row["retrieved_scores"], strict=True))
    return Run.from_dict(ranking, name=name)


def load_samples() -> list[RagSample]:
    """One `RagSample` per question: question, contexts (with ids), the RAG answer and the reference."""
    from ragmetrics.judge.base import RagSample

    return [
        RagSample(
            id=str(row["id"]),
            question=row["question"],
            contexts=list(row["contexts"]),
            context_ids=list(row["context_ids"]),
            answer=row["answer"],
            reference=row["reference"],
        )
        for row in _qa()
    ]
