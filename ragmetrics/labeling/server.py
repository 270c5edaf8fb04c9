"""The labelling page, served on 127.0.0.1 only, from files inside the package (no external requests).

Routes: GET / (the page), /label.js, /label.css; GET /api/status; GET /api/item/<position> (texts, no
verdict); GET /api/next?after=<position>; POST /api/label {position, value} (stores the label, answers
with the judge's verdict); POST /api/span {position, start, end, grade} (a test set's qrels pass: the
selected answering text stored as a span of its document, labeling.spans); POST /api/finish (ends the
session). A team queue with passages (labeling.team) takes POST /api/span {position, doc_id, start, end,
grade} in the document's characters instead, each field checked (a 400 naming it). The Host header must name the loopback
address the server listens on (a page elsewhere cannot reach it through DNS rebinding), a POST must be JSON
from the page's own origin and carry the session's token (X-Ragmetrics-Token; the page reads it from
/api/status, which no other origin can read), and the Content-Security-Policy forbids anything not served
from here. A malformed request (a bad Content-Length, a body nested past MAX_DEPTH, an unknown route) gets a
4xx JSON answer and nothing on the terminal; an error of the server itself a 500 with its type. Serving a
team queue (labeling.team), every /api call, reads too, needs a labeller's own token, and is answered as them. The page
writes every text with textContent: a sample's text is shown, never run.
"""

from __future__ import annotations

import json
import secrets
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from ragmetrics.errors import InputError
from ragmetrics.labeling.session import Verdict
from ragmetrics.labeling.team import Reassigned, TeamQueue

__all__ = ["LabelServer"]

HOST = "127.0.0.1"
MAX_BODY = 4096
MAX_DEPTH = 8
"""Deepest nesting of a POST body: the API's bodies are flat objects; a deep one is refused before parsing."""
TOKEN_HEADER = "X-Ragmetrics-Token"
_STATIC = {
    "/": ("label.html", "text/html; charset=utf-8"),
    "/label.js": ("label.js", "text/javascript; charset=utf-8"),
    "/label.css": ("label.css", "text/css; charset=utf-8"),
}
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def _asset(name: str) -> bytes:
    return resources.files("ragmetrics.labeling").joinpath("page", name).read_bytes()


class Session(Protocol):
    """What the page asks of a session: a labelling one (`LabelSession`) or a side-by-side one."""

    def status(self) -> dict[str, Any]: ...
    def next_position(self, after: int = -1) -> int | None: ...
    def item(self, position: int) -> dict[str, Any]: ...
    def label(self, position: int, value: float, *, labeller: str | None = None) -> Verdict: ...


class LabelServer:
    """A running labelling page for one session; `port=0` takes a free port."""

    def __init__(self, session: Session, port: int = 0, *, team: TeamQueue | None = None) -> None:
        self.session = session
        self.team = team
        self.finished = threading.Event()
        self._lock = threading.Lock()  # one label at a time: the store rewrites its file on each
        self.token = secrets.token_urlsafe(24)  # required on every write; served only to this origin
        handler = _handler(self)
        self._httpd = ThreadingHTTPServer((HOST, port), handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def start(self) -> LabelServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="ragmetrics-label",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the page's Finish (or `timeout` seconds); True if finished."""
        return self.finished.wait(timeout)

    def team_api(
        self, who: str, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any] | None
    ) -> tuple[int, Any]:
        """The API as labeller `who` of a team queue (labeling.team): their items, labels and progress only."""
        team = self.team
        assert team is not None
        if method == "GET" and path == "/api/status":
            return 200, team.status(who)
        if method == "GET" and path == "/api/next":
            position = team.next_for(who)
            return 200, {"position": position, "waiting": position is None and team.waiting_for(who)}
        if method == "GET" and path.startswith("/api/item/"):
            return 200, team.item(who, int(path.rsplit("/", 1)[1]))
        if method == "POST" and path == "/api/label":
            assert body is not None
            at, value = body.get("position"), body.get("value")
            if not isinstance(at, int) or isinstance(at, bool) or isinstance(value, bool) or not isinstance(value, int | float):
                return 400, {"error": "expected {position: int, value: number}"}
            try:
                verdict = team.label(who, at, float(value))
            except Reassigned as exc:
                return 409, {"error": str(exc)}
            return 200, {"score": verdict.score, "reason": verdict.reason, "status": team.status(who)}
        if method == "POST" and path == "/api/span":
            assert body is not None
            return _team_span(team, who, body)
        if method == "POST" and path == "/api/finish":
            return 200, team.status(who)
        return 404, {"error": f"no such endpoint: {method} {path}"}

    def api(
        self, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any] | None
    ) -> tuple[int, Any]:
        session = self.session
        if method == "GET" and path == "/api/status":
            return 200, {**session.status(), "token": self.token}
        if method == "GET" and path == "/api/next":
            after = int(query.get("after", ["-1"])[0])
            return 200, {"position": session.next_position(after)}
        if method == "GET" and path.startswith("/api/item/"):
            return 200, session.item(int(path.rsplit("/", 1)[1]))
        if method == "POST" and path == "/api/label":
            assert body is not None
            at, value = body.get("position"), body.get("value")
            if (
                not isinstance(at, int)
                or isinstance(at, bool)
                or isinstance(value, bool)
                or not isinstance(value, int | float)
            ):
                return 400, {"error": "expected {position: int, value: number}"}
            with self._lock:
                verdict = session.label(at, float(value))
                status = session.status()
            return 200, {"score": verdict.score, "reason": verdict.reason, "status": status}
        if method == "POST" and path == "/api/span" and hasattr(session, "select_span"):
            assert body is not None
            fields = [body.get(key) for key in ("position", "start", "end", "grade")]
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in fields):
                return 400, {"error": "expected {position, start, end, grade: int}"}
            with self._lock:
                return 200, session.select_span(*fields)
        if method == "POST" and path == "/api/finish":
            self.finished.set()
            return 200, session.status()
        return 404, {"error": f"no such endpoint: {method} {path}"}


