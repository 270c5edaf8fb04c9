"""ragmetrics and MLflow: nights logged to a real `mlflow server` (SQLite backend, local artifacts, on
127.0.0.1), re-logged without duplicates, a tracker that is down never failing a night and its backlog logged
later; ragmetrics metrics as `mlflow.genai.evaluate` scorers equal to ragmetrics' own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main
from ragmetrics.comparison.means import mean_interval
from ragmetrics.mlflow.nights import (
    BACKLOG,
    MlflowTarget,
    log_backlog,
    log_night,
    log_nights,
    metric_name,
    night_metrics,
    night_params,
    read_backlog,
    run_metrics,
)
from ragmetrics.mlflow.tracker import shown_uri
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
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:  # its graceful shutdown took 20 s on a loaded machine
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=60)
            self.process = None
            self.log.close()


@pytest.fixture(scope="session")
def _one_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Server]:
    """One real MLflow server for the whole session (starting one costs seconds to a minute on a loaded
    machine); each test logs into experiments of its own."""
    executable = os.environ.get(SERVER_ENV)
    if not executable:
        if os.environ.get("RAGMETRICS_REQUIRE_MLFLOW"):
            pytest.fail(f"{SERVER_ENV} is not set but RAGMETRICS_REQUIRE_MLFLOW asks for the MLflow server test")
        pytest.skip(f"set {SERVER_ENV} to a full MLflow install's `mlflow` executable (CI builds one: .ci/run)")
    server = _Server(executable, tmp_path_factory.mktemp("tracker"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def mlflow_server(_one_server: _Server) -> _Server:
    """The session's server, running (a test that stopped it to play a tracker that is down restarts it,
    and one that failed half-way leaves it to be restarted here)."""
    if _one_server.process is None:
        _one_server.start()
    return _one_server


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
        plots = sorted(p.name for p in (folder / "plots").iterdir()) if (folder / "plots").is_dir() else []
        assert sorted(a.path for a in client.list_artifacts(night.info.run_id)) == [
            "plots", "report.html", "report.json", "report.md"][0 if plots else 1:]  # fmt: skip
        # the page loads its plots from plots/ beside it: every one is logged there
        assert sorted(a.path for a in client.list_artifacts(night.info.run_id, "plots")) == [
            f"plots/{name}" for name in plots]  # fmt: skip
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

    # the tracker is down (nothing listens at its address; cheaper than stopping and restarting the server,
    # which takes a minute on a loaded machine): the night passes, says so, and is queued; the next night,
    # with the tracker back, logs the backlog
    _config(tmp_path, f"http://127.0.0.1:{_free_port()}")
    third = _night(config)
    err = capsys.readouterr().err
    assert "queued" in err and BACKLOG in err
    assert json.loads((tmp_path / "out" / BACKLOG).read_text(encoding="utf-8").splitlines()[0])["folder"] == third.name
    _config(tmp_path, mlflow_server.uri)
    _night(config)
    assert "logged to" in capsys.readouterr().err  # the one line saying where tonight's night went
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


@pytest.mark.slow
def test_a_row_a_metric_does_not_apply_to_is_neither_a_failure_nor_a_zero_in_mlflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """answer_correctness on rows without a reference: MLflow's harness sees no error (not "n/N failed"),
    no value (not 0), and the reason; its mean is the mean of the rows it applies to (issue 67.6)."""
    mlflow = pytest.importorskip("mlflow", reason="the mlflow extra")
    from ragmetrics import collection
    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.judge.select import make_judge
    from ragmetrics.judge.settings import JudgeSettings
    from ragmetrics.mlflow import ragmetrics_scorers

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    monkeypatch.setenv("MLFLOW_GENAI_EVAL_MAX_WORKERS", "1")
    monkeypatch.setenv("MLFLOW_GENAI_EVAL_MAX_SCORER_WORKERS", "1")
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    samples = [s for s in collection.load_samples() if s.reference][:6]
    without = {s.question for s in samples[::2]}  # every other row gives no reference
    rows = [{"inputs": {"question": s.question}, "outputs": {"answer": s.answer, "contexts": s.contexts},
             "expectations": {} if s.question in without else {"expected_response": s.reference}} for s in samples]  # fmt: skip
    judge = make_judge(JudgeSettings(backend="local"))
    result = mlflow.genai.evaluate(data=rows, scorers=ragmetrics_scorers(["answer_correctness"], judge))
    with_reference = [s for s in samples if s.question not in without]
    own = evaluate_rag(with_reference, ["answer_correctness"], judge, progress=False)
    table = result.tables["eval_results"]
    assert len(table) == len(samples)
    for _, row in table.iterrows():
        request = row["request"]
        question = (request if isinstance(request, dict) else json.loads(request))["question"]
        value = row["answer_correctness/value"]
        errors = [row[c] for c in table.columns if c.startswith("answer_correctness/") and "error" in c]
        assert all(e is None or e != e for e in errors), (question, errors)  # never a failure
        if question in without:
            assert value is None or value != value, value  # no value: never 0
            assert row["answer_correctness/rationale"].startswith("not applicable:")
        else:
            (sample,) = [s for s in with_reference if s.question == question]
            assert value == pytest.approx(own.per_query[sample.id]["answer_correctness"], abs=1e-12)
    mine = [v["answer_correctness"] for v in own.per_query.values()]
    assert result.metrics["answer_correctness/mean"] == pytest.approx(sum(mine) / len(mine))


def test_the_core_never_imports_mlflow() -> None:
    import subprocess
    import sys

    code = ("import sys, ragmetrics.nightly.pipeline, ragmetrics.cli.main, ragmetrics.mlflow; "
            "print('mlflow' in sys.modules)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False"


# --- Logging that can always be finished (issue 67.1-3): interrupted at every stage, hostile names, history ---

HOSTILE = ["bob's \"night\"", "back\\slash \\' \\\\", "ünïcödé 実験 ✓", "new\nline\tand tab", "%_*? ' OR 1=1 --"]
"""Experiment and night names that would break, or widen, a filter string built from them."""


@pytest.fixture(scope="module")
def a_night(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real night (retrieval only: cheap) whose compared runs are named with a quote, a backslash,
    unicode and a newline; tests log copies of it under other folder names, times and night names."""
    root = tmp_path_factory.mktemp("a_night")
    data = {
        "name": "tracked", "dataset": {"builtin": "pydocs"},
        "retrieval": {"metrics": ["ndcg@10", "recall@10"], "query_set": "qrels"},
        "runs": [{"source": "retriever", "retriever": "bm25", "name": "bob's bm25"},
                 {"source": "retriever", "retriever": "bm25", "name": "back\\slash ünï\nnew", "params": {"k1": 1.2}}],
        "output": {"dir": str(root / "out"), "formats": ["json", "md"], "history": False, "plots": False},
    }  # fmt: skip
    config = root / "night.yaml"
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert main(["run", str(config), "--no-progress"]) == 0
    return (root / "out" / "latest").resolve()


