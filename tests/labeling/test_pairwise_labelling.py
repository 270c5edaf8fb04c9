"""The side-by-side labelling session over HTTP: run names hidden until the answer, sides drawn per question
and written down, the file the night's `pairwise.preferences` reads."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.labeling.pairwise_session import PairwiseSession
from ragmetrics.labeling.server import TOKEN_HEADER, LabelServer
from ragmetrics.nightly.judged_samples import FILENAME, judged_samples_jsonl
from ragmetrics.schema import ComparisonSettings, Report, RunMetadata, RunResult
from ragmetrics.trust.preferences import load_preferences


def _report(folder: Path, n: int = 12) -> None:
    folder.mkdir(parents=True)
    samples = {run: [RagSample(id=f"q{i}", question=f"Question {i}?", contexts=[f"Fact {i}."],
                               answer=f"{run} says {i}.") for i in range(n)] for run in ("old", "new")}  # fmt: skip
    runs = [RunResult(name=run, per_query={f"q{i}": {"faithfulness": 0.5} for i in range(n)},
                      metadata=RunMetadata(kind="judge", metrics=["faithfulness"], num_queries=n))
            for run in samples]  # fmt: skip
    report = Report(runs=runs, metrics=["faithfulness"], settings=ComparisonSettings(test="fisher", correction="holm"))
    (folder / "report.json").write_text(report.model_dump_json(), encoding="utf-8")
    (folder / FILENAME).write_text(judged_samples_jsonl(samples), encoding="utf-8")


def _call(url: str, token: str | None = None, body: dict[str, Any] | None = None) -> Any:
    headers = {"Content-Type": "application/json", TOKEN_HEADER: token or ""} if body is not None else {}
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), headers=headers,
                                     method="POST" if body is not None else "GET")  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_side_by_side_choices_are_written_with_their_sides(tmp_path: Path) -> None:
    _report(tmp_path / "report")
    session = PairwiseSession(tmp_path / "report", ("old", "new"), tmp_path / "preferences.jsonl", seed=3)
    assert {session.sides[q][0] for q in session.order} == {"old", "new"}  # sides drawn per question
    server = LabelServer(session).start()
    try:
        status = _call(server.url + "api/status")
        assert status["metric"] == "pairwise" and [c["key"] for c in status["choices"]] == ["1", "2", "t"]
        for n in range(len(session.order)):
            position = _call(server.url + "api/next?after=-1")["position"]
            item = _call(server.url + f"api/item/{position}")
            texts = item["texts"]
            assert set(texts) == {"question", "sources", "left answer", "right answer"}
            assert "was" not in json.dumps(item) and "score" not in item  # which side is which: only after
            # this person prefers new, wherever it is shown; every fourth is a tie
            left_is_new = texts["left answer"].startswith("new")
            value = 0.5 if n % 4 == 3 else 1.0 if left_is_new else 0.0
            answer = _call(server.url + "api/label", status["token"], {"position": position, "value": value})
            left, right = session.sides[item["sample_id"]]
            assert answer["reason"].startswith(f"left was {left}, right was {right}")
        assert _call(server.url + "api/next?after=-1")["position"] is None
    finally:
        server.stop()
    prefs = load_preferences(tmp_path / "preferences.jsonl")
    assert len(prefs) == 12 and {p.winner for p in prefs} == {"new", None}
    assert sum(1 for p in prefs if p.choice == "tie") == 3
    assert {p.left for p in prefs} == {"old", "new"}


def test_bad_pairwise_runs_are_input_errors(tmp_path: Path) -> None:
    _report(tmp_path / "report")
    with pytest.raises(InputError, match="run 'mid' has no answers"):
        PairwiseSession(tmp_path / "report", ("old", "mid"), tmp_path / "p.jsonl")
    with pytest.raises(InputError, match="two different runs"):
        PairwiseSession(tmp_path / "report", ("old", "old"), tmp_path / "p.jsonl")
