"""Review of a cascade's planned requests against what a night sends, in cache mixes the first tests left out.

The dry run's figure for a cascade is an upper bound, and the calibration's bound is checked against the
budget before anything is sent (`nightly.cascade_budget`): a bound below what the night sends lets a budget
through that the calibration then overruns.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.cli.main import main

from .conftest import ConfigWriter
from .test_cascade_night import _items, _setup


def _first_judge_bound(out: str) -> int:
    m = re.search(r"is asked about every item, its calibration items among them: ([\d,]+) requests", " ".join(out.split()))
    assert m is not None, out
    return int(m.group(1).replace(",", ""))


def test_simulated_annotators_are_counted_whatever_the_plain_judges_cache_holds(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """A team first ran the cascade with `samples` confidence (three seeds), then switched to simulated
    annotators (the same three seeds, each shown labelled examples). The annotators' prompts differ from the
    plain judge's, so none of their verdicts is cached: the bound must count them all, not read the plain
    judge's cached verdicts as theirs (which put the bound at 0 and let any budget through)."""
    small, _ = servers
    one = [{"name": "small", "model": "judge-model", "base_url": small.url}]
    config = _setup(qa_dir, write_config, servers, monkeypatch, confidence="samples", samples=3, cascade=one)
    assert main(["run", str(config), "--no-progress"]) == 0
    capsys.readouterr()
    small.reset_records()

    # under a budget its calibration cannot fit, the night is refused before anything is sent
    capped = _setup(qa_dir, write_config, servers, monkeypatch, confidence="simulated_annotators", samples=3,
                    shots=2, cascade=one, max_requests=100)  # fmt: skip
    assert main(["run", str(capped), "--no-progress"]) == 2
    assert "requests cannot cover the cascade's calibration" in " ".join(capsys.readouterr().err.split())
    assert small.records == []
    config = _setup(qa_dir, write_config, servers, monkeypatch, confidence="simulated_annotators", samples=3,
                    shots=2, cascade=one)  # fmt: skip
    assert main(["run", str(config), "--dry-run", "--no-progress"]) == 0
    bound = _first_judge_bound(capsys.readouterr().out)
    assert small.records == []
    assert main(["run", str(config), "--no-progress"]) == 0
    sent = len(_items(small, status=None))
    assert sent > 0 and bound >= sent


def test_embedding_requests_count_in_the_calibrations_bound_as_the_cap_counts_them(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """answer_similarity asks the judge's endpoint for embeddings, no chat: the cap counts those requests (they
    go through the judge's transport), so the calibration's bound must too. Before, the bound was 0 requests:
    a cap of 10 was let through, and the night stopped mid-calibration after sending 10."""
    small, big = servers
    config = _setup(qa_dir, write_config, servers, monkeypatch, metrics=["answer_similarity"], metric_files=[],
                    confidence="samples", samples=2, max_requests=10)  # fmt: skip
    lines = ["sample_id,metric,label"] + [f"c{i:02d},answer_similarity,{1 - i % 2}" for i in range(80)]
    (qa_dir / "labels.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["run", str(config), "--no-progress"]) == 2
    assert "requests cannot cover the cascade's calibration" in " ".join(capsys.readouterr().err.split())
    assert small.count() == 0 and big.count() == 0  # refused before anything was sent
