"""Issue 42's must-show: the example pipeline over the built-in collection, instrumented with the OpenTelemetry
SDK and the OpenInference conventions, exported to OTLP JSON; `ragmetrics run` on the traces gives the same
retrieval and answer scores (and tokens and cost) as `ragmetrics run` calling that pipeline as a target."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs opentelemetry-sdk (the 'traces' extra)")
pytest.importorskip(
    "openinference.semconv", reason="needs openinference-semantic-conventions ('traces' extra)"
)
pytest.importorskip("bm25s", reason="the example pipeline needs bm25s (the 'examples' extra)")

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = 16
RETRIEVAL = ["ndcg@10", "recall@10", "mrr", "map"]
JUDGED = ["context_precision", "context_recall", "faithfulness", "answer_relevancy"]


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("traced_pipeline", ROOT / "examples" / "traced_pipeline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _config(tmp: Path, name: str, dataset: dict[str, Any], runs: list[dict[str, Any]] | None) -> Path:
    config: dict[str, Any] = {
        "name": name,
        "dataset": {"builtin": "pydocs", "limit": QUESTIONS, **dataset},
        "retrieval": {"metrics": RETRIEVAL},
        "judge": {"metrics": JUDGED, "backend": "local", "cache_path": str(tmp / "verdicts.sqlite")},
        "pipeline_cache": str(tmp / f"{name}-outputs.sqlite"),
        "output": {"dir": str(tmp / name), "formats": ["json"], "history": False},
        "progress": False,
    }
    if runs is not None:
        config["runs"] = runs
    path = tmp / f"{name}.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    return path


def _run(config: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "ragmetrics", "run", str(config), "--no-progress"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    folder = json.loads(config.read_text())["output"]["dir"]
    report: dict[str, Any] = json.loads((Path(folder) / "latest" / "report.json").read_text())
    return report


def _per_query(report: dict[str, Any], run: str) -> dict[str, dict[str, float | None]]:
    (found,) = [r for r in report["runs"] if r["name"] == run]
    per_query: dict[str, dict[str, float | None]] = found["per_query"]
    return per_query


def test_traces_of_the_instrumented_pipeline_score_as_the_pipeline_does(tmp_path: Path) -> None:
    traces = tmp_path / "traces.jsonl"
    assert _example().main(["--out", str(traces), "--limit", str(QUESTIONS)]) == 0
    lines = traces.read_text(encoding="utf-8").splitlines()
    assert lines and all("resourceSpans" in json.loads(line) for line in lines)

    called = _run(_config(tmp_path, "called", {}, [
        {"source": "pipeline", "name": "my_rag", "target": "rag_pipeline:answer",
         "python_path": [str(ROOT / "examples")]}]))  # fmt: skip
    traced = _run(_config(tmp_path, "traced", {"traces": str(traces)}, None))

    by_call, by_trace = _per_query(called, "my_rag"), _per_query(traced, "pipeline")
    assert set(by_call) == set(by_trace) and len(by_trace) == QUESTIONS
    for qid, scores in by_call.items():
        for metric in [*RETRIEVAL, *JUDGED, "tokens", "cost"]:
            assert scores[metric] is not None, (qid, metric)
            assert by_trace[qid][metric] == pytest.approx(scores[metric], abs=1e-9), (qid, metric)
        assert by_trace[qid]["latency_s"] is not None and by_trace[qid]["latency_s"] >= 0
    # What the system is judged against is the same, so the two nights are comparable (history, the gate).
    assert traced["metadata"]["truth_fingerprint"] == called["metadata"]["truth_fingerprint"]


def test_the_shipped_traces_config_reads_what_the_example_writes() -> None:
    from ragmetrics.nightly.config import load_config

    config = load_config(ROOT / "configs" / "traces.yaml")
    assert config.dataset.traces == _example().DEFAULT_OUT