def _team_span(team: TeamQueue, who: str, body: dict[str, Any]) -> tuple[int, Any]:
    """POST /api/span of a team queue: {position, doc_id, start, end, grade}, offsets in the document's
    characters; a bad field is a 400 naming it (nothing stored), an item not theirs a 409."""
    for key in ("position", "start", "end", "grade"):
        value = body.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            return 400, {"error": f"field {key!r}: expected an integer", "field": key}
    doc_id = body.get("doc_id")
    if not isinstance(doc_id, str) or not doc_id:
        return 400, {"error": "field 'doc_id': expected a document id (a non-empty string)", "field": "doc_id"}
    try:
        return 200, team.select_span(who, body["position"], doc_id, body["start"], body["end"], body["grade"])
    except InputError as exc:
        return 400, {"error": str(exc), "field": exc.field}
    except Reassigned as exc:
        return 409, {"error": str(exc)}


def _depth(raw: bytes) -> int:
    """Deepest bracket nesting of a JSON text, outside strings, counted without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def _handler(server: LabelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "ragmetrics-label"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            return  # the terminal shows the session's progress, not an access log

        def _host_ok(self) -> bool:
            allowed = {f"{HOST}:{server.port}", f"localhost:{server.port}"}
            return self.headers.get("Host", "") in allowed

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", _CSP)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, payload: Any) -> None:
            try:
                body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: the file readers refuse them (_jsonl), so a bug here
                status, body = 500, b'{"error": "internal error (a text holding a lone surrogate)"}'
            self._send(status, body, "application/json")

        def _dispatch(self, method: str) -> None:
            if not self._host_ok():
                self._json(HTTPStatus.FORBIDDEN, {"error": "wrong Host header"})
                return
            parts = urlsplit(self.path)
            if method == "GET" and parts.path in _STATIC:
                name, content_type = _STATIC[parts.path]
                self._send(200, _asset(name), content_type)
                return
            body = None
            who: str | None = None
            if server.team is not None and parts.path.startswith("/api/"):
                # A team queue: every call, reads included, is made as the labeller its token names.
                who = server.team.labeller_of(self.headers.get(TOKEN_HEADER, ""))
                if who is None:
                    self._json(HTTPStatus.FORBIDDEN, {"error": f"missing or unknown {TOKEN_HEADER}: open your own link"})
                    return
            if method == "POST":
                origin = self.headers.get("Origin")
                if origin is not None and origin not in (
                    server.url.rstrip("/"),
                    f"http://localhost:{server.port}",
                ):
                    self._json(HTTPStatus.FORBIDDEN, {"error": "cross-origin request"})
                    return
                if not self.headers.get("Content-Type", "").startswith("application/json"):
                    self._json(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "send application/json"})
                    return
                if who is None and not secrets.compare_digest(self.headers.get(TOKEN_HEADER, ""), server.token):
                    self._json(HTTPStatus.FORBIDDEN, {"error": f"missing or wrong {TOKEN_HEADER}"})
                    return
                declared = (self.headers.get("Content-Length") or "").strip()
                if not declared.isdigit() or not 0 < int(declared) <= MAX_BODY:
                    self.close_connection = True  # the body's end is unknown: do not read it
                    self._json(HTTPStatus.BAD_REQUEST, {"error": f"Content-Length of 1..{MAX_BODY} bytes"})
                    return
                raw = self.rfile.read(int(declared))
                if _depth(raw) > MAX_DEPTH:
                    self._json(HTTPStatus.BAD_REQUEST, {"error": f"a body nested deeper than {MAX_DEPTH}"})
                    return
                try:
                    body = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                    self._json(HTTPStatus.BAD_REQUEST, {"error": "not JSON"})
                    return
                if not isinstance(body, dict):
                    self._json(HTTPStatus.BAD_REQUEST, {"error": "expected a JSON object"})
                    return
            try:
                if who is not None:
                    status, payload = server.team_api(who, method, parts.path, parse_qs(parts.query), body)
                else:
                    status, payload = server.api(method, parts.path, parse_qs(parts.query), body)
            except (ValueError, IndexError, KeyError, TypeError) as exc:
                status, payload = 400, {"error": str(exc) or type(exc).__name__}
            except Exception as exc:  # the server's own fault: an answer, never a traceback on the terminal
                status, payload = 500, {"error": f"internal error ({type(exc).__name__})"}
            self._json(status, payload)

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            # An unknown method is the client's error (405), not a server that lacks a feature (501).
            super().send_error(HTTPStatus.METHOD_NOT_ALLOWED if code == HTTPStatus.NOT_IMPLEMENTED else code,
                               message, explain)  # fmt: skip

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

    return Handler
