"""`ragmetrics watch` against a real Phoenix server (`arize-phoenix`, started here on 127.0.0.1): an app
instrumented with the OpenTelemetry SDK sends its traces to Phoenix; the watcher reads them through Phoenix's
REST API with a cursor, judges a sample within its budget, and writes the scores back as span annotations;
after a restart in the middle, Phoenix's own REST API returns each annotation once."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
if importlib.util.find_spec("phoenix") is None:  # not imported here: the server runs in its own process
    pytest.skip("needs arize-phoenix (pip install arize-phoenix)", allow_module_level=True)
proto_http = pytest.importorskip(
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    reason="needs opentelemetry-exporter-otlp-proto-http",
)

from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.trace import Status, StatusCode  # noqa: E402

from ragmetrics.live import Watcher  # noqa: E402
from ragmetrics.live.config import WatchConfig  # noqa: E402
from ragmetrics.live.phoenix import IDENTIFIER, PhoenixClient, PhoenixError  # noqa: E402

from .helpers import FACTS, QUESTIONS, WRONG  # noqa: E402

PROJECT = "support-bot"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    workdir = tmp_path_factory.mktemp("phoenix")
    env = {
        **os.environ,
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    }
    log = (workdir / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "phoenix.server.main", "serve"], env=env, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        process.kill()
        pytest.fail(f"Phoenix did not start: {(workdir / 'server.log').read_text()[-2000:]}")
    yield url
    process.terminate()
    process.wait(timeout=30)
    log.close()


def _send(url: str, first: int, count: int) -> None:
    provider = TracerProvider(resource=Resource({"openinference.project.name": PROJECT}))
    provider.add_span_processor(SimpleSpanProcessor(proto_http.OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    tracer = provider.get_tracer("support-bot")
    for n in range(first, first + count):
        k = n % len(FACTS)
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", json.dumps({"question": QUESTIONS[k]}))
            with tracer.start_as_current_span("retrieve") as span:
                span.set_attribute("openinference.span.kind", "RETRIEVER")
                span.set_attribute("retrieval.documents.0.document.id", f"d{k}")
                span.set_attribute("retrieval.documents.0.document.content", FACTS[k])
            with tracer.start_as_current_span("llm") as llm:
                llm.set_attribute("openinference.span.kind", "LLM")
                llm.set_attribute("llm.token_count.total", 90)
                if n % 7 == 3:
                    llm.set_status(Status(StatusCode.ERROR, "rate limited upstream"))
            root.set_attribute("output.value", FACTS[k] if n % 3 else WRONG)
    provider.shutdown()


def _wait_for(client: PhoenixClient, spans: int) -> None:
    """Until Phoenix holds `spans` spans: its start-up states (the project not created yet, a 404; spans
    still being inserted; a refused connection) are waited through, not failed on."""
    deadline = time.monotonic() + 90
    seen, last = 0, ""
    while time.monotonic() < deadline:
        try:
            seen, cursor, more = 0, None, True
            while more:
                page, cursor, more = client.spans(cursor)
                seen += len(page)
        except PhoenixError as exc:  # NoSpansYet among them
            last = str(exc)
        if seen >= spans:
            return
        time.sleep(0.5)
    pytest.fail(f"Phoenix holds {seen} < {spans} spans after 90 s (last error: {last or 'none'})")


def test_watch_reads_phoenix_and_writes_annotations_once_across_a_restart(
    phoenix: str, tmp_path: Path
) -> None:
    config = WatchConfig.model_validate({
        "source": {"kind": "phoenix", "url": phoenix, "project": PROJECT, "settle_s": 0},
        "sampling": {"rate": 0.6, "max_calls_per_window": 10, "always": {"errors": True}},
        "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": None},
        "window": "1d",
        "output": str(tmp_path / "live"),
    })  # fmt: skip
    client = PhoenixClient(phoenix, PROJECT)
    _send(phoenix, 0, 9)
    _wait_for(client, 27)
    first = Watcher(config, say=lambda _m: None)
    one = first.poll(final=True)
    assert one.decided == 9 and one.annotated == one.sampled > 0
    first.close()  # a restart in the middle: more traffic arrives while the watcher is down
    _send(phoenix, 9, 9)
    _wait_for(client, 54)
    second = Watcher(config, say=lambda _m: None)
    two = second.poll(final=True)
    assert two.decided == 9  # the cursor resumed after the first nine traces: none read twice
    again = second.poll(final=True)  # nothing new: nothing decided, nothing written again
    assert again.decided == 0 and again.annotated == 0
    rows = second.store.db.execute(
        "SELECT trace_id, root_span, sampled, window, reason FROM traces"
    ).fetchall()
    per_window: dict[str, int] = {}
    for _, _, sampled, window, _ in rows:
        per_window[window] = per_window.get(window, 0) + sampled
    assert all(count <= 10 for count in per_window.values())  # the budget: 10 calls of one metric per window
    assert any("ERROR" in reason for *_, reason in rows if reason.startswith("always"))
    sampled_roots = {root for _, root, sampled, _, _ in rows if sampled}
    all_roots = [root for _, root, _, _, _ in rows]
    second.close()
    annotations = client.annotations_of(all_roots)
    ours = [a for a in annotations if a.get("identifier") == IDENTIFIER]
    assert sorted(a["span_id"] for a in ours) == sorted(sampled_roots)  # one per judged trace, on its root
    assert all(a["name"] == "faithfulness" and a["annotator_kind"] == "CODE" for a in ours)
    wrong = [a for a in ours if a["result"]["label"] == "fail"]
    assert wrong and all(a["result"]["score"] < 0.5 and a["result"]["explanation"] for a in wrong)


CONVERSATION_PROJECT = "support-chat"


def _send_turn(url: str, session: str, question: str, context: str, answer: str, *, error: bool) -> None:
    provider = TracerProvider(resource=Resource({"openinference.project.name": CONVERSATION_PROJECT}))
    provider.add_span_processor(SimpleSpanProcessor(proto_http.OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    tracer = provider.get_tracer("support-chat")
    with tracer.start_as_current_span("rag") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("session.id", session)
        root.set_attribute("input.value", json.dumps({"question": question}))
        with tracer.start_as_current_span("retrieve") as span:
            span.set_attribute("openinference.span.kind", "RETRIEVER")
            span.set_attribute("retrieval.documents.0.document.id", f"doc-{abs(hash(context)) % 1000}")
            span.set_attribute("retrieval.documents.0.document.content", context)
        root.set_attribute("output.value", answer)
        if error:
            root.set_status(Status(StatusCode.ERROR, "flagged by the user"))
    provider.shutdown()


def test_a_phoenix_conversation_split_across_polls_is_judged_with_its_earlier_turns(
    phoenix: str, tmp_path: Path
) -> None:
    from ragmetrics.judge.backends.local import LocalJudge
    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.traces.openinference import traces_from_spans

    config = WatchConfig.model_validate({
        "source": {"kind": "phoenix", "url": phoenix, "project": CONVERSATION_PROJECT, "settle_s": 0},
        "sampling": {"rate": 0.0, "always": {"errors": True}},  # only flagged turns are judged
        "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": None},
        "window": "1d", "output": str(tmp_path / "live"), "write_back": None,
    })  # fmt: skip
    client = PhoenixClient(phoenix, CONVERSATION_PROJECT)
    watcher = Watcher(config, say=lambda _m: None)
    _send_turn(phoenix, "c1", "When did the harbour bridge open?", FACTS[0], FACTS[0], error=False)
    _wait_for(client, 2)
    first = watcher.poll(final=True)
    assert first.decided == 1 and first.sampled == 0  # turn 1: read, not judged, its spans dropped
    _send_turn(phoenix, "c1", "How long does the library lend books?", FACTS[1], FACTS[1], error=False)
    _wait_for(client, 4)
    watcher.poll(final=True)
    _send_turn(phoenix, "c1", "Remind me about the bridge?", FACTS[1], FACTS[0], error=True)
    _wait_for(client, 6)
    third = watcher.poll(final=True)
    assert third.sampled == 1
    judged = watcher.store.db.execute(
        "SELECT trace_id, value FROM scores WHERE metric = 'faithfulness' AND value IS NOT NULL"
    ).fetchall()
    watcher.close()
    assert len(judged) == 1
    trace_id, live_value = judged[0]
    spans, cursor, more = [], None, True
    while more:
        page, cursor, more = client.spans(cursor)
        spans.extend(page)
    offline = evaluate_rag(traces_from_spans(spans).samples, ["faithfulness"], LocalJudge(), progress=False)
    assert offline.per_query[trace_id]["faithfulness"] == live_value  # as score --traces judges the same spans
    assert live_value >= 0.5  # turn 1's passage supports what turn 3 restates
