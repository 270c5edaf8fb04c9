"""`ragmetrics judges` on a team's own rubric: metric files named in the candidates file as a night names them,
judged at scripted OpenAI-compatible servers (real `openai` client), requests counted at the servers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main
from ragmetrics.nightly.config import JudgeConfig, with_metric_files

from .conftest import KEY_ENV
from .loopback import LoopbackServer

N = 40
LEVELS = [{"label": "rude", "score": 0.0}, {"label": "flat", "score": 0.5}, {"label": "kind", "score": 1.0}]
TONE = {
    "name": "tone",
    "type": "rubric",
    "question": "Is the answer's tone kind to the person asking?",
    "reads": ["question", "answer"],
    "scale": {"type": "ordinal", "levels": LEVELS},
}


@pytest.fixture
def servers() -> Iterator[tuple[LoopbackServer, LoopbackServer]]:
    good, poor = LoopbackServer().start(), LoopbackServer().start()
    good.state.persona, poor.state.persona = "good", "poor"
    yield good, poor
    good.stop()
    poor.stop()


def _truth(i: int) -> int:
    """The people's level (1..3) of sample i."""
    return 1 + i % 3


def _write(folder: Path, good: LoopbackServer, poor: LoopbackServer, *, rubric: dict[str, Any] = TONE,
           judge: dict[str, Any] | None = None) -> tuple[Path, Path, Path]:  # fmt: skip
    """The task: the good judge rates every sample as people do, the poor one rates a third of them 'rude'
    against people's 'kind' (and is ten times cheaper). Candidates and rubric live in a folder of their own,
    the rubric in a subfolder named relative to the candidates file."""
    config = folder / "config"
    (config / "rubrics").mkdir(parents=True, exist_ok=True)
    (config / "rubrics" / "tone.yaml").write_text(yaml.safe_dump(rubric), encoding="utf-8")
    rows, labels = [], ["sample_id,metric,label"]
    for i in range(N):
        truth = _truth(i)
        poor_says = 1 if truth == 3 and i % 2 == 0 else truth
        rows.append({"id": f"t{i}", "question": f"question {i} [good@rating:{truth}] [poor@rating:{poor_says}]",
                     "answer": f"answer {i}", "contexts": ["a context"], "channel": f"channel {i % 4}"})  # fmt: skip
        labels.append(f"t{i},tone,{LEVELS[truth - 1]['score']}")
    qa, lab, cands = folder / "qa.jsonl", folder / "labels.csv", config / "candidates.yaml"
    qa.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    lab.write_text("\n".join(labels) + "\n", encoding="utf-8")
    shared = {"cache_path": str(folder / "verdicts.sqlite"), "api_key_env": KEY_ENV,
              "metric_files": ["rubrics/tone.yaml"], **(judge or {})}  # fmt: skip
    cands.write_text(
        yaml.safe_dump({
            "judge": shared,
            "candidates": [
                {"name": "good", "base_url": good.url, "model": "m",
                 "price_per_million_tokens": {"prompt": 10.0, "completion": 30.0}},
                {"name": "poor", "base_url": poor.url, "model": "m",
                 "price_per_million_tokens": {"prompt": 1.0, "completion": 3.0}},
            ],
        }),
        encoding="utf-8",
    )  # fmt: skip
    return qa, lab, cands


def _asked(server: LoopbackServer) -> int:
    return sum(1 for r in server.records if r.prompt == "rubric:tone" and r.status == 200)


