"""Property and fuzz layer over what ragmetrics reads from outside (issue 41): generated inputs for the readers
(JSONL bytes, dataset rows, TREC runs and qrels, labels, history lines), the config loader and the labelling
page's HTTP surface. The property is the same everywhere: an input is read, or refused with ragmetrics' own
error (InputError / ConfigError, exit 2 at the CLI); never another exception, a hang or a server without an
answer.

Budget: `RAGMETRICS_FUZZ_EXAMPLES` examples per test (default 200, what CI runs; docs/robustness.md records a
run at 20,000 per reader). Hypothesis shrinks any finding to a minimal input and prints it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import string
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmetrics.errors import ConfigError, InputError, RagmetricsError

EXAMPLES = int(os.environ.get("RAGMETRICS_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=EXAMPLES <= 200,  # CI's budget: the same inputs every run, so a failure is reproducible
)
OURS = (InputError, ConfigError)

_json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
)  # fmt: skip
json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)
FIELDS = ["id", "question", "answer", "reference", "contexts", "context_ids", "retrieved_ids",
          "retrieved_scores", "relevant_ids", "relevant_grades", "language", "conversation", "conversation_id",
          "turn", "messages", "tool_calls"]  # fmt: skip
rows = st.lists(st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), json_values, max_size=8),
                min_size=1, max_size=6)  # fmt: skip


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ragmetrics-fuzz-") as path:
        yield Path(path)


def _file(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


@FUZZ
@given(data=st.binary(max_size=600) | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_jsonl_bytes_are_read_or_refused(folder: Path, data: bytes) -> None:
    from ragmetrics._jsonl import read_jsonl
    from ragmetrics.nightly.qa_files import checked_jsonl

    path = _file(folder, "f.jsonl", data)
    for read in (
        lambda: read_jsonl(path),
        lambda: checked_jsonl(path, "skip"),
        lambda: checked_jsonl(path, "fail"),
    ):
        with contextlib.suppress(*OURS):
            read()


@FUZZ
@given(rows=rows, on_bad_row=st.sampled_from(["fail", "skip"]), ranked=st.booleans())
def test_dataset_rows_are_validated_or_refused(
    rows: list[dict[str, Any]], on_bad_row: str, ranked: bool
) -> None:
    from ragmetrics.nightly.dataset import validate_rows

    try:
        dataset = validate_rows(rows, source="fuzz", on_bad_row=on_bad_row, ranked_relevance=ranked)  # type: ignore[arg-type]
    except OURS:
        return
    for sample in dataset.samples:
        json.dumps(sample.model_dump(mode="json"), allow_nan=False)  # what was accepted is finite, valid text


_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool", "bot"]) | json_values},
    optional={
        "content": json_values,
        "contexts": json_values,
        "tool_calls": json_values,
        "reference": json_values,
    },
)
conversation_rows = st.lists(
    st.fixed_dictionaries(
        {"messages": st.lists(_message, max_size=6) | json_values}, optional={"id": json_values}
    ),
    min_size=1,
    max_size=4,
)


@FUZZ
@given(rows=conversation_rows, on_bad_row=st.sampled_from(["fail", "skip"]))
def test_conversations_as_messages_are_validated_or_refused(
    rows: list[dict[str, Any]], on_bad_row: str
) -> None:
    from ragmetrics.nightly.dataset import validate_rows

    try:
        dataset = validate_rows(rows, source="fuzz", on_bad_row=on_bad_row)  # type: ignore[arg-type]
    except OURS:
        return
    for sample in dataset.samples:
        assert sample.conversation_id is not None and sample.turn is not None
        json.dumps(sample.model_dump(mode="json"), allow_nan=False)


_ATTRIBUTE_KEYS = ["input.value", "output.value", "openinference.span.kind", "session.id", "metadata",
                   "retrieval.documents.0.document.id", "retrieval.documents.0.document.content",
                   "retrieval.documents.1.document.score", "retrieval.documents.0.document.metadata",
                   "reranker.output_documents.0.document.id", "llm.token_count.total", "llm.cost.total",
                   "llm.model_name", "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
                   "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"]  # fmt: skip
_otlp_value = st.one_of(
    st.builds(lambda v: {"stringValue": v}, st.sampled_from(["CHAIN", "RETRIEVER", "LLM", "RERANKER", "{}", "[]"]) | st.text(max_size=20)),
    st.builds(lambda v: {"intValue": v}, st.integers() | st.text(max_size=6)),
    st.builds(lambda v: {"doubleValue": v}, st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6)),
    st.builds(lambda v: {"boolValue": v}, json_values),
    json_values,
)  # fmt: skip
_span = st.fixed_dictionaries(
    {"traceId": st.sampled_from(["t1", "t2"]) | json_values, "spanId": st.sampled_from(["a", "b", "c"]) | json_values},
    optional={
        "parentSpanId": st.sampled_from(["a", "b", "", "zz"]) | json_values,
        "name": st.text(max_size=8) | json_values,
        "startTimeUnixNano": st.integers(min_value=-5, max_value=10**20).map(str) | json_values,
        "endTimeUnixNano": st.integers(min_value=-5, max_value=10**20).map(str) | json_values,
        "attributes": st.lists(st.fixed_dictionaries({"key": st.sampled_from(_ATTRIBUTE_KEYS) | json_values,
                                                      "value": _otlp_value}), max_size=8) | json_values,
    },
)  # fmt: skip
otlp_lines = st.lists(
    st.builds(
        lambda spans: {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, st.lists(_span, max_size=5)
    )
    | json_values,
    min_size=1,
    max_size=3,
).map(lambda requests: "".join(json.dumps(r) + "\n" for r in requests).encode())
_observation = st.fixed_dictionaries(
    {"id": st.sampled_from(["o1", "o2"]) | json_values},
    optional={"type": st.sampled_from(["RETRIEVER", "GENERATION", "SPAN", "TOOL"]) | json_values,
              "name": st.sampled_from(["retrieve", "search", "x"]) | json_values,
              "startTime": st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T00:00:00", "nope"]) | json_values,
              "endTime": st.sampled_from(["2026-01-01T00:00:01Z", "9999-12-31T23:59:59+14:00"]) | json_values,
              "output": json_values, "usageDetails": json_values, "costDetails": json_values, "model": json_values,
              "parentObservationId": json_values},
)  # fmt: skip
_langfuse_trace = st.fixed_dictionaries(
    {"id": st.sampled_from(["t1", "t2"]) | json_values, "observations": st.lists(_observation, max_size=4) | json_values},
    optional={"timestamp": st.sampled_from(["2026-01-01T00:00:00Z", "0001-01-01T00:00:00+00:00"]) | json_values,
              "input": json_values, "output": json_values, "sessionId": json_values, "metadata": json_values,
              "latency": json_values},
)  # fmt: skip
langfuse_files = st.lists(_langfuse_trace, min_size=1, max_size=3).map(
    lambda t: json.dumps({"data": t}).encode()
)


@FUZZ
@given(
    data=otlp_lines | langfuse_files | st.binary(max_size=300),
    fmt=st.sampled_from(["auto", "otlp", "langfuse"]),
)
def test_trace_files_are_read_or_refused(folder: Path, data: bytes, fmt: str) -> None:
    """Traces are read, or refused with our error, through the reader and through a night's dataset."""
    from ragmetrics.nightly.config import DatasetConfig
    from ragmetrics.nightly.load import load_dataset
    from ragmetrics.traces import read_traces

    path = _file(folder, "traces.jsonl", data)
    with contextlib.suppress(*OURS):
        traces = read_traces(path, format=fmt)
        for sample in traces.samples:
            json.dumps(sample.model_dump(mode="json"), allow_nan=False)
    with contextlib.suppress(*OURS):
        load_dataset(DatasetConfig(traces=path), progress=False)


