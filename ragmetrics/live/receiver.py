"""An OTLP/HTTP trace receiver for teams without a trace store: POST /v1/traces, protobuf
(`application/x-protobuf`, as OpenTelemetry's OTLP HTTP exporters send by default) or JSON
(`application/json`), gzip or not, as the OTLP specification describes.

Every accepted request is appended to a spool file (one OTLP JSON export per line, flushed and fsynced)
before the exporter gets its 200, so an accepted span survives a crash; the watcher reads the spool like any
OTLP file (`sources.OtlpFileTail`), from its own cursor. Memory stays flat under a burst: nothing is queued in
memory, and when the unread spool reaches `max_spool_bytes` the receiver answers 503 with Retry-After, which
OTLP exporters honour by retrying later. A request that is not an OTLP trace export gets 400 with the reason.
The spool is emptied once the watcher has read all of it.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ragmetrics.errors import InputError
from ragmetrics.traces.otlp import spans_of_request

__all__ = ["OtlpReceiver", "protobuf_to_json"]

MAX_BODY = 32 << 20
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(node: Any) -> None:
    """protobuf's JSON mapping writes bytes as base64; OTLP JSON writes trace and span ids as hex."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_FIELDS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)


def protobuf_to_json(body: bytes) -> dict[str, Any]:
    """An ExportTraceServiceRequest in protobuf as the OTLP JSON export it encodes."""
    try:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:  # pragma: no cover - the extra is missing
        raise InputError(
            "protobuf OTLP needs the opentelemetry-proto package (pip install opentelemetry-proto)"
        ) from None
    message = ExportTraceServiceRequest()
    try:
        message.ParseFromString(body)
    except Exception as exc:  # protobuf's DecodeError
        raise InputError(f"not an OTLP protobuf trace export: {exc}") from None
    data: dict[str, Any] = MessageToDict(message)
    _hex_ids(data)
    return data


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], receiver: OtlpReceiver) -> None:
        self.receiver = receiver
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # the watcher reports what matters
        return

    def _reply(
        self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        receiver = self.server.receiver
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        protobuf = kind in ("application/x-protobuf", "application/protobuf")
        reply_type = "application/x-protobuf" if protobuf else "application/json"
        if self.path.split("?")[0] != "/v1/traces":
            self._reply(404, b'{"message": "POST OTLP traces to /v1/traces"}', "application/json")
            return
        declared = self.headers.get("Content-Length")
        if declared is None or not declared.strip().isdigit() or int(declared) == 0:
            self._reply(
                411, b'{"message": "a Content-Length with the body\'s size is required"}', "application/json"
            )
            return
        length = int(declared)
        if length > MAX_BODY:
            too_big = json.dumps({"message": f"body of {length} bytes is over the {MAX_BODY} byte limit"})
            self._reply(413, too_big.encode(), "application/json")
            return
        body = self.rfile.read(length)
        if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
            try:
                body = gzip.decompress(body)
            except OSError:
                self._reply(400, b'{"message": "bad gzip body"}', "application/json")
                return
        if receiver.spool_full():
            receiver.refused += 1
            self._reply(
                503, b'{"message": "spool full, retry later"}', "application/json", {"Retry-After": "5"}
            )
            return
        try:
            if protobuf:
                request = protobuf_to_json(body)
            elif kind == "application/json":
                request = json.loads(body)
            else:
                self._reply(
                    415, b'{"message": "send application/x-protobuf or application/json"}', "application/json"
                )
                return
            spans = spans_of_request(request, source="OTLP/HTTP request")
        except (InputError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            message = json.dumps({"message": str(exc)[:500]}).encode()
            self._reply(400, message, "application/json")
            return
        receiver.append(request, len(spans))
        self._reply(200, b"" if protobuf else b"{}", reply_type)


class OtlpReceiver:
    def __init__(self, listen: str, spool: Path, *, max_spool_bytes: int) -> None:
        host, _, port = listen.rpartition(":")
        spool.parent.mkdir(parents=True, exist_ok=True)
        self.spool = spool
        self.max_spool_bytes = max_spool_bytes
        self._lock = threading.Lock()
        self._consumed = 0
        self.accepted_spans = 0
        self.refused = 0
        self.server = _Server((host, int(port)), self)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{name}:{port}"

    def start(self) -> OtlpReceiver:
        self._thread = threading.Thread(target=self.server.serve_forever, name="otlp-receiver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def spool_full(self) -> bool:
        try:
            size = self.spool.stat().st_size
        except FileNotFoundError:
            return False
        return size - self._consumed >= self.max_spool_bytes

    def writing(self) -> threading.Lock:
        """The lock appends take: held, nothing is written to the spool (it may be renamed)."""
        return self._lock

    def append(self, request: dict[str, Any], spans: int) -> None:
        line = (json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        with self._lock:
            with self.spool.open("ab") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            self.accepted_spans += spans

    def consumed(self, offset: int) -> bool:
        """The watcher has read the spool up to `offset`; when that is all of it, empty it (True)."""
        with self._lock:
            self._consumed = offset
            try:
                size = self.spool.stat().st_size
            except FileNotFoundError:
                return False
            if offset >= size and size > 0:
                with self.spool.open("r+b") as handle:
                    handle.truncate(0)
                    os.fsync(handle.fileno())
                self._consumed = 0
                return True
        return False
