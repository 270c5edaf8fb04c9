"""A team's RAG system behind HTTP, on 127.0.0.1, with scripted faults: what an HTTP pipeline target meets.

POST /answer answers from the test passages (the best word-overlap passage and its text as the answer);
POST /generate answers from the contexts it is sent. Faults are queued per path: `fail(path, status, times)`,
`redirect(path, location)`, `endless(path)` (headers, then a body that never ends), `huge(path, mib)`,
`garbage(path)` (200 with a body that is not JSON), `slow(latency_s)` for every request. Every request is
recorded with its headers and body. Every loop is bounded: an endless body stops after 30 s or on stop().
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WORD = re.compile(r"[a-z_]{3,}")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


@dataclass
class _State:
    passages: list[dict[str, str]]
    latency_s: float = 0.0
    faults: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, status: int, payload: Any) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(length)
        try:
            payload = json.loads(raw)
        except json.JSONDecodeError:
            payload = None
        with state.lock:
            state.requests.append({"path": self.path, "headers": dict(self.headers), "body": payload})
            queue = state.faults.get(self.path, [])
            fault = queue.pop(0) if queue else None
        if state.latency_s:
            time.sleep(state.latency_s)
        if fault is not None and fault[0] != "ok":
            kind, arg = fault
            if kind == "status":
                self._json(arg, {"error": f"scripted {arg}", "echo": self.headers.get("authorization")})
                return
            if kind == "redirect":
                self.send_response(307)
                self.send_header("location", arg)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            if kind == "garbage":
                body = b"<html>not json</html>"
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if kind == "huge":
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                chunk = b"x" * 65536
                try:
                    for _ in range(arg * 16):
                        self.wfile.write(chunk)
                except OSError:
                    pass
                self.close_connection = True
                return
            if kind == "endless":
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                deadline = time.monotonic() + 30
                try:
                    self.wfile.write(b'{"answer": "')
                    while time.monotonic() < deadline and not state.stopping.is_set():
                        self.wfile.write(b"a")
                        self.wfile.flush()
                        time.sleep(0.02)
                except OSError:
                    pass
                self.close_connection = True
                return
        if self.path == "/answer" and isinstance(payload, dict):
            self._json(200, self._answer(payload))
        elif self.path == "/echo" and isinstance(payload, dict):  # a leaky service: the token in its answer
            answer = self._answer(payload)
            answer["answer"] += f" (served for {self.headers.get('authorization')})"
            self._json(200, answer)
        elif self.path == "/generate" and isinstance(payload, dict):
            contexts = payload.get("contexts") or []
            self._json(200, {"answer": contexts[0] if contexts else "I don't know.", "tokens": 7})
        else:
            self._json(404, {"error": "no such path"})

    def _answer(self, payload: dict[str, Any]) -> dict[str, Any]:
        question = _words(str(payload.get("question", "")))
        ranked = sorted(
            self.server.state.passages,
            key=lambda p: (-len(question & _words(p["text"])), p["id"]),
        )[:2]
        return {
            "answer": ranked[0]["text"],
            "contexts": [p["text"] for p in ranked],
            "usage": {"prompt_tokens": 40, "completion_tokens": 10},
            "cost": 0.002,
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: _State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class TargetServer:
    """Start with `.start()`, stop with `.stop()`; `url(path)` is where a config points."""

    def __init__(self, passages: list[dict[str, str]], latency_s: float = 0.0) -> None:
        self.state = _State(passages=passages, latency_s=latency_s)
        self._server = _Server(self.state)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> TargetServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.state.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def url(self, path: str = "/answer") -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{path}"

    def _queue(self, path: str, kind: str, arg: Any, times: int) -> None:
        with self.state.lock:
            self.state.faults.setdefault(path, []).extend([(kind, arg)] * times)

    def fail(self, path: str, status: int, times: int = 1) -> None:
        self._queue(path, "status", status, times)

    def redirect(self, path: str, location: str, times: int = 1) -> None:
        self._queue(path, "redirect", location, times)

    def endless(self, path: str, times: int = 1) -> None:
        self._queue(path, "endless", None, times)

    def huge(self, path: str, mib: int, times: int = 1) -> None:
        self._queue(path, "huge", mib, times)

    def ok(self, path: str, times: int = 1) -> None:
        """The next request(s) are answered normally (a slot in the fault queue)."""
        self._queue(path, "ok", None, times)

    def garbage(self, path: str, times: int = 1) -> None:
        self._queue(path, "garbage", None, times)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self.state.lock:
            return list(self.state.requests)