_trec_token = st.one_of(
    st.text(alphabet=string.ascii_letters + string.digits + "-_.", min_size=1, max_size=6),
    st.sampled_from(["0", "Q0", "1e309", "nan", "-inf", "99999999999999999999", "1.5", "-3", ""]),
)
trec_lines = st.lists(st.lists(_trec_token, min_size=0, max_size=7).map(" ".join), max_size=8).map("\n".join)


@FUZZ
@given(text=trec_lines | st.text(max_size=200))
def test_trec_runs_and_qrels_are_read_or_refused(folder: Path, text: str) -> None:
    from ragmetrics.retrieval.diversity import SubtopicQrels
    from ragmetrics.retrieval.qrels import Qrels
    from ragmetrics.retrieval.run import Run

    path = _file(folder, "r.txt", text.encode("utf-8", "surrogatepass"))
    for read in (Run.from_trec, Qrels.from_trec, SubtopicQrels.from_trec):
        with contextlib.suppress(*OURS):
            read(path)


@FUZZ
@given(data=st.binary(max_size=400) | rows.map(lambda r: "".join(json.dumps(x) + "\n" for x in r).encode()))
def test_label_files_are_read_or_refused(folder: Path, data: bytes) -> None:
    from ragmetrics.trust.labels import load_labels

    for name in ("l.jsonl", "l.csv"):
        with contextlib.suppress(*OURS):
            load_labels(_file(folder, name, data))


