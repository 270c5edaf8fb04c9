"""The labelling page's HTTP side: loopback only, the verdict hidden until answered, bad requests refused."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.labeling.server import MAX_DEPTH, TOKEN_HEADER, LabelServer
from ragmetrics.labeling.session import LabelSession

from .helpers import make_report


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LabelServer]:
    make_report(tmp_path / "report")
    session = LabelSession(tmp_path / "report", "faithfulness", tmp_path / "labels.jsonl", target=5)
    running = LabelServer(session).start()
    yield running
    running.stop()


def _call(
    server: LabelServer, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    payload = None if body is None else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", TOKEN_HEADER: server.token} if payload is not None else {}
    connection.request(method, path, body=payload, headers={**sent, **(headers or {})})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    if response.getheader("Content-Type", "").startswith("application/json"):
        return response.status, json.loads(data)
    return response.status, data.decode()


def test_listens_on_loopback_only(server: LabelServer) -> None:
    assert server.url.startswith("http://127.0.0.1:")


def test_the_item_never_carries_the_verdict_until_labelled(server: LabelServer) -> None:
    status, item = _call(server, "GET", "/api/item/0")
    assert status == 200
    text = json.dumps(item)
    assert "reason for" not in text and "score" not in text
    status, verdict = _call(server, "POST", "/api/label", {"position": 0, "value": 1.0})
    assert status == 200
    assert verdict["reason"] == f"reason for {item['sample_id']}"
    assert verdict["status"]["labelled"] == 1
    status, again = _call(server, "GET", "/api/item/0")
    assert again["label"] == 1.0 and "reason for" not in json.dumps(again)


def test_next_skips_labelled_samples(server: LabelServer) -> None:
    _call(server, "POST", "/api/label", {"position": 0, "value": 0.0})
    assert _call(server, "GET", "/api/next?after=-1")[1]["position"] == 1


@pytest.mark.parametrize(
    ("body", "headers", "expected"),
    [
        ({"position": 0, "value": 0.3}, {}, 400),  # not an offered answer
        ({"position": 99, "value": 1.0}, {}, 400),
        ({"position": -1, "value": 1.0}, {}, 400),
        ({"position": "0", "value": 1.0}, {}, 400),
        ({"position": 0, "value": True}, {}, 400),
        ({"position": 0, "value": 1.0}, {"Host": "evil.example:80"}, 403),  # DNS rebinding
        ({"position": 0, "value": 1.0}, {"Origin": "http://evil.example"}, 403),
        ({"position": 0, "value": 1.0}, {"Content-Type": "text/plain"}, 415),
    ],
)
def test_bad_requests_are_refused_and_store_nothing(
    server: LabelServer, body: Any, headers: dict[str, str], expected: int
) -> None:
    status, _ = _call(server, "POST", "/api/label", body, headers)
    assert status == expected
    assert server.session.labels() == {}


def test_page_assets_are_local_with_a_strict_policy(server: LabelServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/")
    response = connection.getresponse()
    page = response.read().decode()
    policy = response.getheader("Content-Security-Policy", "")
    connection.close()
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "http://" not in page and "https://" not in page  # nothing fetched from elsewhere
    for asset in ("/label.js", "/label.css"):
        status, text = _call(server, "GET", asset)
        assert status == 200 and "http" not in text.replace("http.", "")
    status, js = _call(server, "GET", "/label.js")
    assert "innerHTML" not in js  # texts are set with textContent only


def test_finish_ends_the_wait(server: LabelServer) -> None:
    assert not server.wait(0.01)
    _call(server, "POST", "/api/finish", {})
    assert server.wait(1)


def _raw(server: LabelServer, request: bytes) -> tuple[int, bytes]:
    """Send bytes as they are (a malformed request http.client would not write) and read the answer."""
    import socket

    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    return status, data


def _post_bytes(server: LabelServer, body: bytes, length: str | None = None, token: str | None = None) -> bytes:
    headers = [
        "POST /api/label HTTP/1.1", f"Host: 127.0.0.1:{server.port}", "Content-Type: application/json",
        f"{TOKEN_HEADER}: {server.token if token is None else token}",
        f"Content-Length: {len(body) if length is None else length}",
    ]  # fmt: skip
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + body


@pytest.mark.parametrize("length", ["abc", "-5", "1e3", "99999999999999999999", "", " 12x"])
def test_a_malformed_content_length_gets_a_400(
    server: LabelServer, length: str, capfd: pytest.CaptureFixture[str]
) -> None:
    status, _ = _raw(server, _post_bytes(server, b'{"position": 0, "value": 1.0}', length=length))
    assert status == 400
    assert "Traceback" not in capfd.readouterr().err
    assert server.session.labels() == {}


def test_a_deeply_nested_body_gets_a_400(server: LabelServer, capfd: pytest.CaptureFixture[str]) -> None:
    for body in (b"[" * 2000 + b"]" * 2000, b'{"a":' * 1000 + b"1" + b"}" * 1000):
        status, _ = _raw(server, _post_bytes(server, body[:4096]))
        assert status == 400
    assert "Traceback" not in capfd.readouterr().err
    assert MAX_DEPTH < 20


def test_a_write_without_the_session_token_is_refused(server: LabelServer) -> None:
    for token in ("", "guess"):
        status, _ = _raw(server, _post_bytes(server, b'{"position": 0, "value": 1.0}', token=token))
        assert status == 403
    assert server.session.labels() == {}
    status, payload = _call(server, "GET", "/api/status")
    assert status == 200 and payload["token"] == server.token  # what the page reads (same origin only)


def test_garbage_requests_get_an_answer_and_no_traceback(
    server: LabelServer, capfd: pytest.CaptureFixture[str]
) -> None:
    for request in (
        b"GARBAGE / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % server.port,
        b"GET /api/item/x HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % server.port,
        b"GET /api/next?after=zz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % server.port,
        b"GET /api/item/99999999999999999999999 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % server.port,
        b"DELETE /api/label HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % server.port,
    ):
        status, _ = _raw(server, request)
        assert 400 <= status < 500, request
    assert "Traceback" not in capfd.readouterr().err


def test_two_sessions_on_one_labels_file_keep_each_others_labels(tmp_path: Path) -> None:
    make_report(tmp_path / "report")
    labels = tmp_path / "labels.jsonl"
    first = LabelSession(tmp_path / "report", "faithfulness", labels, target=5)
    second = LabelSession(tmp_path / "report", "faithfulness", labels, target=5)  # both start from nothing
    first.label(0, 1.0)
    second.label(1, 0.0)
    first.label(2, 1.0)
    written = {json.loads(line)["sample_id"] for line in labels.read_text().splitlines()}
    assert len(written) == 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "99999"], "a TCP port is 0-65535"),
        (["--port", "-1"], "a TCP port is 0-65535"),
        (["--metric"], "cannot be labelled here"),
    ],
)
def test_bad_label_arguments_exit_2_with_the_field(
    tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragmetrics.cli import main

    make_report(tmp_path / "report")
    report = tmp_path / "report" / "report.json"  # the same scores under a config's own metric's name
    report.write_text(report.read_text().replace('"faithfulness"', '"own_python_metric"').replace(
        '"faithfulness"', '"own_python_metric"'), encoding="utf-8")  # fmt: skip
    metric = "own_python_metric" if "--metric" in argv else "faithfulness"
    if metric == "faithfulness":
        make_report(tmp_path / "report")
    base = ["label", str(tmp_path / "report"), "--metric", metric, "--labels", str(tmp_path / "l.jsonl")]
    assert main([*base, *[a for a in argv if a != "--metric"]]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_lone_surrogate_in_the_samples_is_refused_at_load_naming_file_line_and_field(tmp_path: Path) -> None:
    """A sample text holding "\\ud800" (a JSON escape that parses, but is not text) is refused when the session
    loads, naming judged_samples.jsonl, its line and field: before, it loaded, and the page's reply for that
    item could not be encoded mid-session (the connection dropped, a traceback on the terminal)."""
    from ragmetrics.errors import InputError
    from ragmetrics.nightly.judged_samples import FILENAME

    make_report(tmp_path / "report")
    path = tmp_path / "report" / FILENAME
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows[2]["contexts"][1] = "half of a pair: \ud800"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")  # escaped: "\\ud800"
    with pytest.raises(InputError) as caught:
        LabelSession(tmp_path / "report", "faithfulness", tmp_path / "labels.jsonl", target=5)
    assert (caught.value.source, caught.value.line, caught.value.field) == (str(path), 3, "contexts[1]")
    assert "lone surrogate (U+D800)" in str(caught.value)


def test_a_reply_that_cannot_be_encoded_is_a_500_not_a_dropped_connection(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Had a lone surrogate reached a reply some other way (a session built in Python), the page gets a 500
    JSON answer saying so, and the terminal no traceback."""

    class Surrogate:
        def status(self) -> dict[str, Any]:
            return {"labelled": 0}

        def next_position(self, after: int = -1) -> int | None:
            return 0

        def item(self, position: int) -> dict[str, Any]:
            return {"position": position, "question": "\udfff"}

        def label(self, position: int, value: float, *, labeller: str | None = None) -> Any:
            raise AssertionError("not called")

    running = LabelServer(Surrogate()).start()
    try:
        status, payload = _call(running, "GET", "/api/item/0")
    finally:
        running.stop()
    assert status == 500 and "lone surrogate" in payload["error"]
    assert "Traceback" not in capfd.readouterr().err
