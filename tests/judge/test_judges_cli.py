"""`ragmetrics judges` at scripted OpenAI-compatible servers simulating judges of known accuracy and price."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ragmetrics.cli.main import main
from ragmetrics.judge.settings import JudgeSettings

from .conftest import KEY_ENV
from .loopback import LoopbackServer

METRIC = "context_sufficiency"


@pytest.fixture
def servers() -> Iterator[tuple[LoopbackServer, LoopbackServer]]:
    a, b = LoopbackServer().start(), LoopbackServer().start()
    # truth: big and mid are equally good (mid ten times cheaper), small is far worse and cheaper still
    a.persona("big", 0.9, shared=0.85)
    a.persona("mid", 0.9, shared=0.85)
    b.persona("small", 0.7, shared=0.85)
    yield a, b
    a.stop()
    b.stop()


def _write_task(folder: Path, a: LoopbackServer, b: LoopbackServer, n: int = 100) -> tuple[Path, Path, Path]:
    rng = random.Random(11)
    rows, labels = [], ["sample_id,metric,label"]
    for i in range(n):
        truth = rng.random() < 0.5
        rows.append({"id": f"q{i}", "question": f"question {i} [z:{rng.gauss(0, 1):.3f}]", "answer": "an answer",
                     "contexts": ["a context" + (" [enough]" if truth else "")]})  # fmt: skip
        labels.append(f"q{i},{METRIC},{int(truth)}")
    qa, lab, cands = folder / "qa.jsonl", folder / "labels.csv", folder / "candidates.yaml"
    qa.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    lab.write_text("\n".join(labels) + "\n", encoding="utf-8")
    cands.write_text(
        yaml.safe_dump({
            "judge": {"cache_path": str(folder / "verdicts.sqlite"), "api_key_env": KEY_ENV},
            "candidates": [
                {"name": "big", "base_url": a.url, "model": "big",
                 "price_per_million_tokens": {"prompt": 10.0, "completion": 30.0}},
                {"name": "mid", "base_url": a.url, "model": "mid",
                 "price_per_million_tokens": {"prompt": 1.0, "completion": 3.0}},
                {"name": "small", "base_url": b.url, "model": "small",
                 "price_per_million_tokens": {"prompt": 0.1, "completion": 0.3}},
                {"name": "poll", "panel": ["big", "mid", "small"], "combine": "majority"},
                {"name": "learned", "panel": ["big", "mid", "small"], "combine": "learned"},
                {"name": "ds", "panel": ["big", "mid", "small"], "combine": "dawid_skene"},
            ],
        }),
        encoding="utf-8",
    )  # fmt: skip
    return qa, lab, cands


def _answered(server: LoopbackServer) -> Counter[str | None]:
    return Counter(r.model for r in server.records if r.path == "/v1/chat/completions" and r.status == 200)


def test_judges_names_the_cheapest_judge_not_worse_than_the_best_and_a_rerun_asks_nothing(
    servers: tuple[LoopbackServer, LoopbackServer], tmp_path: Path, fake_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = servers
    qa, labels, cands = _write_task(tmp_path, a, b)
    a.inject("rate_limit", times=3)
    b.inject("server_error", times=2)
    args = ["judges", str(labels), "--samples", str(qa), "--candidates", str(cands), "--resamples", "500"]
    assert main([*args, "-o", str(tmp_path / "out")]) == 0
    # each single judge asked each labelled unit once (faults retried); panels asked nothing of their own
    assert _answered(a) == {"big": 100, "mid": 100} and _answered(b) == {"small": 100}
    assert a.count(status=429) == 3 and b.count(status=500) == 2
    out = capsys.readouterr().out
    numbers = json.loads((tmp_path / "out" / "judges.json").read_text(encoding="utf-8"))
    assert numbers["chosen"] == "mid", out
    rows = {r["name"]: r for r in numbers["candidates"]}
    assert rows["small"]["significantly_worse"] and not rows["small"]["not_worse"]
    assert rows["mid"]["cost_usd"] == pytest.approx(rows["big"]["cost_usd"] / 10, rel=0.01)  # verdicts' lengths vary
    assert rows["poll"]["cost_usd"] == pytest.approx(sum(rows[n]["cost_usd"] for n in ("big", "mid", "small")))
    assert all(r["kappa"] is not None and r["auc"] is not None for r in rows.values())
    assert (tmp_path / "out" / "cost_vs_agreement.png").stat().st_size > 1000
    snippet = yaml.safe_load((tmp_path / "out" / "chosen_judge.yaml").read_text(encoding="utf-8"))
    chosen = JudgeSettings.model_validate(snippet["judge"])
    assert chosen.model == "mid" and chosen.base_url == a.url
    assert "| mid (chosen) |" in out

    a.reset_records()
    b.reset_records()
    assert main([*args, "-o", str(tmp_path / "again")]) == 0
    assert a.count() == 0 and b.count() == 0
    again = json.loads((tmp_path / "again" / "judges.json").read_text(encoding="utf-8"))
    assert again["chosen"] == "mid"
    assert [r["cost_usd"] for r in again["candidates"]] == [r["cost_usd"] for r in numbers["candidates"]]


def _error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda c: c["candidates"][1].update(backend="llama"), r"candidates\.1\.backend: Input should be 'openai' or 'local'"),
        (lambda c: c["candidates"][3].update(panel=["big", "medium"]), r"candidates\.3\.panel\.1: 'medium' is not a single judge"),
        (lambda c: c["candidates"][0].pop("price_per_million_tokens"), r"candidates\.0\.price_per_million_tokens: 'big' has no prices"),
        (lambda c: c["candidates"][4].update(combine="vote"), r"candidates\.4\.combine"),
        (lambda c: c["candidates"].append({"name": "mid", "model": "x"}), r"candidates\.6\.name: 'mid' is named twice"),
        (lambda c: c["candidates"][1]["price_per_million_tokens"].update(prompt=-1.0),
         r"candidates\.1\.price_per_million_tokens: prices must be finite and >= 0; check \['prompt'\]"),
        (lambda c: c["candidates"][2]["price_per_million_tokens"].update(input=1.0),
         r"candidates\.2\.price_per_million_tokens: unknown price keys \['input'\]"),
        (lambda c: c["judge"].update(modle="x"), r"candidates\.yaml: judge\.modle: Extra inputs are not permitted$"),
        (lambda c: c["judge"].update(timeout_s=-1), r"judge\.timeout_s: Input should be greater than 0$"),
    ],
)  # fmt: skip
def test_bad_candidates_exit_2_naming_the_key(
    edit: object, expected: str, tmp_path: Path, fake_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    a = b = LoopbackServer()  # never started: no request may be sent
    qa, labels, cands = _write_task(tmp_path, a, b, n=10)
    data = yaml.safe_load(cands.read_text(encoding="utf-8"))
    edit(data)  # type: ignore[operator]
    cands.write_text(yaml.safe_dump(data), encoding="utf-8")
    err = _error(["judges", str(labels), "--samples", str(qa), "--candidates", str(cands), "-o", str(tmp_path / "o")],
                 capsys)  # fmt: skip
    assert str(cands) in err
    import re

    assert re.search(expected, err.strip(), re.M), err


def test_bad_options_and_labels_exit_2(tmp_path: Path, fake_key: str, capsys: pytest.CaptureFixture[str]) -> None:
    a = b = LoopbackServer()
    qa, labels, cands = _write_task(tmp_path, a, b, n=10)
    base = ["judges", str(labels), "--samples", str(qa), "--candidates", str(cands), "-o", str(tmp_path / "o")]
    assert "--margin must be in (0, 1)" in _error([*base, "--margin", "1.5"], capsys)
    labels.write_text(labels.read_text(encoding="utf-8") + f"nobody,{METRIC},1\n", encoding="utf-8")
    err = _error(base, capsys)
    assert "unknown sample id 'nobody'" in err and "line 12" in err


def test_a_night_config_with_an_unknown_panel_backend_exits_2_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "night.yaml"
    config.write_text(
        yaml.safe_dump({
            "dataset": {"path": "qa.jsonl"},
            "judge": {"metrics": [METRIC], "panel": [{"model": "a", "base_url": "http://127.0.0.1:9/v1"},
                                                    {"backend": "llamacpp"}]},
        }),
        encoding="utf-8",
    )  # fmt: skip
    err = _error(["run", str(config)], capsys)
    assert "judge.panel[1].backend" in err and "'openai' or 'local'" in err


def test_every_candidate_failing_exits_2_saying_why(
    tmp_path: Path, fake_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing is written when no unit was scored by every candidate, so the error itself says what failed."""
    a = b = LoopbackServer()
    qa, labels, cands = _write_task(tmp_path, a, b, n=4)
    data = yaml.safe_load(cands.read_text(encoding="utf-8"))
    data["judge"].update(max_retries=0, timeout_s=2)
    for c in data["candidates"]:
        if "panel" not in c:
            c["base_url"] = "http://127.0.0.1:9/v1"  # nothing listens
    cands.write_text(yaml.safe_dump(data), encoding="utf-8")
    err = _error(["judges", str(labels), "--samples", str(qa), "--candidates", str(cands), "-o", str(tmp_path / "o")],
                 capsys)  # fmt: skip
    assert "no labelled unit was scored by every candidate" in err
    assert "12 failed verdicts, the first: q" in err and f"{METRIC}: connection" in err
    assert not (tmp_path / "o").exists()