@FUZZ
@given(lines=st.lists(json_values.map(json.dumps) | st.text(max_size=80), max_size=6))
def test_history_lines_never_break_the_history(folder: Path, lines: list[str]) -> None:
    from ragmetrics.history.store import HISTORY_FILE, load_history

    root = folder / "out"
    root.mkdir(exist_ok=True)
    text = "\n".join(lines) + "\n"
    (root / HISTORY_FILE).write_text(text, encoding="utf-8", errors="surrogatepass")
    history = load_history(root)  # damaged lines are problems, never exceptions
    assert len(history.records) + len(history.problems) <= text.count("\n")


_config_keys = st.sampled_from(["dataset", "runs", "judge", "output", "baseline", "gate", "metrics", "name",
                                "human_labels", "generator", "max_failure_rate", "retrieval", "testset"])  # fmt: skip
configs = st.dictionaries(_config_keys | st.text(max_size=8), json_values, max_size=5)


@FUZZ
@given(config=configs | st.text(max_size=200))
def test_configs_load_or_are_refused(folder: Path, config: Any) -> None:
    from ragmetrics.nightly.config import load_config

    text = config if isinstance(config, str) else yaml.safe_dump(config, allow_unicode=True)
    path = _file(folder, "c.yaml", text.encode("utf-8", "surrogatepass"))
    with contextlib.suppress(*OURS):
        load_config(path)


# -- the labelling page's HTTP surface ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def label_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from ragmetrics.labeling.server import LabelServer
    from ragmetrics.labeling.session import LabelSession
    from tests.labeling.helpers import make_report

    root = tmp_path_factory.mktemp("fuzz-label")
    make_report(root / "report")
    session = LabelSession(root / "report", "faithfulness", root / "labels.jsonl", target=5)
    server = LabelServer(session).start()
    yield server
    server.stop()


_methods = st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "BREW"])
_paths = st.sampled_from(
    [
        "/",
        "/api/status",
        "/api/item/0",
        "/api/item/-1",
        "/api/item/x",
        "/api/next",
        "/api/next?after=3",
        "/api/next?after=",
        "/api/label",
        "/api/finish",
        "/label.js",
        "/../etc/passwd",
        "/api/item/99999999999999999999",
    ]
) | st.text(alphabet=string.printable.replace("\r", "").replace("\n", "").replace(" ", ""), max_size=30).map(
    lambda t: "/" + t
)
_header_values = st.text(alphabet=string.printable.replace("\r", "").replace("\n", ""), max_size=30)


@FUZZ
@given(method=_methods, path=_paths, body=st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()),
       length=st.none() | _header_values, host_ok=st.booleans(), token_ok=st.booleans(),
       content_type=st.sampled_from(["application/json", "text/plain", ""]))  # fmt: skip
def test_the_label_server_answers_every_request_without_a_server_error(
    label_server: Any,
    method: str,
    path: str,
    body: bytes,
    length: str | None,
    host_ok: bool,
    token_ok: bool,
    content_type: str,
) -> None:
    from ragmetrics.labeling.server import TOKEN_HEADER

    host = f"127.0.0.1:{label_server.port}" if host_ok else "evil.example"
    headers = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"Content-Type: {content_type}",
               f"{TOKEN_HEADER}: {label_server.token if token_ok else 'x'}",
               f"Content-Length: {len(body) if length is None else length}", "Connection: close"]  # fmt: skip
    request = ("\r\n".join(headers) + "\r\n\r\n").encode("utf-8", "surrogatepass") + body
    with socket.create_connection(("127.0.0.1", label_server.port), timeout=10) as sock:
        sock.sendall(request)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1."), (request[:200], reply[:200])
    status = int(reply.split(b" ", 2)[1])
    assert status < 500, (request[:200], reply[:300])
    label_server.finished.clear()


def test_our_errors_are_one_family() -> None:
    assert issubclass(InputError, RagmetricsError) and issubclass(ConfigError, RagmetricsError)