def test_a_rubric_of_the_teams_own_is_judged_cached_by_its_version_and_written_into_the_snippet(
    servers: tuple[LoopbackServer, LoopbackServer], tmp_path: Path, fake_key: str,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    good, poor = servers
    qa, labels, cands = _write(tmp_path, good, poor)
    monkeypatch.chdir(tmp_path)  # the rubric's path is read from the candidates file's folder, not from here
    args = ["judges", str(labels), "--samples", str(qa), "--candidates", str(cands), "--resamples", "300", "--no-plot"]
    assert main([*args, "-o", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    assert (_asked(good), _asked(poor)) == (N, N)  # each unit once per judge
    numbers = json.loads((tmp_path / "out" / "judges.json").read_text(encoding="utf-8"))
    rows = {r["name"]: r for r in numbers["candidates"]}
    assert rows["good"]["accuracy"]["value"] == 1.0  # its levels are the people's, cut at 0.5 as theirs are
    assert rows["poor"]["accuracy"]["value"] == pytest.approx(1 - 7 / N)  # 'rude' for 'kind' on t2, t8, ...
    assert numbers["chosen"] == "good"
    snippet = yaml.safe_load((tmp_path / "out" / "chosen_judge.yaml").read_text(encoding="utf-8"))["judge"]
    assert snippet["metrics"] == ["tone"]
    assert snippet["metric_files"] == [str((cands.parent / "rubrics" / "tone.yaml").resolve())]
    # the snippet is a night's judge section: it loads there, wherever the night's config is
    night, _ = with_metric_files({"judge": snippet}, tmp_path / "elsewhere", "night.yaml")
    assert [m.name for m in JudgeConfig.model_validate(night["judge"]).custom_metrics] == ["tone"]

    good.reset_records()
    poor.reset_records()
    assert main([*args, "-o", str(tmp_path / "again")]) == 0
    assert good.count() == 0 and poor.count() == 0  # every verdict from the cache

    # the same name, another criterion: its verdicts are another rubric's, asked again
    edited = {**TONE, "question": "Is the answer's tone formal?"}
    (cands.parent / "rubrics" / "tone.yaml").write_text(yaml.safe_dump(edited), encoding="utf-8")
    assert main([*args, "-o", str(tmp_path / "edited")]) == 0
    assert (_asked(good), _asked(poor)) == (N, N)
    (cands.parent / "rubrics" / "tone.yaml").write_text(yaml.safe_dump(TONE), encoding="utf-8")
    good.reset_records()
    poor.reset_records()
    assert main([*args, "-o", str(tmp_path / "back")]) == 0
    assert good.count() == 0 and poor.count() == 0  # the first rubric's verdicts are still its own


def test_an_inline_rubric_is_judged_and_written_inline(
    servers: tuple[LoopbackServer, LoopbackServer], tmp_path: Path, fake_key: str
) -> None:
    good, poor = servers
    reading = {**TONE, "reads": ["question", "answer", "channel"]}  # a column of the samples file too
    qa, labels, cands = _write(tmp_path, good, poor, judge={"metric_files": [], "custom_metrics": [reading]})
    args = ["judges", str(labels), "--samples", str(qa), "--candidates", str(cands), "--resamples", "300", "--no-plot"]
    assert main([*args, "-o", str(tmp_path / "out")]) == 0
    assert (_asked(good), _asked(poor)) == (N, N)
    asked = [r.user for r in good.records if r.prompt == "rubric:tone"]
    assert all(re.search(r"<channel>\s*channel \d\s*</channel>", user) for user in asked), asked[0]
    snippet = yaml.safe_load((tmp_path / "out" / "chosen_judge.yaml").read_text(encoding="utf-8"))["judge"]
    assert snippet["custom_metrics"][0]["question"] == TONE["question"] and "metric_files" not in snippet


def _break_levels(levels: list[dict[str, Any]]) -> dict[str, Any]:
    return {**TONE, "scale": {"type": "ordinal", "levels": levels}}


Edit = Callable[[Path, Path, Path], list[str]]
"""(candidates file, labels file, rubric file) -> extra CLI arguments, after changing the files."""


def _edit_candidates(change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(cands: Path, labels: Path, rubric: Path) -> list[str]:
        data = yaml.safe_load(cands.read_text(encoding="utf-8"))
        change(data)
        cands.write_text(yaml.safe_dump(data), encoding="utf-8")
        return []

    return edit


def _append_label(row: str) -> Edit:
    def edit(cands: Path, labels: Path, rubric: Path) -> list[str]:
        labels.write_text(labels.read_text(encoding="utf-8") + row + "\n", encoding="utf-8")
        return []

    return edit


def _rubric(definition: dict[str, Any]) -> Edit:
    def edit(cands: Path, labels: Path, rubric: Path) -> list[str]:
        rubric.write_text(yaml.safe_dump(definition), encoding="utf-8")
        return []

    return edit


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (_edit_candidates(lambda c: c["judge"].update(metric_files=["rubrics/tones.yaml"])),
         r"candidates\.yaml: judge\.metric_files\[0\]: .*rubrics/tones\.yaml: metric file not found"),
        (_append_label("t1,tonne,1"), r"labels\.csv, line 42, field 'metric': 'tonne' is not a judge metric; did you mean 'tone'\?"),
        (lambda c, lab, r: ["--metric", "tonne"], r"field '--metric': 'tonne' is not a judge metric"),
        (_rubric(_break_levels([{"label": "low", "score": 1}, {"label": "mid", "score": 3}, {"label": "high", "score": 5}])),
         r"rubrics/tone\.yaml: scale: metric 'tone' scores 1 to 5, but labels \(and --threshold\) are on \[0, 1\]"),
        (_append_label("t40,tone,0.3"), r"labels\.csv, line 42, field 'label': label 0\.3 of rubric metric 'tone' .* is none of its "
                                        r"levels' scores \(rude = 0, flat = 0\.5, kind = 1\)"),
        (_rubric(_break_levels([{"label": "low", "score": 1}, {"label": "mid", "score": 0}])),
         r"rubrics/tone\.yaml: scale: level scores must increase"),
        (_edit_candidates(lambda c: c["judge"].update(custom_metrics=[{**TONE, "name": "faithfulness"}])),
         r"candidates\.yaml: judge\.custom_metrics\[0\]: 'faithfulness' is the name of a built-in metric"),
        (_edit_candidates(lambda c: c["judge"].update(custom_metrics=[TONE])),
         r"candidates\.yaml: judge\.custom_metrics\[1\]: metric 'tone' is defined twice"),
        (_edit_candidates(lambda c: c["candidates"].append({"name": "local", "backend": "local"})),
         r"candidates\.yaml: candidates\.2\.backend: 'local' is the local judge, which cannot score rubric metric 'tone'"),
    ],
)  # fmt: skip
def test_bad_own_metrics_exit_2_naming_the_file_line_and_field(
    edit: Edit, expected: str, tmp_path: Path, fake_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    server = LoopbackServer()  # never started: nothing may be asked before the input is checked
    qa, labels, cands = _write(tmp_path, server, server)
    extra = edit(cands, labels, cands.parent / "rubrics" / "tone.yaml")
    if "t40" in labels.read_text(encoding="utf-8"):
        with qa.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"id": "t40", "question": "q", "answer": "a", "contexts": ["c"]}) + "\n")
    code = main(["judges", str(labels), "--samples", str(qa), "--candidates", str(cands), "-o", str(tmp_path / "o"),
                 *extra])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert re.search(expected, err), err
    assert not (tmp_path / "o").exists()
