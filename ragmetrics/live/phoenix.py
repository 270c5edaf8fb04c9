"""Phoenix as the trace store: new spans read from its REST API with a cursor, and every judged score written
back as a span annotation on the trace's root span, where the team already looks.

Reading: `GET /v1/projects/{project}/spans?sort=id&order=asc&cursor=...` pages through spans in the order
Phoenix stored them; the cursor kept between polls is the global id just after the last span read, so a restart
reads on from there and a span is never read twice (nor missed: ids only grow). Each span comes back with its
attributes flattened to dotted keys, as OpenInference names them, and its kind apart; both go back into
`traces.otlp.Span`.

Writing: `POST /v1/span_annotations?sync=true`, one annotation per (trace, metric): the metric's name, the score,
a label (`pass` at 0.5 or more, `fail` below, `failed` when the judge could not score it, with the cause), the
judge's reason as the explanation, and the annotator kind (LLM for an LLM judge, CODE for the local judge and
operational figures). Phoenix upserts on (name, span, identifier) and the identifier is always `ragmetrics`,
so writing again after a restart replaces, never duplicates. The API key, when the server needs one, is read
from the environment variable the config names, sent as a bearer token, and never stored or logged.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ragmetrics.traces.otlp import Span

__all__ = ["IDENTIFIER", "Annotation", "PhoenixClient", "PhoenixError"]

IDENTIFIER = "ragmetrics"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
PAGE = 500
_TIMEOUT_S = 30.0


class PhoenixError(Exception):
    """The Phoenix server could not be reached or refused a request (the watcher retries on the next poll)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NoSpansYet(PhoenixError):
    """The project does not exist yet: Phoenix creates a project with its first span (asynchronously, after the
    exporter's request returned), so a watcher started before any traffic, or just after it, sees a 404."""


@dataclass(frozen=True)
class Annotation:
    span_id: str
    name: str
    score: float | None
    label: str
    explanation: str | None
    annotator_kind: str
    metadata: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "span_id": self.span_id,
            "name": self.name,
            "annotator_kind": self.annotator_kind,
            "result": {"score": self.score, "label": self.label, "explanation": self.explanation},
            "metadata": self.metadata,
            "identifier": IDENTIFIER,
        }


def _ns(text: str | None) -> int:
    if not text:
        return 0
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return ((moment - _EPOCH) // timedelta(microseconds=1)) * 1000  # exact: Phoenix keeps microseconds


def _after(global_id: str) -> str:
    """The global id just after `global_id` (base64 of 'Span:<n>')."""
    kind, _, number = base64.b64decode(global_id).decode().partition(":")
    return base64.b64encode(f"{kind}:{int(number) + 1}".encode()).decode()


def span_of(item: dict[str, Any]) -> Span:
    context = item["context"]
    attributes = dict(item.get("attributes") or {})
    kind = item.get("span_kind")
    if kind and kind != "UNKNOWN":
        attributes.setdefault("openinference.span.kind", kind)
    return Span(
        trace_id=str(context["trace_id"]),
        span_id=str(context["span_id"]),
        parent_id=item.get("parent_id") or None,
        name=str(item.get("name") or ""),
        start_ns=_ns(item.get("start_time")),
        end_ns=_ns(item.get("end_time")),
        attributes=attributes,
        error=item.get("status_code") == "ERROR",
    )


class PhoenixClient:
    def __init__(self, url: str, project: str, *, api_key_env: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.project = project
        self.api_key_env = api_key_env

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        key = os.environ.get(self.api_key_env or "", "").strip() if self.api_key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(f"{self.url}{path}", data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise PhoenixError(
                f"Phoenix answered {exc.code} to {method} {path.split('?')[0]}: {detail}", exc.code
            ) from None
        except OSError as exc:
            raise PhoenixError(f"Phoenix at {self.url} is unreachable: {exc}") from None
        return json.loads(raw) if raw else None

    def spans(self, cursor: str | None) -> tuple[list[Span], str | None, bool]:
        """One page of spans stored after `cursor`: (spans, the cursor to read on from, more pages wait)."""
        query = {"sort": "id", "order": "asc", "limit": str(PAGE)}
        if cursor:
            query["cursor"] = cursor
        project = urllib.parse.quote(self.project, safe="")
        try:
            page = self._request("GET", f"/v1/projects/{project}/spans?{urllib.parse.urlencode(query)}")
        except PhoenixError as exc:
            if exc.status == 404 and "project" in str(exc).lower():
                raise NoSpansYet(
                    f"no spans in project {self.project!r} yet (Phoenix creates it with its first span)", 404
                ) from None
            raise
        data = page.get("data") or []
        spans = [span_of(item) for item in data]
        following = page.get("next_cursor")
        if following:
            return spans, str(following), True
        return spans, (_after(str(data[-1]["id"])) if data else cursor), False

    def annotate(self, annotations: list[Annotation]) -> None:
        if annotations:
            self._request(
                "POST", "/v1/span_annotations?sync=true", {"data": [a.as_json() for a in annotations]}
            )

    def annotations_of(self, span_ids: list[str]) -> list[dict[str, Any]]:
        """Every annotation of these spans (for checks; pages through them)."""
        project = urllib.parse.quote(self.project, safe="")
        found: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = [("span_ids", s) for s in span_ids] + [("limit", "1000")]
            if cursor:
                query.append(("cursor", cursor))
            page = self._request(
                "GET", f"/v1/projects/{project}/span_annotations?{urllib.parse.urlencode(query)}"
            )
            found.extend(page.get("data") or [])
            cursor = page.get("next_cursor")
            if not cursor:
                return found
