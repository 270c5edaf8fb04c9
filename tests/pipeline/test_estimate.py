"""`ragmetrics run --dry-run`: calls, tokens, cost and time before a night, checked against what the night then
spent, on an LLM judge through the loopback server, the team's own pipeline and generator, and the local judge."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from .conftest import ConfigWriter
from .helpers import report_of, run_cli
from .test_own_pipeline import TEAM_MODULE

PRICES = {"prompt": 2.5, "completion": 10.0, "embedding": 0.02}


def _judge(loopback: Any, **extra: Any) -> dict[str, Any]:
    return {
        "metrics": [
            "context_precision",
            "context_recall",
            "context_relevancy",
            "faithfulness",
            "answer_relevancy",
        ],
        "base_url": loopback.url,
        "api_key_env": "RAGMETRICS_ESTIMATE_KEY",
        "model": "test-model",
        "embedding_model": "test-embedding",
        "cache_path": "cache/verdicts.sqlite",
        "timeout_s": 5,
        "price_per_million_tokens": PRICES,
        **extra,
    }


def _estimated(out: str, label: str) -> int:
    match = re.search(rf"^  {label}\s+([\d,]+)", out, flags=re.M)
    assert match is not None, out
    return int(match.group(1).replace(",", ""))


@pytest.mark.parametrize("mode", ["per_sample", "per_chunk"])
def test_the_dry_run_counts_the_llm_judges_requests(
    qa_dir: Path,
    write_config: ConfigWriter,
    loopback: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: str,
) -> None:
    monkeypatch.setenv("RAGMETRICS_ESTIMATE_KEY", "sk-estimate-test")
    config = write_config(
        runs=[
            {"source": "dataset", "name": "pipeline"},
            {"source": "file", "path": "weaker.trec", "name": "weaker"},
        ],
        judge=_judge(loopback, context_precision_mode=mode),
    )
    code, out, err = run_cli([str(config), "--dry-run"], capsys)
    assert code == 0, err
    assert loopback.count() == 0  # nothing asked
    assert not (qa_dir / "out").exists() and not (qa_dir / "cache").exists()  # nothing written
    estimated = _estimated(out, "judge requests")
    assert "verdicts already cached" in out and "$" in out and "assumed 2 s per call" in out

    code, out, err = run_cli([str(config)], capsys)
    assert code == 0, err
    made = loopback.count(status=200)
    assert made > 0
    assert abs(estimated - made) <= 0.2 * made, (estimated, made)
    report = report_of(qa_dir / "out")
    assert report.metadata.nightly is not None and report.metadata.nightly.work is not None
    work = report.metadata.nightly.work
    assert work.actual is not None and work.actual.judge_calls == made
    assert (
        work.estimate.judge_calls + work.estimate.embedding_calls == estimated
    )  # the same plan in the night
    assert work.actual.cost_usd is not None and work.estimate.cost_usd is not None
    assert abs(work.estimate.prompt_tokens - work.actual.prompt_tokens) <= 0.5 * work.actual.prompt_tokens
    markdown = (qa_dir / "out" / "latest" / "report.md").read_text()
    assert "## Cost and time" in markdown and "| judge requests |" in markdown
    page = (qa_dir / "out" / "latest" / "report.html").read_text()
    assert (
        "Cost and time: estimated before judging, and spent" in page and "<h2 id='power'>Power</h2>" in page
    )
    assert "## Power" in markdown and "weaker vs pipeline" in markdown

    # Everything is cached now: the next dry run expects no request, timed by tonight's rate.
    loopback.reset_records()
    code, out, _ = run_cli([str(config), "--dry-run"], capsys)
    assert code == 0 and _estimated(out, "judge requests") == 0
    assert "seconds per call from the last night" in out
    assert loopback.count() == 0


def test_a_dry_run_counts_the_pipeline_and_generator_calls_it_does_not_make(
    qa_dir: Path,
    write_config: ConfigWriter,
    loopback: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("RAGMETRICS_ESTIMATE_KEY", "sk-estimate-test")
    # Its own module name: a module imported by an earlier test in this process would be reused.
    (qa_dir / "team_rag_estimate.py").write_text(textwrap.dedent(TEAM_MODULE), encoding="utf-8")
    config = write_config(
        runs=[
            {"source": "pipeline", "name": "team", "target": "team_rag_estimate:answer", "concurrency": 4},
            {"source": "file", "path": "weaker.trec", "name": "weaker"},
        ],
        generator={"target": "team_rag_estimate:generate", "top_k": 2},
        judge=_judge(loopback, metrics=["faithfulness", "context_precision"]),
    )
    code, out, err = run_cli([str(config), "--dry-run"], capsys)
    assert code == 0, err
    assert not (qa_dir / "calls.log").exists()  # the team's code was imported, never called
    pipeline, generator = _estimated(out, "pipeline calls"), _estimated(out, "generator calls")
    assert (pipeline, generator) == (16, 16)  # every question once; the generator answers the file run
    estimated = _estimated(out, "judge requests")
    assert "placeholders of the same shape" in out

    code, _, err = run_cli([str(config)], capsys)
    assert code == 0, err
    made = loopback.count(status=200)
    assert abs(estimated - made) <= 0.2 * made, (estimated, made)
    calls = (qa_dir / "calls.log").read_text().split()
    assert calls.count("pipeline") == pipeline and calls.count("generator") == generator

    code, out, _ = run_cli([str(config), "--dry-run"], capsys)
    assert code == 0
    assert (_estimated(out, "pipeline calls"), _estimated(out, "generator calls")) == (0, 0)
    assert _estimated(out, "judge requests") == 0


def test_the_local_judge_estimate_is_no_requests_and_its_time_measured_or_the_last_nights(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(judge={"backend": "local", "metrics": ["context_recall", "faithfulness"]})
    code, out, err = run_cli([str(config), "--dry-run"], capsys)
    assert code == 0, err
    assert _estimated(out, "judge requests") == 0
    # no earlier night: the local judge's time is measured now on a few units of each metric, not left out
    assert "32 scores" in out and "time               ~" in out and "(judge " in out
    assert "seconds per verdict measured now" in out and not (qa_dir / "out").exists()
    code, _, err = run_cli([str(config)], capsys)
    assert code == 0, err
    work = report_of(qa_dir / "out").metadata.nightly.work  # type: ignore[union-attr]
    assert work is not None and work.actual is not None
    assert work.actual.judge_calls == work.estimate.judge_calls == 0
    code, out, _ = run_cli([str(config), "--dry-run"], capsys)
    assert "time               ~" in out and "(judge " in out


def test_a_dry_run_of_a_bad_config_exits_2(qa_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = qa_dir / "bad.yaml"
    bad.write_text("dataset: {path: absent.jsonl}\njudge: {backend: local, metrics: [faithfulness]}\n")
    code, _, err = run_cli([str(bad), "--dry-run"], capsys)
    assert code == 2 and "absent.jsonl" in err
