"""A cascade confident by log-probabilities on a rubric with a numeric scale (five levels scored 0 to 1), at two
scripted OpenAI-compatible servers (real `openai` client, the rating's token alternatives in the replies).

80 samples, people say yes to the even ones (a score >= 0.5 is a yes). The small judge is right on c00-c39 but
torn between two levels on the right side (P = 0.5 each: sure of its verdict, unsure of its level) and torn
across the threshold on the rest (P 0.55 for level 4, 0.45 for level 2, always "yes"); the big judge is sure
and right on c00-c67 and torn and wrong on c68-c79. With agreement 0.8 and delta 0.2, the small judge is
certified at its sure level: c40-c67 are decided by the big judge, c68-c79 abstained on.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main
from ragmetrics.judge.cascade.confidence import View, probability_of_positive, vote
from ragmetrics.judge.cascade.run import ABSTAINED
from ragmetrics.schema import JudgeDetail

from .conftest import ConfigWriter
from .helpers import qa_rows, report_of, write_jsonl

KEY_ENV = "RAGMETRICS_CASCADE_TEST_KEY"
N = 80
LEVELS = ["awful", "poor", "fair", "good", "great"]
QUALITY = {
    "name": "quality",
    "type": "rubric",
    "question": "How good is the answer?",
    "reads": ["question", "answer", "style"],
    "scale": {"type": "ordinal", "levels": [{"label": lab, "score": i / 4} for i, lab in enumerate(LEVELS)]},
}


def _detail(probabilities: dict[str, float], scores: dict[str, float] | None) -> JudgeDetail:
    item: dict[str, object] = {"rating": max(probabilities, key=probabilities.__getitem__), "reason": "scripted",
                               "probabilities": probabilities}  # fmt: skip
    if scores is not None:
        item["scores"] = scores
    return JudgeDetail(verdicts=[item])


def test_a_numeric_scales_confidence_is_the_probability_of_the_levels_on_the_verdicts_side() -> None:
    scores = {lab: i / 4 for i, lab in enumerate(LEVELS)}
    torn_within = View(0.875, _detail({"good": 0.5, "great": 0.5}, scores))
    assert probability_of_positive(torn_within, 0.5) == pytest.approx(1.0)
    voted = vote([torn_within], 0.5, need_probabilities=True)
    assert voted is not None and voted.positive and voted.confidence == pytest.approx(1.0) and voted.stated
    # "fair" scores 0.5: on the yes side, as the verdict's own score would be
    across = View(0.5 * 0.3 + 0.0, _detail({"fair": 0.3, "awful": 0.7}, scores))
    voted = vote([across], 0.5, need_probabilities=True)
    assert voted is not None and not voted.positive and voted.confidence == pytest.approx(0.7)
    # normalised over the levels the server gave a probability
    assert probability_of_positive(View(0.8, _detail({"great": 0.3, "poor": 0.1}, scores)), 0.5) == pytest.approx(0.75)
    # a score and a probability on different sides (unevenly scored levels): no stated confidence, never kept
    uneven = {"no": 0.0, "barely": 0.55, "yes": 1.0}
    split = View(0.33, _detail({"no": 0.4, "barely": 0.6}, uneven))
    assert probability_of_positive(split, 0.5) is None
    voted = vote([split], 0.5, need_probabilities=True)
    assert voted is not None and voted.confidence == 0.0 and not voted.stated
    # a yes/no verdict reads as before, with or without its scores recorded
    for recorded in (None, {"yes": 1.0, "no": 0.0}):
        voted = vote([View(0.2, _detail({"yes": 0.2, "no": 0.8}, recorded))], 0.5, need_probabilities=True)
        assert voted is not None and not voted.positive and voted.confidence == pytest.approx(0.8)


def _markers(i: int) -> str:
    right = 5 if i % 2 == 0 else 1
    beside = 4 if right == 5 else 2  # the other level on the same side
    if i < 40:
        small = f"[small@rating:{right}] [small@probs:{right}=0.5,{beside}=0.5]"
    else:
        small = "[small@rating:4] [small@probs:4=0.55,2=0.45]"
    if i < 68:
        across = 2 if right == 5 else 4
        big = f"[big@rating:{right}] [big@probs:{right}=0.95,{across}=0.05]"
    else:
        wrong, other = (4, 2) if right == 1 else (2, 4)
        big = f"[big@rating:{wrong}] [big@probs:{wrong}=0.55,{other}=0.45]"
    return f"[item:c{i:02d}] {small} {big}"


def _items(server: Any) -> list[str]:
    found = []
    for record in server.records:
        if record.prompt == "rubric:quality" and record.status == 200:
            m = re.search(r"\[item:(c\d\d)\]", record.user)
            assert m is not None
            found.append(m.group(1))
    return found


def test_a_cascade_on_an_ordinal_rubric_keeps_verdicts_sure_of_their_side(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-secret")
    template = qa_rows()
    rows = []
    for i in range(N):
        row = dict(template[i % len(template)])
        row.update(id=f"c{i:02d}", question=f"{row['question']} (case {i})", style=_markers(i))
        rows.append(row)
    write_jsonl(qa_dir / "qa.jsonl", rows)
    (qa_dir / "quality.yaml").write_text(yaml.safe_dump(QUALITY), encoding="utf-8")
    labels = ["sample_id,metric,label"] + [f"c{i:02d},quality,{1 - i % 2}" for i in range(N)]
    (qa_dir / "labels.csv").write_text("\n".join(labels) + "\n", encoding="utf-8")
    small, big = servers
    config = write_config(
        judge={"backend": "openai", "api_key_env": KEY_ENV, "cache_path": "cache/verdicts.sqlite", "timeout_s": 10,
               "max_retries": 1, "metric_files": ["quality.yaml"], "metrics": ["quality"],
               "cascade": [{"name": "small", "model": "judge-model", "base_url": small.url},
                           {"name": "big", "model": "judge-model", "base_url": big.url}],
               "agreement": 0.8, "delta": 0.2, "held_out": 0.25, "labels": "labels.csv"},
        retrieval={"metrics": ["ndcg@10"]},
    )  # fmt: skip
    assert main(["run", str(config), "--no-progress"]) == 0
    assert sorted(_items(small)) == [f"c{i:02d}" for i in range(N)]
    assert sorted(_items(big)) == [f"c{i:02d}" for i in range(40, N)]  # only what the small judge was unsure of
    result = next(r for r in report_of(qa_dir / "out").runs if r.name == "pipeline")
    summary = result.metadata.extra["cascade:quality"]
    assert summary["judges"][0]["threshold"] == pytest.approx(1.0)  # torn between two "yes" levels: sure of "yes"
    assert summary["judges"][1]["threshold"] == pytest.approx(0.95)
    assert (summary["decided"], summary["abstained"]) == (68, 12)
    abstained = sorted(n.query_id for n in result.not_applicable if n.reason.startswith(ABSTAINED))
    assert abstained == [f"c{i:02d}" for i in range(68, N)]
    scores = {q: s.get("quality") for q, s in result.per_query.items()}
    assert scores["c00"] == pytest.approx(0.875) and scores["c01"] == pytest.approx(0.125)  # probability-weighted
