"""The shipped collection is complete, consistent and loadable through the public containers."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ragmetrics import Qrels, RagSample, Run, collection

ID_PATTERN = re.compile(r"^(topic|module):[A-Za-z0-9_.\-]+#[1-9][0-9]*$")


@pytest.fixture(scope="module")
def passages() -> dict[str, dict[str, str]]:
    return {p["id"]: p for p in collection.load_passages()}


@pytest.fixture(scope="module")
def qa() -> list[dict[str, object]]:
    return collection.load_qa()


@pytest.fixture(scope="module")
def qrels() -> Qrels:
    return collection.load_qrels()


def test_sizes_and_ids(passages: dict[str, dict[str, str]], qa: list[dict[str, object]]) -> None:
    assert len(passages) >= 300
    assert len(qa) >= 60
    assert all(ID_PATTERN.match(pid) for pid in passages)
    assert len({row["id"] for row in qa}) == len(qa)
    assert {p["source"] for p in passages.values()} == {"topic", "module"}


def test_passages_are_paragraph_sized(passages: dict[str, dict[str, str]]) -> None:
    words = [len(p["text"].split()) for p in passages.values()]
    assert max(words) <= 250
    assert min(words) >= 20
    in_band = sum(80 <= w <= 250 for w in words)
    assert in_band / len(words) >= 0.9


def test_qrels_load_and_reference_real_passages(qrels: Qrels, passages: dict[str, dict[str, str]]) -> None:
    judged = qrels.to_dict()
    assert len(judged) == len(collection.load_questions())
    for qid, docs in judged.items():
        assert set(docs) <= set(passages), qid
        assert set(docs.values()) <= {0, 1, 2, 3}, qid
        assert max(docs.values()) >= 2, f"{qid} has no passage of grade >= 2"
        assert len(docs) >= 15, f"{qid}: pool too shallow"


def test_qa_rows_are_consistent(
    qa: list[dict[str, object]], qrels: Qrels, passages: dict[str, dict[str, str]]
) -> None:
    judged = qrels.to_dict()
    for row in qa:
        qid = str(row["id"])
        contexts, context_ids = row["contexts"], row["context_ids"]
        assert isinstance(contexts, list) and isinstance(context_ids, list)
        assert [passages[c]["text"] for c in context_ids] == contexts
        retrieved = row["retrieved_ids"]
        scores = row["retrieved_scores"]
        assert isinstance(retrieved, list) and isinstance(scores, list)
        assert context_ids == retrieved[: len(context_ids)]
        assert len(retrieved) == len(scores) == len(set(retrieved))
        assert scores == sorted(scores, reverse=True)
        assert set(retrieved) <= set(passages)
        positive = {d: g for d, g in judged[qid].items() if g > 0}
        assert dict(zip(row["relevant_ids"], row["relevant_grades"], strict=True)) == positive  # type: ignore[arg-type]
        assert row["answer_quality"] in {"good", "weak", "wrong", "noncommittal"}
        assert str(row["answer"]).strip() and str(row["reference"]).strip()


def test_answer_quality_mix(qa: list[dict[str, object]]) -> None:
    mix = Counter(str(row["answer_quality"]) for row in qa)
    n = len(qa)
    assert 0.15 <= mix["wrong"] / n <= 0.3
    assert 0.07 <= mix["noncommittal"] / n <= 0.15
    assert mix["weak"] >= 5
    assert mix["good"] >= n / 2


def test_samples_and_questions(qa: list[dict[str, object]]) -> None:
    samples = collection.load_samples()
    assert all(isinstance(s, RagSample) for s in samples)
    assert [s.id for s in samples] == [row["id"] for row in qa]
    assert all(s.answer and s.reference and len(s.contexts) == 3 for s in samples)
    assert collection.load_questions() == [(str(row["id"]), str(row["question"])) for row in qa]


def test_pipeline_run_matches_qa(qa: list[dict[str, object]]) -> None:
    run = collection.load_pipeline_run()
    assert isinstance(run, Run) and run.name == "pipeline"
    ranked = run.to_dict()
    for row in qa:
        order = sorted(ranked[str(row["id"])].items(), key=lambda kv: (-kv[1], kv[0]))
        assert [d for d, _ in order][:3] == row["context_ids"]


def test_loaders_return_fresh_copies() -> None:
    first = collection.load_passages()
    first[0]["text"] = "changed"
    assert collection.load_passages()[0]["text"] != "changed"
    rows = collection.load_qa()
    rows[0]["contexts"].clear()  # type: ignore[union-attr]
    assert collection.load_qa()[0]["contexts"]


def test_stored_embeddings_cover_every_passage(passages: dict[str, dict[str, str]]) -> None:
    model, vectors = collection.load_passage_embeddings()
    assert model
    digests = {hashlib.sha256(p["text"].encode("utf-8")).hexdigest() for p in passages.values()}
    assert set(vectors) == digests
    norms = np.linalg.norm(np.stack(list(vectors.values())), axis=1)
    assert np.allclose(norms, 1.0, atol=5e-3)


def test_stored_embeddings_match_the_embedder(passages: dict[str, dict[str, str]]) -> None:
    from ragmetrics.embeddings.minilm import MiniLMEmbedder

    model, vectors = collection.load_passage_embeddings()
    embedder = MiniLMEmbedder()
    assert model == embedder.name
    sample = [passages[pid]["text"] for pid in sorted(passages)[::97]]
    fresh = embedder.encode(sample)
    stored = np.stack([vectors[hashlib.sha256(t.encode("utf-8")).hexdigest()] for t in sample])
    assert np.min(np.sum(fresh * stored, axis=1)) >= 0.999


def test_data_folder_stays_small() -> None:
    folder = Path(collection.passages_path()).parent
    total = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    assert total < 1.6 * 1024 * 1024


def test_files_are_valid_jsonl() -> None:
    for path in (collection.passages_path(), collection.qa_path(), collection.questions_path()):
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            assert isinstance(json.loads(line), dict)


def test_builtin_dataset_carries_every_judgment() -> None:
    # `dataset: {builtin: pydocs}` must score like `load_qrels()`: the grade-0 judgments matter to bpref.
    from ragmetrics import evaluate
    from ragmetrics.nightly.config import DatasetConfig
    from ragmetrics.nightly.dataset import load_dataset

    dataset = load_dataset(DatasetConfig(builtin="pydocs"), progress=False)
    assert dataset.qrels().to_dict() == collection.load_qrels().to_dict()
    assert any(0 in grades.values() for grades in dataset.relevance.values())
    run = collection.load_pipeline_run()
    via_config = evaluate(dataset.qrels(), run, ["bpref", "ndcg@10"]).aggregate
    assert via_config == evaluate(collection.load_qrels(), run, ["bpref", "ndcg@10"]).aggregate
    limited = load_dataset(DatasetConfig(builtin="pydocs", limit=5), progress=False)
    assert list(limited.relevance) == limited.query_ids == [s.id for s in dataset.samples[:5]]
