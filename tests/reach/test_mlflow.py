"""ragmetrics and MLflow: nights logged to a real `mlflow server` (SQLite backend, local artifacts, on
127.0.0.1), re-logged without duplicates, a tracker that is down never failing a night and its backlog logged
later; ragmetrics metrics as `mlflow.genai.evaluate` scorers equal to ragmetrics' own."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main
from ragmetrics.comparison.means import mean_interval
from ragmetrics.mlflow.nights import BACKLOG, metric_name, night_params
from ragmetrics.schema import ComparisonSettings, DatasetSummary, JudgeInfo, NightlyRun, Report

SERVER_ENV = "RAGMETRICS_MLFLOW_SERVER"
"""The `mlflow` executable of a full MLflow install (its server's dependencies stay out of the project's venv;
CI builds one: .ci/run)."""


def test_a_night_s_params_hold_no_secret() -> None:
    report = Report(runs=[], metrics=[], settings=ComparisonSettings(test="fisher", correction="holm"))
    report.metadata.nightly = NightlyRun(name="n", dataset=DatasetSummary(source="d", rows_used=0),
                                         judge=JudgeInfo(backend="openai", model="m",
                                                         base_url="https://user:hunter2@llm.example/v1?key=sk-123"))  # fmt: skip
    params = night_params(report)
    assert params["judge.base_url"] == "https://llm.example/v1"
    assert not any("hunter2" in v or "sk-123" in v for v in params.values())
    assert metric_name("ndcg@10", "mean") == "ndcg_at_10.mean" and metric_name("a|b") == "a_b"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server:
    def __init__(self, executable: str, folder: Path) -> None:
        self.executable, self.folder, self.port = executable, folder, _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log: Any = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.log = open(self.folder / "server.log", "ab")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [self.executable, "server", "--backend-store-uri", f"sqlite:///{self.folder / 'mlflow.db'}",
             "--artifacts-destination", str(self.folder / "artifacts"), "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", "1"],
            stdout=subprocess.DEVNULL, stderr=self.log, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise AssertionError("mlflow server did not start: " + (self.folder / "server.log").read_text()[-2000:])

    def stop(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=60)
            self.process = None
            self.log.close()


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[_Server]:
    executable = os.environ.get(SERVER_ENV)
    if not executable:
        if os.environ.get("RAGMETRICS_REQUIRE_MLFLOW"):
            pytest.fail(f"{SERVER_ENV} is not set but RAGMETRICS_REQUIRE_MLFLOW asks for the MLflow server test")
        pytest.skip(f"set {SERVER_ENV} to a full MLflow install's `mlflow` executable (CI builds one: .ci/run)")
    folder = tmp_path / "tracker"
    folder.mkdir()
    server = _Server(executable, folder)
    server.start()
    yield server
    server.stop()


def _config(tmp_path: Path, uri: str) -> Path:
    data = {
        "name": "tracked", "dataset": {"builtin": "pydocs"},
        "retrieval": {"metrics": ["ndcg@10", "recall@10"], "query_set": "qrels"},
        "runs": [{"source": "retriever", "retriever": "bm25", "name": "bm25"},
                 {"source": "retriever", "retriever": "dense", "name": "dense"}],
        "judge": {"backend": "local", "metrics": ["context_precision"], "contexts_top_k": 3,
                  "cache_path": str(tmp_path / "v.sqlite")},
        "output": {"dir": str(tmp_path / "out"), "formats": ["json", "html", "md"], "history": True,
                   "mlflow": {"tracking_uri": uri, "experiment": "nights", "timeout_s": 120}},
    }  # fmt: skip
    path = tmp_path / "night.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _night(config: Path, *args: str) -> Path:
    assert main(["run", str(config), "--no-progress", *args]) == 0
    time.sleep(1.1)  # dated folders are named to the second
    return (config.parent / "out" / "latest").resolve()


@pytest.mark.slow
def test_nights_in_a_real_mlflow_server(mlflow_server: _Server, tmp_path: Path, capsys: Any) -> None:
    from mlflow.tracking import MlflowClient

    config = _config(tmp_path, mlflow_server.uri)
    first = _night(config)
    second = _night(config, "--baseline", str(first / "report.json"))
    capsys.readouterr()
    assert main(["history", str(tmp_path / "out"), "--to-mlflow", mlflow_server.uri, "--experiment", "nights",
                 "--no-page"]) == 0  # re-logs both: nothing may be duplicated  # fmt: skip
    assert "2 of 2 nights logged" in capsys.readouterr().out

    client = MlflowClient(mlflow_server.uri)
    experiment = client.get_experiment_by_name("nights")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    nights = [r for r in runs if r.data.tags.get("ragmetrics.role") == "night"]
    systems = [r for r in runs if r.data.tags.get("ragmetrics.role") == "system"]
    histories = [r for r in runs if r.data.tags.get("ragmetrics.role") == "history"]
    assert len(nights) == 2 and len(systems) == 4 and len(histories) == 2  # once each
    for folder in (first, second):
        report = Report.model_validate_json((folder / "report.json").read_text(encoding="utf-8"))
        (night,) = [r for r in nights if r.data.tags["ragmetrics.folder"] == str(folder)]
        assert night.data.params["dataset_fingerprint"] == report.metadata.dataset_fingerprint
        assert night.data.params["judge.backend"] == "local"
        assert sorted(a.path for a in client.list_artifacts(night.info.run_id)) == ["report.html", "report.json",
                                                                                     "report.md"]  # fmt: skip
        for c in report.comparisons:
            key = metric_name("diff", c.metric, f"{c.candidate}_vs_{c.baseline}")
            assert night.data.metrics[key] == pytest.approx(c.mean_diff)
        for child in (r for r in systems if r.data.tags["mlflow.parentRunId"] == night.info.run_id):
            run = child.data.tags["ragmetrics.system"]
            for metric, stats in report.descriptive[run].items():
                low, high = mean_interval(stats) or (None, None)
                assert child.data.metrics[metric_name(metric, "mean")] == pytest.approx(stats.mean)
                assert child.data.metrics[metric_name(metric, "ci_low")] == pytest.approx(low)
                assert child.data.metrics[metric_name(metric, "ci_high")] == pytest.approx(high)
                assert child.data.metrics[metric_name(metric, "n")] == stats.count
                assert len(client.get_metric_history(child.info.run_id, metric_name(metric, "mean"))) == 1
    assert nights[0].data.metrics.get("gate_passed", 1.0) == 1.0
    assert any("gate_passed" in r.data.metrics for r in nights)  # the second night had a baseline
    for history in histories:
        points = client.get_metric_history(history.info.run_id, "ndcg_at_10.mean")
        assert len(points) == 2 and len({p.step for p in points}) == 2  # one step per night

    # the tracker goes down: the night passes, says so, and is queued; the next night logs the backlog
    mlflow_server.stop()
    third = _night(config)
    err = capsys.readouterr().err
    assert "queued" in err and BACKLOG in err
    assert json.loads((tmp_path / "out" / BACKLOG).read_text(encoding="utf-8").splitlines()[0])["folder"] == third.name
    mlflow_server.start()
    _night(config)
    assert not (tmp_path / "out" / BACKLOG).exists()
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    assert len([r for r in runs if r.data.tags.get("ragmetrics.role") == "night"]) == 4
    assert any(r.data.tags.get("ragmetrics.folder") == str(third) for r in runs)


@pytest.mark.slow
def test_ragmetrics_scorers_in_mlflow_genai_evaluate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mlflow = pytest.importorskip("mlflow", reason="the mlflow extra")
    from ragmetrics import collection
    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.judge.select import make_judge
    from ragmetrics.judge.settings import JudgeSettings
    from ragmetrics.mlflow import ragmetrics_scorers

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")  # every row's trace written before the table
    # One worker: the scorers share one judge and take one sample at a time anyway, and MLflow's pool writing
    # traces to one SQLite file at once lost rows to its lock on a loaded machine (14 of 30 rows in the table).
    monkeypatch.setenv("MLFLOW_GENAI_EVAL_MAX_WORKERS", "1")
    monkeypatch.setenv("MLFLOW_GENAI_EVAL_MAX_SCORER_WORKERS", "1")
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    samples = collection.load_samples()[:30]
    metrics = ["faithfulness", "context_precision", "answer_relevancy", "ndcg@10"]
    rows = [{"inputs": {"question": s.question},
             "outputs": {"answer": s.answer, "contexts": s.contexts, "retrieved_ids": s.context_ids},
             "expectations": {k: v for k, v in (("expected_response", s.reference), ("relevant_ids", s.relevant_ids))
                              if v is not None}} for s in samples]  # fmt: skip
    result = mlflow.genai.evaluate(data=rows, scorers=ragmetrics_scorers(metrics))
    table = result.tables["eval_results"]
    own = evaluate_rag(samples, metrics[:3], make_judge(JudgeSettings(backend="local")), progress=False)
    by_question = {s.question: s for s in samples}
    assert len(table) == 30
    for _, row in table.iterrows():
        request = row["request"]
        question = (request if isinstance(request, dict) else json.loads(request))["question"]
        sample = by_question[question]
        for metric in metrics[:3]:
            mine = own.per_query[sample.id][metric]
            value = row[f"{metric}/value"]
            assert (mine is None and (value is None or value != value)) or value == pytest.approx(mine, abs=1e-12), (sample.id, metric)
            if mine is not None:
                assert isinstance(row[f"{metric}/rationale"], str) and row[f"{metric}/rationale"]
        ranking = sample.context_ids or []
        relevant = set(sample.relevant_ids or [])
        value = row["ndcg_at_10/value"]
        if not relevant or not ranking:  # not applicable: no value, the reason as the rationale
            assert (value is None or value != value) and "needs a ranking" in row["ndcg_at_10/rationale"]
            continue
        assert 0.0 <= value <= 1.0 and (value > 0) == bool(relevant & set(ranking[:10]))


def test_the_core_never_imports_mlflow() -> None:
    import subprocess
    import sys

    code = ("import sys, ragmetrics.nightly.pipeline, ragmetrics.cli.main, ragmetrics.mlflow; "
            "print('mlflow' in sys.modules)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False"
