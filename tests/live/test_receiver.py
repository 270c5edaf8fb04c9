"""The OTLP/HTTP receiver fed by OpenTelemetry's own OTLP HTTP exporters, protobuf and JSON: the traces judged
from what it received score as the same spans read from the Collector-format file; a burst beyond the spool
is refused with 503 (exporters retry), never queued in memory; bad bodies get 400 with the reason."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs opentelemetry-sdk (the 'traces' extra)")
proto_http = pytest.importorskip(
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    reason="needs opentelemetry-exporter-otlp-proto-http",
)
json_http = pytest.importorskip(
    "opentelemetry.exporter.otlp.json.http.trace_exporter",
    reason="needs opentelemetry-exporter-otlp-json-http",
)

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.trace import Status, StatusCode  # noqa: E402

from ragmetrics.live import Watcher  # noqa: E402
from ragmetrics.live.config import WatchConfig  # noqa: E402
from ragmetrics.traces.sdk import OtlpJsonFileExporter  # noqa: E402

from .helpers import FACTS, QUESTIONS, WRONG  # noqa: E402


def _config(tmp_path: Path, name: str, source: dict[str, Any]) -> WatchConfig:
    return WatchConfig.model_validate({
        "source": {**source, "settle_s": 0},
        "sampling": {"rate": 1.0},
        "judge": {"backend": "local", "metrics": ["faithfulness", "answer_relevancy"], "cache_path": None},
        "output": str(tmp_path / name),
    })  # fmt: skip


def _traces(provider: TracerProvider, offset: int) -> None:
    tracer = provider.get_tracer("app")
    for i in range(4):
        k = (i + offset) % len(FACTS)
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", json.dumps({"question": QUESTIONS[k]}))
            root.set_attribute("session.id", f"s{offset}-{i // 2}")
            with tracer.start_as_current_span("retrieve") as span:
                span.set_attribute("openinference.span.kind", "RETRIEVER")
                span.set_attribute("retrieval.documents.0.document.id", f"d{k}")
                span.set_attribute("retrieval.documents.0.document.content", FACTS[k])
            with tracer.start_as_current_span("llm") as llm:
                llm.set_attribute("openinference.span.kind", "LLM")
                llm.set_attribute("llm.token_count.total", 100 + i)
                if i == 3:
                    llm.set_status(Status(StatusCode.ERROR, "upstream timeout"))
            root.set_attribute("output.value", FACTS[k] if i % 2 == 0 else WRONG)


def _scores(watcher: Watcher) -> dict[str, dict[str, float | None]]:
    rows = watcher.store.db.execute("SELECT trace_id, metric, value FROM scores").fetchall()
    out: dict[str, dict[str, float | None]] = {}
    for trace_id, metric, value in rows:
        out.setdefault(trace_id, {})[metric] = value
    return out


def test_protobuf_and_json_exports_score_as_the_same_spans_from_a_file(tmp_path: Path) -> None:
    receiving = Watcher(
        _config(tmp_path, "received", {"kind": "receiver", "listen": "127.0.0.1:0"}), say=lambda _m: None
    )
    receiving.start()
    assert receiving.receiver is not None
    endpoint = f"{receiving.receiver.url}/v1/traces"
    file = tmp_path / "traces.jsonl"
    for offset, exporter in ((0, proto_http.OTLPSpanExporter(endpoint=endpoint)),
                             (2, json_http.OTLPSpanExporter(endpoint=endpoint))):  # fmt: skip
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(file)))
        _traces(provider, offset)
        provider.shutdown()
    assert receiving.receiver.accepted_spans == 24  # 8 traces of 3 spans
    received = receiving.poll(final=True)
    assert received.decided == 8 and received.scored == 8
    from_file = Watcher(
        _config(tmp_path, "file", {"kind": "otlp_file", "path": str(file)}), say=lambda _m: None
    )
    from_file.poll(final=True)
    assert _scores(receiving) == _scores(from_file) and len(_scores(receiving)) == 8
    errors = receiving.store.db.execute(
        "SELECT COUNT(*) FROM traces WHERE reason = 'always: an ERROR span'"
    ).fetchone()
    assert errors[0] == 2  # the status of the LLM span came through protobuf and JSON alike
    # everything read: the spool is emptied, and the cursor starts again at its beginning
    assert receiving.receiver.spool.stat().st_size == 0
    receiving.close()
    from_file.close()


def _post(url: str, body: bytes, content_type: str) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_bad_bodies_and_a_full_spool(tmp_path: Path) -> None:
    config = _config(tmp_path, "r", {"kind": "receiver", "listen": "127.0.0.1:0", "max_spool_mb": 0.001})
    watcher = Watcher(config, say=lambda _m: None)
    watcher.start()
    assert watcher.receiver is not None
    url = f"{watcher.receiver.url}/v1/traces"
    status, text = _post(url, b"{not json", "application/json")
    assert status == 400 and "Expecting" in text
    status, text = _post(url, b"\x01\x02garbage", "application/x-protobuf")
    assert status == 400 and "not an OTLP protobuf trace export" in text
    status, _ = _post(url, b"{}", "text/plain")
    assert status == 415
    import http.client

    host, port = watcher.receiver.server.server_address[:2]
    conn = http.client.HTTPConnection(str(host), int(port), timeout=5)
    conn.putrequest("POST", "/v1/traces")
    conn.putheader("Content-Type", "application/json")
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 411 and b"Content-Length" in response.read()
    conn.close()
    good = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "x", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
    ]}]}]}).encode()  # fmt: skip
    codes = [_post(url, good, "application/json")[0] for _ in range(40)]
    assert codes[0] == 200 and 503 in codes  # past the spool's bound: refused, for the exporter to retry
    assert watcher.receiver.refused == codes.count(503)
    watcher.poll(final=True)  # the watcher reads the spool and empties it: the receiver accepts again
    assert _post(url, good, "application/json")[0] == 200
    watcher.close()
