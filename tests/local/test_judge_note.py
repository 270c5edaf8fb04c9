"""The local judge's numbers are printed with its measured out-of-domain agreement, never passed off as an LLM's."""

from __future__ import annotations

import re

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.backends.local_model import model_provenance
from ragmetrics.render.judge_note import judge_note
from ragmetrics.schema import JudgeInfo


def test_the_note_gives_the_held_out_auc_range_of_the_fitted_models() -> None:
    info = LocalJudge().info()
    note = judge_note(info)
    assert note is not None and "not an LLM" in note and "docs/local_judge.md" in note
    figures = model_provenance(info.embedding_model or "")["held_out_auc"]
    low = min(f["answer_relevancy"] for f in figures.values())
    assert re.search(rf"answer_relevancy {low:.2f}-\d\.\d\d", note)


def test_no_note_for_an_llm_judge() -> None:
    assert judge_note(JudgeInfo(backend="openai", model="gpt-4o-mini")) is None
    assert judge_note(None) is None
