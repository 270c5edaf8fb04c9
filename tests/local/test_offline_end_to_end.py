"""The local judge end to end through evaluate_rag, in-process and in a subprocess with the network blocked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ragmetrics.embeddings import MiniLMEmbedder
from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.base import JUDGE_METRICS
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.registry import CLAIM_DIAGNOSTIC_NAMES, spec

ROOT = Path(__file__).resolve().parents[2]

SAMPLES = [
    {
        "id": "json",
        "question": "How do I parse a JSON string in Python?",
        "contexts": [
            "The json.loads() function parses a JSON document held in a str. It returns Python objects.",
            "The csv module reads and writes comma-separated values files.",
        ],
        "answer": "Call json.loads() on the string to get Python objects.",
        "reference": "Use json.loads() to turn a JSON string into Python objects.",
    },
    {
        "id": "walk",
        "question": "How do I visit every file in a directory tree?",
        "contexts": [
            "os.rename(src, dst) renames a file or directory.",
            "os.walk(top) yields a (dirpath, dirnames, filenames) tuple for each directory in the tree.",
        ],
        "answer": "Iterate over os.walk(root) and look at the filenames of each step.",
        "reference": "os.walk() walks the tree and yields the file names of each directory.",
    },
    {"id": "no-reference", "question": "What does enumerate do?", "contexts": ["enumerate() yields pairs."]},
]

JUDGED = [m for m in JUDGE_METRICS if spec(m).plan != "deterministic"]  # the deterministic ones ask no judge


def test_evaluate_rag_with_local_judge(embedder: MiniLMEmbedder) -> None:
    result = evaluate_rag(SAMPLES, JUDGED, LocalJudge(embedder), name="local", progress=False)
    assert result.metadata.judge is not None and result.metadata.judge.backend == "local"
    assert result.metadata.metric_settings["backend"] == "local"
    assert result.per_query["json"]["context_precision"] == 1.0
    assert result.per_query["walk"]["context_precision"] == 0.5  # the useful chunk is ranked second
    assert result.per_query["walk"]["context_recall"] == 1.0
    # The third sample has no answer and no reference: those metrics fail with a cause, never NaN.
    missing = {(f.query_id, f.metric) for f in result.failures}
    assert missing == {
        ("no-reference", "context_precision"),
        ("no-reference", "context_recall"),
        ("no-reference", "context_utilization"),
        ("no-reference", "answer_relevancy"),
        ("no-reference", "faithfulness"),
        ("no-reference", "answer_similarity"),
        ("no-reference", "answer_correctness"),
    } | {("no-reference", m) for m in CLAIM_DIAGNOSTIC_NAMES}
    assert result.per_query["no-reference"]["context_relevancy"] is not None
    assert all(v is not None for m, v in result.aggregate.items())
    reasons = result.details["json"]["context_precision"].verdicts
    assert reasons[0]["reason"].startswith("best cosine")


_BLOCKED_RUN = r"""
import json, socket, sys

ALLOWED = ("127.0.0.1", "::1", "localhost")
attempts = []

def _host(address):
    return address[0] if isinstance(address, tuple) else address

_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex
_create = socket.create_connection

def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and _host(address) not in ALLOWED:
        attempts.append(str(address))
        raise ConnectionRefusedError(f"network blocked by test: {address}")
    return _connect(self, address)

def connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and _host(address) not in ALLOWED:
        attempts.append(str(address))
        return 111
    return _connect_ex(self, address)

def create_connection(address, *args, **kwargs):
    if _host(address) not in ALLOWED:
        attempts.append(str(address))
        raise ConnectionRefusedError(f"network blocked by test: {address}")
    return _create(address, *args, **kwargs)

socket.socket.connect = connect
socket.socket.connect_ex = connect_ex
socket.create_connection = create_connection

try:
    socket.create_connection(("93.184.216.34", 80), timeout=1)
    print("NOT BLOCKED")
    sys.exit(3)
except ConnectionRefusedError:
    attempts.clear()

import ragmetrics
samples = json.loads(sys.stdin.read())
result = ragmetrics.evaluate_rag(samples, ["context_precision", "context_recall", "context_relevancy",
                                           "answer_relevancy"], progress=False)
print(json.dumps({"attempts": attempts, "result": json.loads(result.model_dump_json())}))
"""


def test_local_judge_runs_with_network_blocked() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY" and not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", _BLOCKED_RUN],
        input=json.dumps(SAMPLES[:2]),
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["attempts"] == []  # nothing even tried to leave the machine
    result = out["result"]
    assert result["metadata"]["judge"]["backend"] == "local"
    assert result["failures"] == []
    assert result["per_query"]["json"]["context_precision"] == 1.0
    assert "local judge" in proc.stderr  # the one-line notice that the fallback was taken