def _copy(night: Path, root: Path, day: int, name: str | None = None, experiment: str | None = None) -> Path:
    """`night` as another night: its own folder and time (one history step each), and optionally another
    night name and its config's output.mlflow.experiment."""
    folder = root / f"2026-01-{day:02d}T000000Z"
    shutil.copytree(night, folder)
    data = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    data["metadata"]["created_at"] = f"2026-01-{day:02d}T00:00:00Z"
    if name is not None:
        data["metadata"]["nightly"]["name"] = name
        data["metadata"]["config"]["name"] = name
    if experiment is not None:
        data["metadata"]["config"]["output"]["mlflow"] = {"tracking_uri": "http://unused", "experiment": experiment}
    (folder / "report.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def _census(uri: str, experiment: str) -> dict[str, Any]:
    """Everything in an experiment that logging could duplicate: runs (id, role, status, tags), each
    metric's full history, each run's artifacts."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return {}
    out: dict[str, Any] = {}
    for run in client.search_runs([found.experiment_id], max_results=1000):
        rid = run.info.run_id
        out[rid] = {
            "role": run.data.tags.get("ragmetrics.role"), "status": run.info.status,
            "system": run.data.tags.get("ragmetrics.system"), "key": run.data.tags.get("ragmetrics.night_key"),
            "night": run.data.tags.get("ragmetrics.night"),
            "parent": run.data.tags.get("mlflow.parentRunId"),
            "metrics": {k: sorted((m.step, m.value) for m in client.get_metric_history(rid, k)) for k in run.data.metrics},
            "params": dict(run.data.params),
            "artifacts": sorted(a.path for a in client.list_artifacts(rid)),
        }  # fmt: skip
    return out


def _assert_complete(census: dict[str, Any], nights: list[Path]) -> None:
    """One complete night per folder: its parent FINISHED with every artifact, one FINISHED child per
    compared run holding each metric once, one FINISHED history run per compared run with one step per
    night; nothing else, nothing twice."""
    reports = {f: Report.model_validate_json((f / "report.json").read_text(encoding="utf-8")) for f in nights}
    parents = [r for r in census.values() if r["role"] == "night"]
    assert len(parents) == len(nights), [p["key"] for p in parents]
    steps: dict[tuple[str, str], list[int]] = {}  # (night name, compared run) -> the steps of its history run
    for folder, report in reports.items():
        name = report.metadata.nightly.name if report.metadata.nightly is not None else "ragmetrics"
        (parent_id,) = [rid for rid, r in census.items() if r["role"] == "night" and r["key"] == f"{name}/{folder.name}"]
        parent = census[parent_id]
        assert parent["status"] == "FINISHED"
        assert parent["artifacts"] == sorted(p.name for p in folder.iterdir() if p.name in ("report.json", "report.md"))
        assert parent["params"]["dataset_fingerprint"] == report.metadata.dataset_fingerprint
        children = {r["system"]: r for r in census.values() if r["role"] == "system" and r["parent"] == parent_id}
        assert sorted(children) == sorted(r.name for r in report.runs)
        for system, child in children.items():
            steps.setdefault((name, system), []).append(int(report.metadata.created_at.timestamp()))
            assert child["status"] == "FINISHED"
            expected = run_metrics(report, system)
            assert {k: [(0, pytest.approx(v))] for k, v in expected.items()} == child["metrics"]
    histories = [r for r in census.values() if r["role"] == "history"]
    assert sorted((r["night"], r["system"]) for r in histories) == sorted(steps)  # one per night name and run
    for history in histories:
        assert history["status"] == "FINISHED"
        for key, points in history["metrics"].items():
            assert [step for step, _ in points] == sorted(steps[history["night"], history["system"]]), key
    assert len(census) == len(parents) + sum(len(r.runs) for r in reports.values()) + len(histories)


class _Fault(Exception):
    """A tracker failing at a stage (raised by the test seam)."""


def _fail_at(stage: str, nth: int = 1) -> Any:
    seen = {"n": 0}

    def hook(reached: str) -> None:
        if reached == stage:
            seen["n"] += 1
            if seen["n"] == nth:
                raise _Fault(f"the tracker failed at {stage} #{nth}")

    return hook


@pytest.mark.slow
@pytest.mark.parametrize(("stage", "nth"), [("parent", 1), ("child", 1), ("child", 2), ("metrics", 1), ("step", 2),
                                            ("history", 1), ("artifacts", 1), ("finish", 1)])  # fmt: skip
def test_a_night_cut_short_at_any_stage_is_completed_once_by_the_backlog(
    mlflow_server: _Server, a_night: Path, tmp_path: Path, stage: str, nth: int
) -> None:
    root = tmp_path / "out"
    root.mkdir()
    experiment = f"cut at {stage} {nth}"
    first = _copy(a_night, root, 1)
    second = _copy(a_night, root, 2)
    # the first night is logged whole; the second fails at `stage` and is queued
    assert log_backlog(root, first, MlflowTarget(mlflow_server.uri, experiment, 120))[0].startswith("mlflow: ")
    notes = log_backlog(root, second, MlflowTarget(mlflow_server.uri, experiment, 120, on_stage=_fail_at(stage, nth)))
    assert any("queued" in n and f"{stage} #{nth}" in n for n in notes), notes
    assert read_backlog(root) == [second.name]
    cut = _census(mlflow_server.uri, experiment)
    (parent,) = [r for r in cut.values() if r["role"] == "night" and r["key"].endswith(second.name)]
    assert parent["status"] == "RUNNING"  # never FINISHED before all of it is there
    # the next night replays the backlog: the cut night is completed, once, and the backlog cleared
    third = _copy(a_night, root, 3)
    notes = log_backlog(root, third, MlflowTarget(mlflow_server.uri, experiment, 120))
    assert not (root / BACKLOG).exists() and any("queued night(s) from the backlog" in n for n in notes), notes
    done = _census(mlflow_server.uri, experiment)
    _assert_complete(done, [first, second, third])
    # and logging all of them again adds nothing
    for folder in (first, second, third):
        log_night(folder, MlflowTarget(mlflow_server.uri, experiment, 120))
    assert _census(mlflow_server.uri, experiment) == done


@pytest.mark.slow
def test_a_night_that_outlasts_timeout_s_or_is_killed_is_completed_by_the_next_try(
    mlflow_server: _Server, a_night: Path, tmp_path: Path
) -> None:
    root = tmp_path / "out"
    root.mkdir()
    slow, killed = _copy(a_night, root, 1), _copy(a_night, root, 2)
    # the tracker stalls after the metrics: the night waits timeout_s, queues the night, and the worker it
    # left stops before its next request (nothing of it arrives after the re-log below)
    stall = threading.Event()
    notes = log_backlog(root, slow, MlflowTarget(mlflow_server.uri, "outlasted", 3.0,
                                                 on_stage=lambda s: stall.wait(6) if s == "metrics" else None))  # fmt: skip
    assert read_backlog(root) == [slow.name] and any("timeout_s" in n for n in notes), notes
    # a kill (SIGKILL) while the second child is being logged, in a process of its own
    code = ("import os, signal, sys; from pathlib import Path; from ragmetrics.mlflow.nights import MlflowTarget, "
            "log_night\nn = []\ndef hook(s):\n    n.append(s)\n    if n.count('child') == 2: "
            "os.kill(os.getpid(), signal.SIGKILL)\n"
            f"log_night(Path({str(killed)!r}), MlflowTarget({mlflow_server.uri!r}, 'outlasted', 120, on_stage=hook))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    stall.set()
    logged, problems = log_nights([slow, killed], MlflowTarget(mlflow_server.uri, "outlasted", 120))
    assert not problems and len(logged) == 2
    time.sleep(1.0)  # time for a straggler of the abandoned worker to show (there must be none)
    census = _census(mlflow_server.uri, "outlasted")
    _assert_complete(census, [slow, killed])


@pytest.mark.slow
def test_names_with_quotes_backslashes_unicode_and_newlines_are_logged_once(
    mlflow_server: _Server, a_night: Path, tmp_path: Path
) -> None:
    root = tmp_path / "out"
    root.mkdir()
    nights = [_copy(a_night, root, day, name=name) for day, name in enumerate(HOSTILE, start=1)]
    # every hostile night name in one experiment (each lookup must find its own runs and no other's), and
    # a night in each hostile experiment
    for experiment, folders in [(HOSTILE[0], nights), *((e, nights[:1]) for e in HOSTILE[1:])]:
        for folder in folders:
            logged = log_night(folder, MlflowTarget(mlflow_server.uri, experiment, 120))
            assert logged.experiment == experiment
        first = _census(mlflow_server.uri, experiment)
        _assert_complete(first, folders)
        for folder in folders:  # again: the lookups find every run, whatever its name
            log_night(folder, MlflowTarget(mlflow_server.uri, experiment, 120))
        assert _census(mlflow_server.uri, experiment) == first


@pytest.mark.slow
def test_history_to_mlflow_is_idempotent_and_uses_the_config_s_experiment(
    mlflow_server: _Server, a_night: Path, tmp_path: Path, capsys: Any
) -> None:
    from mlflow.tracking import MlflowClient

    root = tmp_path / "out"
    root.mkdir()
    configured = "team's \"nightly\" exp"
    nights = [_copy(a_night, root, day, experiment=configured) for day in (1, 2, 3)]
    for _ in range(2):
        assert main(["history", str(root), "--to-mlflow", mlflow_server.uri, "--no-page"]) == 0
        out = capsys.readouterr().out
        assert f"3 of 3 nights logged to {mlflow_server.uri}, experiment {json.dumps(configured)}" in out, out
        once = _census(mlflow_server.uri, configured)
        _assert_complete(once, nights)
    assert MlflowClient(mlflow_server.uri).get_experiment_by_name("tracked") is None  # not the night's name
    chosen = "chosen \\ exp"
    assert main(["history", str(root), "--to-mlflow", mlflow_server.uri, "--experiment", chosen, "--no-page"]) == 0
    first = _census(mlflow_server.uri, chosen)
    _assert_complete(first, nights)
    assert main(["history", str(root), "--to-mlflow", mlflow_server.uri, "--experiment", chosen, "--no-page"]) == 0
    assert _census(mlflow_server.uri, chosen) == first
    assert _census(mlflow_server.uri, configured) == once


@pytest.mark.slow
def test_runs_an_earlier_ragmetrics_logged_are_adopted_not_duplicated(
    mlflow_server: _Server, a_night: Path, tmp_path: Path
) -> None:
    """A night half-logged by the earlier code (no `ragmetrics.id`: a RUNNING parent, one child, the history
    steps) and one it logged in full: logging them now completes the first and adds nothing to either."""
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    root = tmp_path / "out"
    root.mkdir()
    half, whole = _copy(a_night, root, 1), _copy(a_night, root, 2)
    client = MlflowClient(mlflow_server.uri)
    experiment = client.create_experiment("earlier ragmetrics")
    for folder in (half, whole):  # as the earlier code wrote them: tags of names, no ragmetrics.id
        report = Report.model_validate_json((folder / "report.json").read_text(encoding="utf-8"))
        ms, step, key = int(report.metadata.created_at.timestamp() * 1000), int(report.metadata.created_at.timestamp()), f"tracked/{folder.name}"
        parent = client.create_run(experiment, start_time=ms, run_name=f"tracked {folder.name}",
                                   tags={"ragmetrics.night_key": key, "ragmetrics.role": "night"})  # fmt: skip
        for result in report.runs[: 1 if folder is half else None]:
            child = client.create_run(experiment, start_time=ms, run_name=result.name, tags={
                "ragmetrics.night_key": key, "ragmetrics.role": "system", "ragmetrics.system": result.name,
                "mlflow.parentRunId": parent.info.run_id})  # fmt: skip
            values = run_metrics(report, result.name)
            client.log_batch(child.info.run_id, metrics=[Metric(k, v, ms, 0) for k, v in values.items()])
            client.set_terminated(child.info.run_id, "FINISHED", end_time=ms)
        for result in report.runs:
            found = [r for r in client.search_runs([experiment]) if r.data.tags.get("ragmetrics.role") == "history"
                     and r.data.tags.get("ragmetrics.system") == result.name]  # fmt: skip
            history = found[0] if found else client.create_run(experiment, start_time=ms, tags={
                "ragmetrics.role": "history", "ragmetrics.system": result.name, "ragmetrics.night": "tracked"})  # fmt: skip
            values = run_metrics(report, result.name)
            client.log_batch(history.info.run_id, metrics=[Metric(k, v, ms, step) for k, v in values.items()])
            client.set_terminated(history.info.run_id, "FINISHED", end_time=ms)
        if folder is whole:
            client.log_batch(parent.info.run_id, metrics=[Metric(k, v, ms, 0) for k, v in night_metrics(report).items()])
            for artifact in ("report.json", "report.md"):
                client.log_artifact(parent.info.run_id, str(folder / artifact))
            client.set_terminated(parent.info.run_id, "FINISHED", end_time=ms)
    before = _census(mlflow_server.uri, "earlier ragmetrics")
    for folder in (half, whole):
        log_night(folder, MlflowTarget(mlflow_server.uri, "earlier ragmetrics", 120))
    after = _census(mlflow_server.uri, "earlier ragmetrics")
    assert set(before) <= set(after) and len(after) == len(before) + 1  # the half night's missing child only
    for rid, run in before.items():  # nothing logged twice into what was there
        for key, points in run["metrics"].items():
            assert [s for s, _ in after[rid]["metrics"][key]] == sorted({s for s, _ in points}), key
    (parent,) = [r for r in after.values() if r["role"] == "night" and r["key"].endswith(half.name)]
    assert parent["status"] == "FINISHED" and parent["artifacts"] == ["report.json", "report.md"]


def test_tracking_uris_are_printed_as_written_without_credentials() -> None:
    assert shown_uri("sqlite:///tmp/runs/mlflow.db") == "sqlite:///tmp/runs/mlflow.db"
    assert shown_uri("sqlite:////abs/mlflow.db") == "sqlite:////abs/mlflow.db"
    assert shown_uri("http://127.0.0.1:5000") == "http://127.0.0.1:5000"
    assert shown_uri("https://user:hunter2@mlflow.example/path?token=sk-1") == "https://mlflow.example/path"
    assert shown_uri("postgresql://u:pw@db:5432/mlflow") == "postgresql://db:5432/mlflow"
    assert shown_uri("file:///tmp/mlruns") == "file:///tmp/mlruns"
