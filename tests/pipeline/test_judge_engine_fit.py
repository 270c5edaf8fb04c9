"""A panel or a cascade where one judge is all that can run: refused with exit 2 naming the key, before
anything is judged, never run on another engine or as a single judge the config never asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmetrics.cli.main import main

from .conftest import ConfigWriter
from .helpers import qa_rows, write_jsonl

DEAD = "http://127.0.0.1:9/v1"  # nothing listens: a request sent would fail, not pass unseen


def _judge(kind: str) -> dict[str, Any]:
    judge: dict[str, Any] = {"backend": "openai", "base_url": DEAD, "metrics": ["faithfulness"],
                             "api_key_env": "RAGMETRICS_ENGINE_FIT_KEY"}  # fmt: skip
    if kind == "panel":
        judge["panel"] = {"members": [{"name": "a", "model": "m1"}, {"name": "b", "model": "m2"}]}
    else:
        judge.update(cascade=[{"name": "a", "model": "m1"}, {"name": "b", "model": "m2"}], labels="labels.csv",
                     confidence="samples")  # fmt: skip
    return judge


@pytest.fixture
def data(qa_dir: Path) -> Path:
    write_jsonl(qa_dir / "qa.jsonl", qa_rows())
    (qa_dir / "labels.csv").write_text("sample_id,metric,label\n", encoding="utf-8")
    return qa_dir


@pytest.mark.parametrize("kind", ["panel", "cascade"])
def test_ray_engine_with_a_panel_or_cascade_exits_2_naming_engine_kind(
    data: Path, write_config: ConfigWriter, kind: str, capsys: Any
) -> None:
    config = write_config(judge=_judge(kind), engine={"kind": "ray"})
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "engine.kind" in err and f"judge.{kind}" in err and "cannot run" in err

    local = write_config(judge=_judge(kind))  # the same night on the local engine, asked for Ray on the line
    assert main(["run", str(local), "--engine", "ray", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--engine ray" in err and "engine.kind" in err and f"judge.{kind}" in err


@pytest.mark.parametrize("kind", ["panel", "cascade"])
def test_testset_builder_refuses_a_panel_or_cascade_naming_the_key(
    data: Path, write_config: ConfigWriter, kind: str, capsys: Any
) -> None:
    config = write_config(judge=_judge(kind))
    code = main(["testset", "builtin", "-o", str(data / "ts"), "--config", str(config), "--size", "5"])
    assert code == 2
    err = capsys.readouterr().err
    assert f"judge.{kind}" in err and "one judge" in err
    assert not (data / "ts").exists()
