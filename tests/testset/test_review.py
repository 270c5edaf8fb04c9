"""People in the loop: label a test set's questions and grades on the labelling page, then apply the labels."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest

from ragmetrics.cli import main
from ragmetrics.errors import InputError
from ragmetrics.labeling.server import TOKEN_HEADER, LabelServer
from ragmetrics.labeling.testset_session import TestsetLabelSession
from ragmetrics.testset.output import read_grades, read_items, read_manifest
from ragmetrics.testset.review import review_testset

from .conftest import corpus_rows, write_jsonl


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_rows())
    out = tmp_path / "ts"
    assert (
        main(
            [
                "testset",
                str(corpus),
                "-o",
                str(out),
                "--size",
                "6",
                "--no-judge-checks",
                "--kinds",
                "factoid=1",
                "--pool",
                "bm25",
            ]
        )
        == 0
    )
    return out


def _post(server: LabelServer, body: dict[str, object]) -> dict[str, object]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request(
        "POST", "/api/label", body=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", TOKEN_HEADER: server.token},
    )
    response = connection.getresponse()
    data = json.loads(response.read())
    connection.close()
    assert response.status == 200, data
    return data


def test_labelling_questions_and_grades_then_the_review(folder: Path) -> None:
    labels = folder / "labels.jsonl"
    questions = TestsetLabelSession(folder, "question", labels, target=6)
    assert questions.question.shows == ("question", "contexts", "reference")
    first = questions.item(0)
    assert first["texts"]["contexts"] and "kept by the build" not in json.dumps(first)
    server = LabelServer(questions).start()
    try:
        verdict = _post(server, {"position": 0, "value": 0.0})  # rejected
        assert "kept by the build" in str(verdict["reason"])
        for position in range(1, len(questions.order)):
            _post(server, {"position": position, "value": 1.0})
    finally:
        server.stop()
    rejected_id = questions.order[0]

    grades = TestsetLabelSession(folder, "qrels", labels)
    origins = {g.origin for g in read_grades(folder)}
    assert origins == {"source", "judge"}
    source_pairs = [
        k
        for k in grades.order
        if k.split("\t")[1] in next(i for i in read_items(folder) if i.id == k.split("\t")[0]).source_ids
    ]
    judge_pairs = [k for k in grades.order if k not in source_pairs]
    for key in source_pairs[:3]:
        grades.label(grades.order.index(key), 1.0)  # people agree: the source answers it
    for key in judge_pairs[:3]:
        grades.label(grades.order.index(key), 0.0)  # and say these pooled chunks are not relevant

    review = review_testset(folder, labels)
    assert review["questions_labelled"] == 6 and review["questions_rejected"] == 1
    assert review["share_rejected"] == pytest.approx(1 / 6, abs=1e-3)
    assert review["qrels_labelled"] == 6
    assert review["agreement_with_source"]["pairs"] == min(3, len(source_pairs))
    items = read_items(folder)
    assert rejected_id not in {i.id for i in items} and len(items) == 5
    rejected = [
        json.loads(line) for line in (folder / "rejected.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [r["id"] for r in rejected] == [rejected_id] and rejected[0]["label"] == 0.0
    person = [g for g in read_grades(folder) if g.origin == "person"]
    assert person and all(g.query_id != rejected_id for g in read_grades(folder))
    assert {g.grade for g in person if (g.query_id + "\t" + g.doc_id) in judge_pairs[:3]} <= {0}
    manifest = read_manifest(folder)
    assert manifest["review"] == review and manifest["questions"] == 5
    assert "Review by people" in (folder / "testset.html").read_text(encoding="utf-8")


def test_a_test_set_is_labelled_by_question_or_qrels_only(folder: Path) -> None:
    with pytest.raises(InputError, match="'question' or 'qrels'"):
        TestsetLabelSession(folder, "faithfulness", folder / "labels.jsonl")
