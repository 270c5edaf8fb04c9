"""The Ray engine on a local cluster: the same numbers as the local engine, and kills that cost only calls in
flight. Slow (a Ray cluster starts in seconds, not milliseconds); skipped where ray is not installed."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# alone: a Ray cluster on 2 CPUs times out when another test takes them (`make test-slow` runs it by itself).
pytestmark = [pytest.mark.slow, pytest.mark.alone, pytest.mark.timeout(600)]
ray = pytest.importorskip("ray", reason="the Ray engine needs pip install 'ragmetrics[ray]'")

from ragmetrics.engines.ray import RayEngine, evaluate_partitions  # noqa: E402
from ragmetrics.judge.cache import VerdictCache  # noqa: E402
from ragmetrics.judge.cache_shards import shard_dir  # noqa: E402
from ragmetrics.judge.settings import JudgeSettings  # noqa: E402
from ragmetrics.nightly.pipeline import run_pipeline  # noqa: E402
from ragmetrics.retrieval.evaluate import evaluate  # noqa: E402
from ragmetrics.retrieval.qrels import Qrels  # noqa: E402
from ragmetrics.retrieval.run import Run  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
from loopback import LoopbackServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "RAGMETRICS_TEST_RAY_KEY"
os.environ.setdefault("RAY_AUTH_MODE", "disabled")


@pytest.fixture(scope="module")
def engine() -> Iterator[RayEngine]:
    eng = RayEngine(workers=2, batch_size=4, num_cpus=2, worker_cpus=0.5)
    yield eng
    eng.close()


def _random_run_and_qrels(seed: int, queries: int) -> tuple[Qrels, Run]:
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(queries):
        qid = f"q{q:05d}"
        docs = [f"d{d}" for d in rng.choice(400, size=60, replace=False)]
        if q % 7:  # some queries only in the qrels (missing from the run, scored 0)
            run[qid] = {d: float(np.round(rng.normal(), 1)) for d in docs[:40]}  # rounded: ties on purpose
        if q % 11:  # some only in the run
            qrels[qid] = {d: int(rng.integers(0, 3)) for d in docs[20:50]}
    return Qrels.from_dict(qrels), Run.from_dict(run, name="random")


METRICS = ["ndcg@10", "map", "recall@20", "P@5", "mrr", "bpref", "ndcg_cut_5", "map@10-l2"]


@pytest.mark.parametrize("query_set", ["qrels", "intersection"])
def test_retrieval_is_equal_to_the_local_engine(engine: RayEngine, query_set: str) -> None:
    qrels, run = _random_run_and_qrels(1, 600)
    local = evaluate(qrels, run, METRICS, query_set=query_set, name="random")  # type: ignore[arg-type]
    sharded = engine.score_retrieval(qrels, run, METRICS, query_set=query_set, name="random")  # type: ignore[arg-type]
    assert sharded.per_query == local.per_query
    assert sharded.aggregate == local.aggregate  # to the last bit: same rows, same order, same means
    assert sharded.metadata.model_dump(exclude={"created_at"}) == local.metadata.model_dump(
        exclude={"created_at"}
    )


def test_token_budget_metrics_are_equal_to_the_local_engine(engine: RayEngine) -> None:
    qrels, run = _random_run_and_qrels(2, 300)
    lengths = {f"d{d}": 50 + (d * 37) % 300 for d in range(400)}
    metrics = ["recall@512tok", "ndcg@2ktok", "precision@1ktok-l2"]
    local = evaluate(qrels, run, metrics, name="random", lengths=lengths, straddle="include")
    sharded = engine.score_retrieval(
        qrels, run, metrics, query_set="qrels", name="random", lengths=lengths, straddle="include"
    )
    assert sharded.per_query == local.per_query and sharded.aggregate == local.aggregate


def test_parquet_partitions_score_like_one_run(engine: RayEngine, tmp_path: Path) -> None:
    import pandas as pd

    qrels, run = _random_run_and_qrels(2, 300)
    rows = [(q, d, s) for q, docs in run.to_dict().items() for d, s in docs.items()]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]).sample(frac=1.0, random_state=0)
    files = []
    for i, start in enumerate(range(0, len(frame), len(frame) // 4 + 1)):
        files.append(tmp_path / f"part-{i}.parquet")
        frame.iloc[start : start + len(frame) // 4 + 1].to_parquet(files[-1])
    local = evaluate(qrels, run, METRICS, name="random")
    gathered = evaluate_partitions(qrels, files, METRICS, name="random", shards=5)
    assert gathered.per_query.keys() == local.per_query.keys()
    for qid, scores in local.per_query.items():
        assert gathered.per_query[qid] == pytest.approx(scores, abs=0, rel=0)
    assert gathered.aggregate == local.aggregate
    streamed = evaluate_partitions(qrels, files, METRICS, name="random", shards=3, output=tmp_path / "scores")
    assert streamed.per_query == {}
    for metric, value in local.aggregate.items():
        assert streamed.aggregate[metric] == pytest.approx(value, rel=1e-12)
    written = pd.read_parquet(tmp_path / "scores")
    assert len(written) == len(set(run.query_ids) & set(qrels.query_ids))


def test_the_quickstart_gives_the_same_report_and_gate_on_both_engines(tmp_path: Path) -> None:
    config = ROOT / "configs" / "quickstart.yaml"
    local = run_pipeline(config, output_dir=tmp_path / "local", progress=False)
    assert local.folder is not None
    baseline = local.folder / "report.json"
    local_gated = run_pipeline(config, baseline=baseline, write=False, progress=False)
    on_ray = run_pipeline(config, baseline=baseline, write=False, progress=False, engine="ray")
    for a, b in zip(local_gated.report.runs, on_ray.report.runs, strict=True):
        assert (a.name, a.per_query, a.aggregate, a.failures) == (
            b.name,
            b.per_query,
            b.aggregate,
            b.failures,
        )
    assert [c.model_dump() for c in local_gated.report.comparisons] == [
        c.model_dump() for c in on_ray.report.comparisons
    ]
    assert local_gated.gate is not None and on_ray.gate is not None
    assert local_gated.gate.failed == on_ray.gate.failed and local_gated.exit_code == on_ray.exit_code
    assert on_ray.report.metadata.config is not None


# -- the judge: shards of the cache, and kills ---------------------------------------------------------------


def _samples(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"s{i:03d}",
            "question": f"What does sample {i} ask?",
            "contexts": [f"Context of {i} [useful].", f"Other context of {i}."],
            "answer": f"The answer of {i}.",
            "reference": f"The reference of {i} [attr]. A second claim of {i}.",
        }
        for i in range(n)
    ]


def _settings(server: LoopbackServer, cache: Path, **kw: Any) -> JudgeSettings:
    values: dict[str, Any] = {
        "backend": "openai",
        "model": "test-model",
        "embedding_model": "test-embedding",
        "base_url": server.url,
        "api_key_env": KEY_ENV,
        "cache_path": cache,
        "max_concurrency": 2,
        "timeout_s": 10.0,
    }
    values.update(kw)
    return JudgeSettings(**values)


def _repeats(server: LoopbackServer) -> int:
    """Requests made more than once for the same prompt and input (each is a verdict paid twice)."""
    counts = collections.Counter((r.prompt, r.digest) for r in server.records if r.status == 200)
    return sum(c - 1 for c in counts.values())


def test_judging_across_workers_equals_the_local_judge_and_merges_the_cache(
    engine: RayEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmetrics.judge.base import RagSample
    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.judge.select import make_judge

    monkeypatch.setenv(KEY_ENV, "sk-test")
    server = LoopbackServer().start()
    try:
        samples = [RagSample.model_validate(s) for s in _samples(10)]
        metrics = ["context_precision", "context_recall"]
        session = engine.judge_session(_settings(server, tmp_path / "ray.sqlite"))
        sharded = session.score(samples, metrics, name="r", progress=False)
        session.close()
        local = evaluate_rag(
            samples, metrics, make_judge(_settings(server, tmp_path / "local.sqlite")), name="r"
        )
        assert sharded.per_query == local.per_query and sharded.failures == local.failures
        assert not shard_dir(tmp_path / "ray.sqlite").exists() or not any(
            shard_dir(tmp_path / "ray.sqlite").iterdir()
        )
        assert (
            len(VerdictCache(tmp_path / "ray.sqlite")) == len(VerdictCache(tmp_path / "local.sqlite")) == 20
        )
        server.reset_records()
        again = engine.judge_session(_settings(server, tmp_path / "ray.sqlite"))
        again.score(samples, metrics, name="r", progress=False)
        again.close()
        assert server.count() == 0  # the merged cache answers everything
    finally:
        server.stop()


def test_an_aligned_judge_across_workers_equals_the_local_one(
    engine: RayEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """judge: {aligned: DIR} reaches every worker: the aligned prompt (its own cache keys) and calibration."""
    from datetime import UTC, datetime

    from ragmetrics.judge.aligned.artifact import AlignedMetric, AlignedSet, HeldOutFigure, LabelProvenance
    from ragmetrics.judge.aligned.calibration import fit_cut
    from ragmetrics.judge.aligned.prompt_edit import LabelledExample, PromptEdit
    from ragmetrics.judge.base import RagSample
    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.judge.select import make_judge

    monkeypatch.setenv(KEY_ENV, "sk-test")
    entry = AlignedMetric(
        metric="context_recall", backend="openai", model="test-model", steps=["few_shot", "calibration"],
        prompt_edit=PromptEdit(guidance="Count a statement only when a chunk states it.", examples=[
            LabelledExample(sample_id="x", fields={"question": "q?", "reference": "r."}, label=1.0)]),
        calibration=fit_cut([0.2, 0.6, 0.8, 0.9], [0, 0, 1, 1]),
        labels=LabelProvenance(source="l.csv", sha256="0" * 64, count=4, kind="binary", folds=2, seed=0),
        heldout=HeldOutFigure(statistic="balanced_accuracy", n=4, before=0.5, after=1.0),
        created_at=datetime.now(UTC), ragmetrics_version="test",
    )  # fmt: skip
    aligned = tmp_path / "aligned"
    aligned.mkdir()
    (aligned / "aligned.json").write_text(AlignedSet(metrics={"context_recall": entry}).model_dump_json())
    server = LoopbackServer().start()
    try:
        samples = [RagSample.model_validate(s) for s in _samples(10)]
        metrics = ["context_precision", "context_recall"]
        session = engine.judge_session(_settings(server, tmp_path / "ray.sqlite", aligned=aligned))
        sharded = session.score(samples, metrics, name="r", progress=False)
        session.close()
        local = evaluate_rag(
            samples,
            metrics,
            make_judge(_settings(server, tmp_path / "local.sqlite", aligned=aligned)),
            name="r",
        )
        plain = evaluate_rag(
            samples, metrics, make_judge(_settings(server, tmp_path / "plain.sqlite")), name="r"
        )
        assert sharded.per_query == local.per_query
        assert sharded.per_query != plain.per_query  # the calibration moved context_recall
        assert all(
            sharded.per_query[q]["context_precision"] == plain.per_query[q]["context_precision"]
            for q in plain.per_query
        )
        assert (
            sharded.metadata.judge is not None
            and "aligned:context_recall" in sharded.metadata.judge.prompt_versions
        )
    finally:
        server.stop()


def test_a_killed_worker_costs_only_its_calls_in_flight(
    engine: RayEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmetrics.judge.base import RagSample

    monkeypatch.setenv(KEY_ENV, "sk-test")
    server = LoopbackServer(latency_s=0.05).start()
    try:
        samples = [RagSample.model_validate(s) for s in _samples(40)]
        session = engine.judge_session(_settings(server, tmp_path / "c.sqlite"))
        victim = session.actors()[0]

        def kill_later() -> None:
            while server.count(settle=False) < 15:
                time.sleep(0.01)
            ray.kill(victim)

        killer = threading.Thread(target=kill_later)
        killer.start()
        result = session.score(samples, ["context_recall"], name="r", progress=False)
        killer.join()
        session.close()
        assert session.restarts >= 1
        assert not result.failures and len(result.per_query) == 40
        per_worker = 1  # max_concurrency 2 shared by 2 workers
        assert _repeats(server) <= per_worker
    finally:
        server.wait_idle()
        server.stop()


_DRIVER = textwrap.dedent(
    """
    import os, sys
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    from ragmetrics.engines.ray import RayEngine
    from ragmetrics.judge.base import RagSample
    from ragmetrics.judge.settings import JudgeSettings
    import json
    settings = JudgeSettings.model_validate_json(sys.argv[1])
    samples = [RagSample.model_validate(s) for s in json.loads(sys.argv[2])]
    engine = RayEngine(workers=2, batch_size=2, num_cpus=2, worker_cpus=0.5)
    session = engine.judge_session(settings)
    session.score(samples, ["context_recall"], name="r", progress=False)
    session.close()
    engine.close()
    """
)


def test_a_killed_driver_loses_only_verdicts_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.setenv(KEY_ENV, "sk-test")
    server = LoopbackServer(latency_s=0.05).start()
    try:
        samples = _samples(40)
        settings = _settings(server, tmp_path / "c.sqlite")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        driver = subprocess.Popen(
            [sys.executable, "-c", _DRIVER, settings.model_dump_json(), json.dumps(samples)],
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while server.count(settle=False) < 15 and time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.01)
        assert driver.poll() is None, "the driver finished before it could be killed"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        time.sleep(1.0)  # workers notice their driver is gone and stop
        # The cluster the killed driver started leaves agents behind (as on a real machine); stop them.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(driver.pid, signal.SIGKILL)
        first = server.count()
        assert 15 <= first < 40
        # The rerun (a new driver) merges the shards the killed one left, then asks only for the rest.
        engine = (
            RayEngine(workers=2, batch_size=2, num_cpus=2, worker_cpus=0.5)
            if not ray.is_initialized()
            else None
        )
        try:
            from ragmetrics.engines.ray.judge import RayJudgeSession
            from ragmetrics.judge.base import RagSample

            session = RayJudgeSession(settings, workers=2, batch_size=2, worker_cpus=0.5)
            result = session.score(
                [RagSample.model_validate(s) for s in samples], ["context_recall"], name="r", progress=False
            )
            session.close()
        finally:
            if engine is not None:
                engine.close()
        assert not result.failures and len(result.per_query) == 40
        in_flight = 2  # two workers, one request each
        assert _repeats(server) <= in_flight
    finally:
        server.wait_idle(timeout_s=30)
        server.stop()


def test_watch_judges_live_traces_on_ray_as_in_process(tmp_path: Path) -> None:
    """`engine: {kind: ray}` in a watch config: the sampled traces' scores equal the in-process engine's."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))
    from helpers import append, trace

    from ragmetrics.live import Watcher
    from ragmetrics.live.config import WatchConfig

    append(tmp_path / "t.jsonl", [trace(n, 1_790_006_400.0 + 60 * n, good=n % 2 == 0) for n in range(12)])

    def scores(engine: dict[str, Any], name: str) -> dict[tuple[str, str], float | None]:
        config = WatchConfig.model_validate({
            "source": {"kind": "otlp_file", "path": str(tmp_path / "t.jsonl"), "settle_s": 0},
            "sampling": {"rate": 0.75},
            "judge": {"backend": "local", "metrics": ["faithfulness", "answer_relevancy"], "cache_path": None},
            "engine": engine,
            "output": str(tmp_path / name),
        })  # fmt: skip
        watcher = Watcher(config, say=lambda _m: None)
        try:
            watcher.poll(final=True)
            rows = watcher.store.db.execute("SELECT trace_id, metric, value FROM scores").fetchall()
        finally:
            watcher.close()
        return {(t, m): v for t, m, v in rows}

    local = scores({"kind": "local"}, "local")
    on_ray = scores({"kind": "ray", "workers": 2, "num_cpus": 2, "worker_cpus": 0.5, "batch_size": 4}, "ray")
    assert on_ray == local and sum(1 for (_, m) in local if m == "faithfulness") >= 6
