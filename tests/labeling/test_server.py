"""The labelling page's HTTP side: loopback only, the verdict hidden until answered, bad requests refused."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.labeling.server import LabelServer
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
    sent = {"Content-Type": "application/json"} if payload is not None else {}
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
