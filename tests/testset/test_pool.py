"""Completing the qrels from a pool: judge grades mapped onto the scale, origins kept, unanswerable checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmetrics import Run
from ragmetrics.errors import InputError
from ragmetrics.judge.backends.llm import LLMJudge
from ragmetrics.testset import build_testset
from ragmetrics.testset.build import add_pool
from ragmetrics.testset.pooling import judge_to_scale

from .conftest import corpus_rows, judge_settings
from .test_llm import FAST


def test_judge_grades_map_onto_the_scale() -> None:
    assert [judge_to_scale(g, 2) for g in (0, 1, 2, 3)] == [0, 0, 1, 2]
    assert [judge_to_scale(g, 3) for g in (0, 1, 2, 3)] == [0, 0, 2, 3]  # round half to even: 1.5 -> 2


def graded_rows() -> list[dict[str, Any]]:
    """Volcano chunks graded 3, 2 and 1 by the scripted judge; every other chunk 3 (so checks pass)."""
    marks = {"volcano-1": "[g3]", "volcano-2": "[g2]", "volcano-3": "[g1]"}
    return [{**r, "text": f"{r['text']} {marks.get(r['id'], '[g3]')}"} for r in corpus_rows()]


def test_pooled_chunks_get_judge_grades_with_their_origin_and_reason(loopback: Any, tmp_path: Path) -> None:
    judge = LLMJudge(judge_settings(loopback, tmp_path / "v.sqlite"), retry=FAST)
    ts = build_testset(graded_rows(), size=6, seed=0, judge=judge, kinds={"factoid": 1.0}, judge_checks=False)
    item = ts.items[0]
    pool = Run.from_dict(
        {item.id: {"volcano-1": 3.0, "volcano-2": 2.0, "volcano-3": 1.0, item.source_ids[0]: 0.5}},
        name="probe",
    )
    add_pool(ts, [pool], judge)
    grades = {(g.query_id, g.doc_id): g for g in ts.grades}
    source = grades[(item.id, item.source_ids[0])]
    assert source.origin == "source" and source.grade == 2  # a judge grade never overwrites it
    for doc, expected in (("volcano-1", 2), ("volcano-2", 1), ("volcano-3", 0)):
        if doc in item.source_ids:
            continue
        grade = grades[(item.id, doc)]
        assert grade.origin == "judge" and grade.grade == expected and grade.reason
    assert ts.pool is not None and ts.pool["runs"] == ["probe"] and ts.pool["depth"] == 10
    assert ts.origin_counts()["judge"] >= 1
    assert item.relevant_ids is not None and item.relevant_ids[0] in item.source_ids


def test_unanswerable_question_a_pooled_chunk_answers_is_dropped(loopback: Any, tmp_path: Path) -> None:
    judge = LLMJudge(judge_settings(loopback, tmp_path / "v.sqlite"), retry=FAST)
    ts = build_testset(
        graded_rows(), size=4, seed=0, judge=judge, kinds={"unanswerable": 1.0}, judge_checks=False
    )
    assert ts.items and all(not i.answerable for i in ts.items)
    target = ts.items[0]
    add_pool(ts, [Run.from_dict({target.id: {"glacier-1": 1.0}}, name="probe")], judge)
    assert target.id not in {i.id for i in ts.items}
    assert ts.filter_counts()["answered_anyway"] == 1
    assert not any(g.query_id == target.id for g in ts.grades)


def test_reference_retrievers_pool_offline_with_the_local_judge() -> None:
    ts = build_testset("builtin", size=8, seed=2, pool=["bm25"])
    assert ts.pool is not None and ts.pool["runs"] == ["pool:bm25"] and ts.pool["graded"] > 0
    judged = [g for g in ts.grades if g.origin == "judge"]
    assert judged and all(0 <= g.grade <= ts.settings.source_grade for g in judged)


def test_a_run_over_other_questions_is_refused() -> None:
    ts = build_testset("builtin", size=4, seed=2, judge_checks=False)
    with pytest.raises(InputError, match="has none of the test set's question ids"):
        add_pool(ts, [Run.from_dict({"q01": {"x": 1.0}}, name="old")], None)  # type: ignore[arg-type]
