"""Panels and cascades over the real transport: llama.cpp's server (SmolLM2) beside the scripted loopback server.

The scripted tests (tests/pipeline/test_panel_night.py, test_cascade_night.py) prove the counting and routing
against a server that answers what it is told. These prove the same of a real OpenAI-compatible server: a night
whose panel has llama.cpp as one member, and a night whose cascade asks llama.cpp first with `confidence:
logprobs` (llama.cpp sends top_logprobs). Requests are counted at each server: the loopback records them, and
llama.cpp's are counted in its access log (`LlamaServer.chat_requests`).

Never the verdicts' quality: a 135M model is near chance and may write invalid JSON. Its invalid verdicts must
be recorded failures with their cause, never scores; a rerun sends nothing to either server.

Slow: about one llama.cpp request per sample and night (see tests/local/test_llama_server.py to install it).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main
from ragmetrics.judge.cascade.thresholds import fixed_sequence_threshold, stage_delta
from tests.judge.loopback import LoopbackServer

from .conftest import LlamaServer

pytestmark = pytest.mark.slow

N = 4
KEY_ENV = "RAGMETRICS_LLAMA_JUDGES_KEY"
METRIC = "helpful"
# A yes/no rubric weighted by probability: the one kind of metric whose confidence `logprobs` can read, and
# the shortest answer a judge writes (a rating and a reason), so each llama.cpp request stays short.
RUBRIC = {
    "name": METRIC,
    "type": "rubric",
    "question": "Does the passage answer the question?",
    "reads": ["question", "contexts"],
    "scale": {"type": "binary"},
}
CHAT = "/v1/chat/completions"
# Causes a transport that works never gives: the model's bad output is `invalid_output`, anything else here a bug.
TRANSPORT = {"connection", "timeout", "server_error", "rate_limited", "internal_error", "bad_request"}


@pytest.fixture
def loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-secret")  # llama.cpp ignores it; the loopback wants one
    server = LoopbackServer().start()
    yield server
    server.stop()


def _data(tmp_path: Path) -> None:
    """N samples, each with one passage; the loopback reads its rating and probabilities from the markers
    (sure: P = 0.99), llama.cpp reads them as text."""
    rows, passages, labels = [], [], ["sample_id,metric,label"]
    for i in range(N):
        truth = "yes" if i % 2 == 0 else "no"
        sure = "yes=0.99,no=0.01" if truth == "yes" else "yes=0.01,no=0.99"
        rows.append(
            {"id": f"q{i}", "question": f"What is {i} plus {i}? [item:q{i}] [rating:{truth}] [probs:{sure}]"}
        )
        passages.append(
            {"id": f"p{i}", "text": f"{i} plus {i} is {2 * i}." if truth == "yes" else "I like trains."}
        )
        labels.append(f"q{i},{METRIC},{1 if truth == 'yes' else 0}")
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "passages.jsonl").write_text(
        "".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8"
    )
    (tmp_path / "run.trec").write_text(
        "".join(f"q{i} Q0 p{i} 1 1.0 run\n" for i in range(N)), encoding="utf-8"
    )
    (tmp_path / "labels.csv").write_text("\n".join(labels) + "\n", encoding="utf-8")
    (tmp_path / "helpful.yaml").write_text(yaml.safe_dump(RUBRIC), encoding="utf-8")


def _members(llama: LlamaServer, loopback: LoopbackServer) -> list[dict[str, str]]:
    return [
        {"name": "smollm2", "model": "smollm2", "base_url": llama.url},
        {"name": "scripted", "model": "judge-model", "base_url": loopback.url},
    ]


def _config(tmp_path: Path, **judge: Any) -> Path:
    settings: dict[str, Any] = {
        "backend": "openai",
        "api_key_env": KEY_ENV,
        "metric_files": [str(tmp_path / "helpful.yaml")],
        "metrics": [METRIC],
        "contexts_top_k": 1,
        "cache_path": str(tmp_path / "cache" / "v.sqlite"),
        "max_concurrency": 1,  # llama.cpp computes one request at a time
        "timeout_s": 120,
        "max_retries": 0,  # one request per unit: what each server receives is exactly what the night asked
        "max_repairs": 0,
        "max_tokens": 120,  # a runaway answer must not hold the slot for minutes
        "retry_failed": "never",  # a recorded failure is reported again on the rerun, not asked again
        **judge,
    }
    data = {
        "dataset": {"path": str(tmp_path / "qa.jsonl"), "passages": str(tmp_path / "passages.jsonl")},
        "retrieval": {"metrics": ["mrr"]},
        "runs": [{"source": "file", "path": str(tmp_path / "run.trec"), "name": "run"}],
        "judge": settings,
        "output": {"dir": str(tmp_path / "out"), "formats": ["json"], "history": False},
    }
    path = tmp_path / "night.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _result(tmp_path: Path) -> dict[str, Any]:
    report = json.loads((tmp_path / "out" / "latest" / "report.json").read_text(encoding="utf-8"))
    (run,) = [r for r in report["runs"] if r["name"] == "run"]
    return dict(run)


def _loopback_items(loopback: LoopbackServer) -> Counter[str]:
    """The items the loopback was asked about, one count per request it received (any status)."""
    found: Counter[str] = Counter()
    for record in loopback.snapshot(settle=True):
        if record.path == CHAT:
            found.update(w[len("[item:") : -1] for w in record.user.split() if w.startswith("[item:"))
    return found


def _check_scores_and_failures(run: dict[str, Any]) -> None:
    """Every sample has a score in [0, 1], or a recorded failure with its cause (or, in a cascade, an
    abstention); nothing dropped, no transport failure."""
    failures = {f["query_id"]: f for f in run["failures"] if f["metric"] == METRIC}
    abstained = {n["query_id"] for n in run.get("not_applicable", []) if n["metric"] == METRIC}
    for i in range(N):
        q = f"q{i}"
        value = run["per_query"][q][METRIC]
        if q in failures:
            assert value is None and failures[q]["cause"] and failures[q]["message"], failures[q]
        elif q not in abstained:
            assert value is not None and 0.0 <= value <= 1.0, (q, value)
    assert not [f for f in failures.values() if f["cause"] in TRANSPORT], failures


@pytest.mark.timeout(1200)
def test_a_panel_asks_llama_cpp_and_the_loopback_each_unit_once_and_a_rerun_nothing(
    llama_server: LlamaServer, loopback: LoopbackServer, tmp_path: Path
) -> None:
    _data(tmp_path)
    config = _config(tmp_path, panel={"members": _members(llama_server, loopback)})
    before = llama_server.chat_requests(200)
    assert main(["run", str(config), "--no-progress"]) in (0, 1)
    # each (sample, metric) answered once: no retry, no repair (refused requests are the response-mode
    # negotiation: llama.cpp answers json_schema with a 500, and the client falls back to json_object)
    assert llama_server.chat_requests(200) - before == N
    assert _loopback_items(loopback) == {f"q{i}": 1 for i in range(N)}
    run = _result(tmp_path)
    _check_scores_and_failures(run)
    panel = run["metadata"]["judge"]["settings"]["panel"]
    members = {m["name"]: m for m in panel["members"]}
    assert members["smollm2"]["base_url"] == llama_server.url and members["smollm2"]["asked_units"] == N
    assert members["scripted"]["asked_units"] == N and members["scripted"]["failures"] == 0
    # a unit's panel score holds both members' verdicts; where llama.cpp's output was invalid, the unit failed
    # naming the member
    for q, value in ((q, s[METRIC]) for q, s in run["per_query"].items()):
        if value is None:
            (failure,) = [f for f in run["failures"] if f["query_id"] == q and f["metric"] == METRIC]
            assert "panel member 'smollm2'" in failure["message"], failure

    loopback.reset_records()
    before = llama_server.chat_requests()
    assert main(["run", str(config), "--no-progress"]) in (0, 1)
    assert llama_server.chat_requests() == before and not _loopback_items(loopback)
    again = _result(tmp_path)
    assert again["per_query"] == run["per_query"]
    assert [(f["query_id"], f["cause"]) for f in again["failures"]] == [
        (f["query_id"], f["cause"]) for f in run["failures"]
    ]

    # Output the transport carried but that is no verdict: cut off at 16 tokens (the least the settings take),
    # SmolLM2's JSON does not close (greedy decoding: the same each night). Each unit is a recorded failure with
    # its cause, naming the member; the night says it is incomplete (exit 3).
    cut_off = _config(tmp_path, panel={"members": _members(llama_server, loopback)}, max_tokens=16,
                      cache_path=str(tmp_path / "cut" / "v.sqlite"))  # fmt: skip
    before = llama_server.chat_requests(200)
    assert main(["run", str(cut_off), "--no-progress"]) == 3
    assert llama_server.chat_requests(200) - before == N
    failures = [f for f in _result(tmp_path)["failures"] if f["metric"] == METRIC]
    assert len(failures) == N and {f["cause"] for f in failures} == {"invalid_output"}
    assert all(f["message"].startswith("panel member 'smollm2'") for f in failures)
    assert all("cut off at 16 tokens (finish_reason=length)" in f["message"] for f in failures)

    # A cascade over the same cache, llama.cpp first: both judges' verdicts were asked by the panel under the
    # same identities (endpoint and model), so neither server is asked again. People agree with SmolLM2 except
    # on its least sure verdict, so its threshold is certified above that verdict (fixed-sequence testing,
    # computed here from its panel scores = P(yes)): that one goes up, with any it failed on, and the second
    # judge is asked about exactly those.
    p_yes = {
        q: next(v["score"] for v in d[METRIC]["verdicts"] if v["judge"] == "smollm2")
        for q, d in run["details"].items()
        if run["per_query"][q][METRIC] is not None
    }
    confidence = {q: max(p, 1.0 - p) for q, p in p_yes.items()}
    unsure = min(confidence, key=lambda q: confidence[q]) if confidence else None
    labels = ["sample_id,metric,label"]
    for i in range(N):
        q = f"q{i}"
        said = int(p_yes[q] > 0.5) if q in p_yes else i % 2
        labels.append(f"{q},{METRIC},{1 - said if q == unsure else said}")
    (tmp_path / "labels.csv").write_text("\n".join(labels) + "\n", encoding="utf-8")
    cut = fixed_sequence_threshold(
        list(confidence.values()), [q != unsure for q in confidence], target=0.5, delta=stage_delta(0.5, 2)
    ).threshold
    escalated = {f"q{i}" for i in range(N)} - {
        q for q, c in confidence.items() if cut is not None and c >= cut
    }
    cascade = _config(tmp_path, cascade=_members(llama_server, loopback), agreement=0.5, delta=0.5, held_out=0.0,
                      labels=str(tmp_path / "labels.csv"), confidence="logprobs")  # fmt: skip
    loopback.reset_records()
    before = llama_server.chat_requests()
    assert main(["run", str(cascade), "--no-progress"]) in (0, 1)
    assert llama_server.chat_requests() == before and not _loopback_items(loopback)
    routed = _result(tmp_path)
    summary = routed["metadata"]["extra"][f"cascade:{METRIC}"]
    first, second = summary["judges"]
    assert first["without_logprobs"] == 0 and first["decided"] == N - len(escalated)
    assert second["asked"] == len(escalated)
    kept_first = {
        q for q, d in routed["details"].items() if str(d[METRIC]["reason"]).startswith("decided by smollm2")
    }
    assert kept_first == {f"q{i}" for i in range(N)} - escalated
    assert first["threshold"] == (None if cut is None else pytest.approx(cut, abs=1e-5))


@pytest.mark.timeout(1200)
def test_a_cascade_reads_llama_cpp_logprobs_and_sends_the_loopback_only_what_it_escalates(
    llama_server: LlamaServer, loopback: LoopbackServer, tmp_path: Path
) -> None:
    _data(tmp_path)
    # agreement 0.5 with probability 0.5 (0.25 per judge) needs 2 calibration labels: every sample is labelled,
    # so the first judge's threshold is certified on whatever SmolLM2 says, and each sample is asked once.
    config = _config(tmp_path, cascade=_members(llama_server, loopback), agreement=0.5, delta=0.5,
                     held_out=0.0, labels=str(tmp_path / "labels.csv"), confidence="logprobs")  # fmt: skip
    before = llama_server.chat_requests(200)
    assert main(["run", str(config), "--no-progress"]) in (0, 1)
    assert llama_server.chat_requests(200) - before == N  # calibration and routing share each verdict
    run = _result(tmp_path)
    summary = run["metadata"]["extra"][f"cascade:{METRIC}"]
    first, second = summary["judges"]
    assert first["judge"] == "smollm2" and first["asked"] == N
    # llama.cpp states a probability for every verdict it gave: the confidence is read from real logprobs
    answered = N - first["failed"]
    assert first["without_logprobs"] == 0, summary
    decided_first = {
        q for q, d in run["details"].items() if str(d[METRIC]["reason"]).startswith("decided by smollm2")
    }
    assert len(decided_first) == first["decided"] <= answered
    for q in decided_first:
        (verdict,) = run["details"][q][METRIC]["verdicts"]
        probabilities = verdict["probabilities"]
        assert set(probabilities) <= {"yes", "no"} and 0.0 < sum(probabilities.values()) <= 1.0 + 1e-6
    # the scripted judge is asked exactly the items the first did not decide, once each
    escalated = {f"q{i}" for i in range(N)} - decided_first
    assert _loopback_items(loopback) == {q: 1 for q in escalated}
    assert second["asked"] == len(escalated)
    _check_scores_and_failures(run)
    assert summary["decided"] + summary["abstained"] + summary["failed"] == N

    loopback.reset_records()
    before = llama_server.chat_requests()
    assert main(["run", str(config), "--no-progress"]) in (0, 1)
    assert llama_server.chat_requests() == before and not _loopback_items(loopback)
    assert _result(tmp_path)["per_query"] == run["per_query"]
