"""A panel under a request cap (`judge.max_requests`, an adaptive night's `max_calls`): one cap over its members.

A panel is one judge of the night: its cap counts every member's requests together (`judge.openai.budget`).
Before, each member had the whole cap to itself, so three members could send three times it. Counted at the
loopback server, whatever each request's answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main

from .test_panel_night import KEY_ENV, METRIC, N, _config, _data, _report


def test_a_panels_members_share_the_judges_request_cap(
    tmp_path: Path, loopback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-panel-night")
    _data(tmp_path)
    for model in ("judge-a", "judge-b", "judge-c"):
        loopback.persona(model, 0.9)
    path = _config(tmp_path, loopback, "capped", combine="mean")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["judge"]["max_requests"] = 30  # three members, 60 units: 180 requests uncapped
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert main(["run", str(path), "--no-progress"]) in (0, 1, 3)
    assert loopback.count(path="/v1/chat/completions") == 30
    run = next(r for r in _report(tmp_path, "capped")["runs"] if r["name"] == "run")
    causes = {f["cause"] for f in run["failures"] if f["metric"] == METRIC}
    assert causes == {"budget_reached"}  # the units past the cap are recorded as failed, with the cause
    assert len(run["per_query"]) == N
