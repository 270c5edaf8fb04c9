"""`ragmetrics judges` on metrics a night resolves by name alone: a shipped conversation rubric
(`knowledge_retention`) and a metric an installed package offers (entry points), named only in the labels or in
the candidates file's `judge.metrics`, with no definition in the file. Before, the first was "not a judge metric"
(or `judge.metrics` an unknown key of the judge settings): the candidates file resolved only what it defined.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main
from ragmetrics.nightly.candidate_metrics import load_own_metrics
from ragmetrics.nightly.config import JudgeConfig, with_metric_files

from .conftest import KEY_ENV
from .loopback import LoopbackServer

N = 30
METRIC = "knowledge_retention"  # a shipped rubric: forgets 0, partly 0.5, retains 1 (rated 1..3)
SCORES = {1: 0.0, 2: 0.5, 3: 1.0}


@pytest.fixture
def servers() -> Iterator[tuple[LoopbackServer, LoopbackServer]]:
    good, poor = LoopbackServer().start(), LoopbackServer().start()
    good.state.persona, poor.state.persona = "good", "poor"
    yield good, poor
    good.stop()
    poor.stop()


def _write(folder: Path, good: LoopbackServer, poor: LoopbackServer, judge: dict[str, Any]) -> list[str]:
    """The good judge rates every sample as people do; the poor one says 'forgets' for a third of 'retains'."""
    rows, labels = [], ["sample_id,metric,label"]
    for i in range(N):
        truth = 1 + i % 3
        poor_says = 1 if truth == 3 and i % 2 == 0 else truth
        rows.append({"id": f"k{i}", "question": f"question {i} [good@rating:{truth}] [poor@rating:{poor_says}]",
                     "answer": f"answer {i}", "contexts": ["a context"]})  # fmt: skip
        labels.append(f"k{i},{METRIC},{SCORES[truth]}")
    (folder / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "labels.csv").write_text("\n".join(labels) + "\n", encoding="utf-8")
    shared = {"cache_path": str(folder / "verdicts.sqlite"), "api_key_env": KEY_ENV, **judge}
    (folder / "candidates.yaml").write_text(yaml.safe_dump({
        "judge": shared,
        "candidates": [
            {"name": "good", "base_url": good.url, "model": "m", "price_per_million_tokens": {"prompt": 10.0, "completion": 30.0}},
            {"name": "poor", "base_url": poor.url, "model": "m", "price_per_million_tokens": {"prompt": 1.0, "completion": 3.0}},
        ],
    }), encoding="utf-8")  # fmt: skip
    return ["judges", str(folder / "labels.csv"), "--samples", str(folder / "qa.jsonl"),
            "--candidates", str(folder / "candidates.yaml"), "--resamples", "300", "--no-plot"]  # fmt: skip


@pytest.mark.parametrize("named_in", ["the labels", "judge.metrics"])
def test_a_shipped_conversation_rubric_named_by_the_labels_is_judged_as_a_night_judges_it(
    servers: tuple[LoopbackServer, LoopbackServer], tmp_path: Path, fake_key: str,
    capsys: pytest.CaptureFixture[str], named_in: str,
) -> None:  # fmt: skip
    good, poor = servers
    args = _write(tmp_path, good, poor, {"metrics": [METRIC]} if named_in == "judge.metrics" else {})
    assert main([*args, "-o", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    asked = [sum(1 for r in s.records if r.prompt == f"rubric:{METRIC}" and r.status == 200) for s in servers]
    assert asked == [N, N]  # each unit once per judge, through the shipped rubric's prompt
    numbers = json.loads((tmp_path / "out" / "judges.json").read_text(encoding="utf-8"))
    rows = {r["name"]: r for r in numbers["candidates"]}
    assert rows["good"]["accuracy"]["value"] == 1.0 and numbers["chosen"] == "good"
    assert rows["poor"]["accuracy"]["value"] == pytest.approx(
        1 - 5 / N
    )  # 'forgets' for 'retains' on k2, k8, ...
    # the snippet lists it as a night does, defining nothing: the night loads the shipped rubric by its name
    snippet = yaml.safe_load((tmp_path / "out" / "chosen_judge.yaml").read_text(encoding="utf-8"))["judge"]
    assert (
        snippet["metrics"] == [METRIC] and "metric_files" not in snippet and "custom_metrics" not in snippet
    )
    night, _ = with_metric_files({"judge": snippet}, tmp_path / "elsewhere", "night.yaml")
    assert [m.name for m in JudgeConfig.model_validate(night["judge"]).custom_metrics] == [METRIC]


ENTRY_MODULE = """
import ragmetrics

@ragmetrics.python_metric(range=(0, 1), requires=["answer"])
def shouting(sample):
    return float("!" in sample.answer)
"""


def test_an_installed_packages_metric_resolves_as_in_a_night(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "teamshout").mkdir(parents=True)
    (site / "teamshout" / "__init__.py").write_text(ENTRY_MODULE, encoding="utf-8")
    dist = site / "teamshout-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: teamshout\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[ragmetrics.metrics]\nshouting = teamshout:shouting\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(site))
    data = {"judge": {"cache_path": "v.sqlite"}, "candidates": [{"name": "a"}]}
    rest, own = load_own_metrics(data, tmp_path / "candidates.yaml", ["shouting", "faithfulness", "no_such"])
    assert [(m.name, m.by_name) for m in own] == [
        ("shouting", True)
    ]  # built-ins and unknown names left alone
    assert rest == data
