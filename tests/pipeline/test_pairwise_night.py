"""Side-by-side preferences in a night: two pipeline runs, people's preferences on 50 questions and the LLM
pairwise judge through a scripted OpenAI-compatible server on 127.0.0.1, reported beside the metric's paired
test; a judge that prefers whichever answer it reads first is reported as position-biased, its swapped pairs
ties."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main

N = 50
PIPES = '''
def old(sample):
    n = sample["question"].split()[-1].strip("?")
    return {"answer": f"Something about item {n}.", "contexts": [f"Item {n} is described here."]}


def new(sample):
    n = int(sample["question"].split()[-1].strip("?"))
    better = " [better]" if n % 10 < 7 else ""
    useful = " [useful]" if n % 10 < 7 else ""
    return {"answer": f"Item {n} is described here{better}.", "contexts": [f"Item {n} is described here{useful}."]}
'''


def _night(tmp_path: Path, loopback: Any, out: str, marker: str, preferences: Path | None) -> dict[str, Any]:
    rows = [{"id": f"q{i:02d}", "question": f"What is item{marker} {i}?", "reference": f"Item {i} is described."}
            for i in range(N)]  # fmt: skip
    (tmp_path / f"{out}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    pairwise: dict[str, Any] = {"judge": True, "pairs": [["old", "new"]], "metric": "context_precision"}
    if preferences is not None:
        pairwise["preferences"] = str(preferences)
    config = {
        "dataset": {"path": str(tmp_path / f"{out}.jsonl")},
        "runs": [{"source": "pipeline", "name": "old", "target": "pipes:old"},
                 {"source": "pipeline", "name": "new", "target": "pipes:new"}],
        "judge": {"metrics": ["context_precision"], "base_url": loopback.url, "model": "m",
                  "api_key_env": "RAGMETRICS_PAIRWISE_KEY", "cache_path": None},
        "pairwise": pairwise,
        "output": {"dir": str(tmp_path / out), "formats": ["json", "html"], "history": False},
    }  # fmt: skip
    (tmp_path / f"{out}.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", str(tmp_path / f"{out}.yaml"), "--no-progress"]) == 0
    return dict(json.loads((tmp_path / out / "latest" / "report.json").read_text(encoding="utf-8")))


def _people(tmp_path: Path) -> Path:
    rng = random.Random(7)
    rows = []
    for i in range(N):
        for labeller in ("ann", "bob"):
            new_left = rng.random() < 0.5
            prefers_new = i % 10 < 7 if rng.random() > 0.1 else i % 10 >= 7  # people err now and then
            choice = ("left" if new_left else "right") if prefers_new else ("right" if new_left else "left")
            if i % 10 == 9:
                choice = "tie"
            left, right = ("new", "old") if new_left else ("old", "new")
            rows.append({"sample_id": f"q{i:02d}", "left": left, "right": right, "choice": choice,
                         "labeller": labeller})  # fmt: skip
    path = tmp_path / "preferences.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_people_and_the_pairwise_judge_beside_the_metric(
    tmp_path: Path, loopback: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("RAGMETRICS_PAIRWISE_KEY", "sk-pairwise")
    (tmp_path / "pipes.py").write_text(textwrap.dedent(PIPES), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    report = _night(tmp_path, loopback, "fair", "", _people(tmp_path))
    people, judge = report["metadata"]["pairwise"]
    assert people["source"] == "people" and people["a"] == "old" and people["b"] == "new"
    assert people["questions"] == N and people["judgements"] == 2 * N
    assert people["wins_b"] > 3 * people["wins_a"] and people["p_value"] < 0.001 and people["verdict"] == "new preferred"
    assert people["log_odds_b"]["low"] > 0 and not people["position_biased"]
    assert people["metric"] == "context_precision" and people["metric_diff"] == pytest.approx(0.7)
    assert judge["source"] == "judge" and judge["wins_b"] == 35 and judge["wins_a"] == 0 and judge["ties"] == 15
    assert judge["judgements"] == 2 * N and not judge["position_biased"]
    assert judge["agreement_with_people"]["estimate"] > 0.7
    out = capsys.readouterr().out
    assert "new vs old, people:" in out and "pairwise judge (both orders)" in out
    page = (tmp_path / "fair" / "latest" / "report.html").read_text(encoding="utf-8")
    assert "Side by side: which answer is better" in page
    # a judge that always prefers the answer it reads first: every question asked both ways is a tie
    biased = _night(tmp_path, loopback, "biased", " [bias:first]", None)
    (judge,) = biased["metadata"]["pairwise"]
    assert judge["ties"] == N and judge["wins_a"] == judge["wins_b"] == 0
    assert judge["position_left"]["estimate"] == 1.0 and judge["position_biased"]
    assert judge["verdict"] == "no significant preference"
    assert "(position-biased)" in capsys.readouterr().out
