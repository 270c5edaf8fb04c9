"""One error hierarchy, so callers can catch by cause and messages always say where and what."""

from __future__ import annotations

import json
from typing import Literal, get_args

FailureCause = Literal[
    "rate_limited",  # HTTP 429 after every retry
    "server_error",  # HTTP 5xx after every retry
    "timeout",  # no response in time after every retry (or HTTP 408)
    "connection",  # the endpoint could not be reached
    "auth",  # HTTP 401/403: a key problem, never retried
    "not_found",  # HTTP 404: wrong base_url or model, never retried
    "bad_request",  # another 4xx: the server refused the request, never retried
    "unsupported",  # the server says it cannot do this at all (HTTP 501, or a 5xx saying so), never retried
    "invalid_response",  # a 200 whose body is not a complete JSON response, after every retry
    "invalid_output",  # the model's answer does not validate against the verdict model, after every repair
    "embedder_error",  # an embedder raised or returned vectors of the wrong shape
    "embedder_unavailable",  # no embedder is configured or its model cannot be loaded
    "missing_field",  # the sample lacks a field the metric reads, or it holds no sentence/statement
    "unsupported_metric",  # the backend does not compute this metric
    "invalid_value",  # a score outside its metric's range (judge metrics: [0, 1]) or not finite
    "metric_error",  # a team's own metric function raised: recorded with the exception's type and message
    "internal_error",  # a bug: recorded with its exception type, never passed off as the endpoint's fault
    "batch_expired",  # judge.batch: the batch expired (its window passed) before answering the request
    "batch_cancelled",  # judge.batch: the batch was cancelled before answering the request
    "batch_failed",  # judge.batch: the server failed the whole batch (its errors say why)
    "batch_unfinished",  # judge.batch: the batch was still running when batch.wait_s passed (a rerun waits on)
    "budget_reached",  # the night's request budget (judge.adaptive.max_calls) was spent before this request
]
"""Why a judge score could not be had: the closed set `SampleFailure.cause` takes, documented here once."""
FAILURE_CAUSES: tuple[str, ...] = get_args(FailureCause)


class RagmetricsError(Exception):
    """Base class of every error ragmetrics raises on purpose."""


class InputError(RagmetricsError, ValueError):
    """Bad user data: the message names the source (file, line, field) and what was wrong.

    `source` is a file path or a description such as ``"qrels dict"``; `line` is 1-based where it applies;
    `field` names the column or key.
    """

    def __init__(
        self,
        what: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.what = what
        self.source = source
        self.line = line
        self.field = field
        where = []
        if source is not None:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {what}" if prefix else what)


def json_fault(exc: json.JSONDecodeError) -> tuple[int, int]:
    """The 1-based (line, column) of a JSON parse error's fault. Where the parser ran out of input (an object
    missing its closing brace, a line cut short) it stops past the whitespace that follows, which for a JSON
    line read with its newline is "line 2, column 1"; the fault is where the text stops, so that is named."""
    doc, pos = exc.doc, exc.pos
    if isinstance(doc, str) and 0 <= pos <= len(doc):
        pos = min(pos, len(doc.rstrip(" \t\r\n")))  # JSON's whitespace, nothing more
        line = doc.count("\n", 0, pos) + 1
        return line, pos - (doc.rfind("\n", 0, pos) + 1) + 1
    return exc.lineno, exc.colno


def json_problem(exc: json.JSONDecodeError, *, line_in_text: bool = False) -> str:
    """What a JSON parse error says, ending with where: its column (and its line within the text, for a
    multi-line document; a JSON-lines reader names the file's line itself), at the fault (`json_fault`).
    Python's message alone ends "Invalid control character at" with nothing after it."""
    line, column = json_fault(exc)
    where = f"line {line}, column {column}" if line_in_text else f"column {column}"
    msg = exc.msg.rstrip()
    return f"invalid JSON: {msg} {where}" if msg.endswith(" at") else f"invalid JSON: {msg} ({where})"


class ConfigError(RagmetricsError, ValueError):
    """A configuration file or option is invalid; the message names the key."""


class JudgeError(RagmetricsError):
    """A judge verdict could not be obtained (transport, server, or invalid output after repairs)."""

    def __init__(self, message: str, *, cause: FailureCause = "internal_error") -> None:
        if cause not in FAILURE_CAUSES:
            raise ValueError(f"unknown failure cause {cause!r}; causes: {', '.join(FAILURE_CAUSES)}")
        self.cause: FailureCause = cause
        super().__init__(message)


class NotApplicable(RagmetricsError):
    """A metric does not apply to a sample (faithfulness of an answer that declines to answer): recorded with
    its reason, apart from values and failures; never a NaN, never a 0, never silently dropped."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)
