"""A night judged by a panel (`judge.panel`) at the loopback server simulating judges of known quality: each
member asked each unit once, weights learned from labels (cross-fitted) or Dawid-Skene applied to the whole night,
the members' agreement and share of the bill in the report, a rerun asking nothing."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main

N = 60
KEY_ENV = "RAGMETRICS_PANEL_NIGHT_KEY"
METRIC = "context_sufficiency"


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-panel-night")


def _data(tmp_path: Path) -> dict[str, int]:
    rng = random.Random(5)
    truth = {f"q{i:03d}": int(rng.random() < 0.4) for i in range(N)}
    rows = [{"id": q, "question": f"What does passage {q} say? [z:{rng.gauss(0, 1):.3f}]"} for q in truth]
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    passages = [{"id": f"p{q}", "text": f"Passage {q}." + (" [enough]" if t else "")} for q, t in truth.items()]
    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 p{q} 1 1.0 run\n" for q in truth), encoding="utf-8")
    (tmp_path / "labels.csv").write_text(
        "sample_id,metric,label\n" + "".join(f"{q},{METRIC},{t}\n" for q, t in truth.items()), encoding="utf-8"
    )
    return truth


def _config(tmp_path: Path, loopback: Any, out: str, **panel: Any) -> Path:
    members = [
        {"name": "a", "model": "judge-a", "price_per_million_tokens": {"prompt": 1.0, "completion": 1.0}},
        {"name": "b", "model": "judge-b", "price_per_million_tokens": {"prompt": 3.0, "completion": 3.0}},
        {"name": "lenient", "model": "judge-c", "price_per_million_tokens": {"prompt": 0.5, "completion": 0.5}},
    ]
    data = {
        "dataset": {"path": str(tmp_path / "qa.jsonl"), "passages": str(tmp_path / "passages.jsonl")},
        "retrieval": {"metrics": ["mrr"]},
        "runs": [{"source": "file", "path": str(tmp_path / "run.trec"), "name": "run"}],
        "judge": {"metrics": [METRIC], "base_url": loopback.url, "api_key_env": KEY_ENV, "contexts_top_k": 1,
                  "cache_path": str(tmp_path / "cache" / "v.sqlite"), "panel": {"members": members, **panel}},
        "output": {"dir": str(tmp_path / out), "formats": ["json", "md"], "history": False},
    }  # fmt: skip
    path = tmp_path / f"{out}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _report(tmp_path: Path, out: str) -> dict[str, Any]:
    return dict(json.loads((tmp_path / out / "latest" / "report.json").read_text(encoding="utf-8")))


def _answered(loopback: Any) -> Counter[str]:
    return Counter(r.model for r in loopback.records if r.path == "/v1/chat/completions" and r.status == 200)


def _accuracy(scores: dict[str, float], truth: dict[str, int]) -> float:
    return sum((scores[q] >= 0.5) == bool(t) for q, t in truth.items()) / len(truth)


def test_a_learned_panel_night_beats_the_mean_of_a_lenient_panel_and_reports_its_members(
    tmp_path: Path, loopback: Any, key: None
) -> None:
    truth = _data(tmp_path)
    loopback.persona("judge-a", 0.9)
    loopback.persona("judge-b", 0.9, yes_bias=0.9)  # two lenient judges (one family, say): they outvote a
    loopback.persona("judge-c", 0.9, yes_bias=0.9)
    assert main(["run", str(_config(tmp_path, loopback, "mean", combine="mean")), "--no-progress"]) == 0
    assert _answered(loopback) == {"judge-a": N, "judge-b": N, "judge-c": N}
    first = _report(tmp_path, "mean")
    mean = first["runs"][0]["per_query"]
    work = first["metadata"]["nightly"]["work"]
    assert work["estimate"]["judge_calls"] == work["actual"]["judge_calls"] == 3 * N  # every member estimated

    loopback.reset_records()
    config = _config(tmp_path, loopback, "learned", combine="learned", labels=str(tmp_path / "labels.csv"))
    assert main(["run", str(config), "--no-progress"]) == 0
    assert loopback.count() == 0  # every member's verdicts came from the cache
    report = _report(tmp_path, "learned")
    learned = report["runs"][0]["per_query"]
    as_mean = {q: v[METRIC] for q, v in mean.items()}
    as_learned = {q: v[METRIC] for q, v in learned.items()}
    assert _accuracy(as_learned, truth) > _accuracy(as_mean, truth) + 0.2

    judge = report["metadata"]["nightly"]["judge"]
    assert judge["backend"] == "panel"
    panel = judge["settings"]["panel"]
    assert [m["name"] for m in panel["members"]] == ["a", "b", "lenient"]
    entry = panel["agreement"][METRIC]
    assert entry["items"] == N and -1 <= entry["judges_alpha"] < 1
    markdown = (tmp_path / "learned" / "latest" / "report.md").read_text(encoding="utf-8")
    assert "a panel of 3 judges (a, b, lenient), combined by learned" in markdown and "of the bill" in markdown
    assert "agreement among the judges (Krippendorff alpha)" in markdown


def test_a_dawid_skene_night_needs_no_labels(tmp_path: Path, loopback: Any, key: None) -> None:
    truth = _data(tmp_path)
    for model in ("judge-a", "judge-b", "judge-c"):
        loopback.persona(model, 0.8)
    assert main(["run", str(_config(tmp_path, loopback, "ds", combine="dawid_skene")), "--no-progress"]) == 0
    report = _report(tmp_path, "ds")
    scores = {q: v[METRIC] for q, v in report["runs"][0]["per_query"].items()}
    assert any(0 < s < 1 for s in scores.values())  # posteriors, not votes
    assert _accuracy(scores, truth) >= 0.8
    estimated = report["metadata"]["nightly"]["judge"]["settings"]["panel"]["agreement"][METRIC]
    assert set(estimated["dawid_skene_accuracy"]) == {"a", "b", "lenient"}


def test_a_learned_panel_with_too_few_labels_exits_2_naming_the_key(
    tmp_path: Path, loopback: Any, key: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _data(tmp_path)
    few = tmp_path / "few.csv"
    few.write_text(f"sample_id,metric,label\nq000,{METRIC},1\nq001,{METRIC},0\n", encoding="utf-8")
    config = _config(tmp_path, loopback, "few", combine="learned", labels=str(few))
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "judge.panel.labels" in err and "at least 5" in err and "found 2" in err


def test_an_adaptive_night_combines_unit_by_unit_only(tmp_path: Path, loopback: Any, key: None) -> None:
    from ragmetrics.errors import ConfigError
    from ragmetrics.nightly.config import load_config

    _data(tmp_path)
    config = _config(tmp_path, loopback, "adaptive", combine="dawid_skene")
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["judge"]["adaptive"] = {"batch_size": 10}
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"judge\.panel\.combine: an adaptive night combines per unit"):
        load_config(config)


def test_the_pairwise_judge_is_not_a_panels(tmp_path: Path) -> None:
    from ragmetrics.errors import ConfigError
    from ragmetrics.nightly.config import parse_config

    panel = [{"model": "a", "base_url": "http://127.0.0.1:9/v1"}, {"model": "b", "base_url": "http://127.0.0.1:9/v1"}]
    data = {"dataset": {"path": "qa.jsonl"}, "judge": {"metrics": [METRIC], "panel": panel}, "pairwise": {"judge": True}}
    with pytest.raises(ConfigError, match=r"pairwise\.judge: one LLM says which answer is better"):
        parse_config(data, base_dir=tmp_path, source="c.yaml")
