"""Pooled grades land on the documents that were judged, whatever chunks the corpus skips: empty and blank
chunks at several positions, each reference retriever as the pool. Every pooled (question, document) grade
equals the grade the pool's judge gives that document's own text, and no empty chunk is graded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics import collection
from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.formulas import GRADE_SCALE
from ragmetrics.qrels_fill import METRIC
from ragmetrics.testset.build import build_testset
from ragmetrics.testset.pooling import judge_to_scale


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    rows = [json.loads(line) for line in Path(collection.passages_path()).read_text(encoding="utf-8").splitlines()][:70]
    for position, text in ((0, ""), (23, "   "), (51, ""), (len(rows), "\n")):
        rows.insert(position, {"id": f"empty-{position}#summary0", "text": text})
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, {r["id"]: f"{r['title']}\n{r['text']}" if r.get("title") else r["text"] for r in rows}


@pytest.mark.parametrize("pool", ["bm25", "dense", "bm25_embedding_rerank"])
def test_pooled_grades_are_the_judged_documents(corpus: tuple[Path, dict[str, str]], pool: str) -> None:
    path, texts = corpus
    testset = build_testset(str(path), size=6, seed=4, generator="offline", judge_checks=False, pool=[pool])
    questions = {item.id: item.question for item in testset.items}
    pooled = [g for g in testset.grades if g.origin == "judge"]
    assert pooled, "the pool graded nothing"
    assert not [g for g in pooled if not texts[g.doc_id].strip()]  # an empty chunk is never graded
    samples = [{"id": f"{g.query_id}|{g.doc_id}", "question": questions[g.query_id], "contexts": [texts[g.doc_id]]}
               for g in pooled]  # fmt: skip
    again = evaluate_rag(samples, [METRIC], LocalJudge(), progress=False)
    for g in pooled:
        value = again.per_query[f"{g.query_id}|{g.doc_id}"][METRIC]
        assert value is not None
        assert judge_to_scale(round(value * GRADE_SCALE), testset.settings.source_grade) == g.grade, (g, value)
