"""The local judge's numbers are printed with its agreement with other people's labels on public sets, per
metric with what it is good for, and never passed off as an LLM's."""

from __future__ import annotations

import re

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.registry import judge_metric_names
from ragmetrics.render.judge_note import LOCAL_GUIDANCE, WEAK_AUC, judge_line, judge_note, public_agreement
from ragmetrics.schema import JudgeInfo


def test_the_note_gives_the_public_auc_range_per_metric() -> None:
    note = judge_note(LocalJudge().info(), ["faithfulness", "ndcg@10", "context_relevancy"])
    assert note is not None and "not an LLM" in note and "docs/local_judge.md" in note
    lines = note.splitlines()
    assert len(lines) == 3  # the retrieval metric has no line
    figures = public_agreement()["auc"]["faithfulness"]
    low, high = min(figures.values()), max(figures.values())
    assert re.search(rf"faithfulness {low:.2f}-{high:.2f} on {len(figures)} sets\b", lines[1])
    assert LOCAL_GUIDANCE["faithfulness"] in lines[1]


def test_a_metric_weak_on_some_public_set_is_flagged_with_where() -> None:
    """Issue 47 (7): the measured weakness printed next to a metric whose public figure is below 0.65."""
    note = judge_note(LocalJudge().info(), ["answer_relevancy", "context_recall"])
    assert note is not None
    relevancy, recall = note.splitlines()[1:]
    figures = public_agreement()["auc"]
    weak = [s for s, auc in figures["answer_relevancy"].items() if auc < WEAK_AUC]
    assert relevancy.startswith("  ! answer_relevancy") and f"below {WEAK_AUC} on {len(weak)} of" in relevancy
    assert min(figures["context_recall"].values()) >= WEAK_AUC and not recall.startswith("  !")
    assert judge_line(JudgeInfo(backend="openai", model="m", base_url="http://127.0.0.1:8/v1")) == (
        "judge: m through an OpenAI-compatible endpoint at http://127.0.0.1:8/v1")


def test_the_figures_cover_every_local_metric_and_come_from_public_sets() -> None:
    data = public_agreement()
    assert "bench_judge_agreement.py" in data["measured_with"]
    measured = set(data["auc"])
    assert measured <= set(judge_metric_names())
    assert {"faithfulness", "context_relevancy", "passage_relevance", "answer_relevancy",
            "context_precision", "context_recall", "answer_correctness"} <= measured  # fmt: skip
    for metric, per_set in data["auc"].items():
        assert metric in LOCAL_GUIDANCE
        assert all(0.0 <= v <= 1.0 for v in per_set.values())


def test_no_note_for_an_llm_judge() -> None:
    assert judge_note(JudgeInfo(backend="openai", model="gpt-4o-mini")) is None
    assert judge_note(None) is None
