"""Getting a structured answer out of any OpenAI-compatible server: response modes, extraction, validation.

Servers differ in what they accept: OpenAI and vLLM take a JSON schema, llama.cpp and Ollama often only JSON
mode, some only free text. Requests start with the strongest mode the server is known to take and step
down (json_schema -> json_object -> text with JSON extraction) when it refuses one. The step down is
remembered only once a lower mode has worked, so one oversized request cannot degrade a whole run.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import openai
from pydantic import BaseModel, ValidationError

from ragmetrics.judge.verdicts import strict_json_schema

__all__ = [
    "MODES",
    "FormatRefused",
    "ModeNegotiator",
    "ResponseMode",
    "describe_validation_error",
    "extract_json",
    "response_format",
]

ResponseMode = Literal["json_schema", "json_object", "text"]
MODES: tuple[ResponseMode, ...] = ("json_schema", "json_object", "text")
_FORMAT_WORDS = re.compile(
    r"response_format|json_schema|json_object|structured output|schema|grammar", re.IGNORECASE
)


class FormatRefused(Exception):
    """The server does not take the requested response_format; the request moves to the next mode."""


def response_format(mode: ResponseMode, model: type[BaseModel]) -> dict[str, Any] | None:
    """The `response_format` request field for `mode` (None: plain text, the schema goes in the prompt)."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": model.__name__, "schema": strict_json_schema(model), "strict": True},
        }
    if mode == "json_object":
        return {"type": "json_object"}
    return None


class ModeNegotiator:
    """Which mode a request starts with, and whether an HTTP error means "this mode is not supported"."""

    def __init__(self) -> None:
        self._index = 0
        self._confirmed: set[ResponseMode] = set()

    @property
    def start_index(self) -> int:
        return self._index

    @property
    def current(self) -> ResponseMode:
        """The structured-output mode requests start with."""
        return MODES[self._index]

    def worked(self, index: int) -> bool:
        """Record that MODES[index] produced an answer; True when that is a step down from `current`."""
        self._confirmed.add(MODES[index])
        if index > self._index:
            self._index = index
            return True
        return False

    def is_refusal(self, exc: openai.APIStatusError, mode: ResponseMode, attempt: int) -> bool:
        if mode == "text":
            return False
        status = exc.status_code
        mentions = bool(_FORMAT_WORDS.search(f"{exc.message} {exc.body}"))
        untried = mode not in self._confirmed
        if status in (400, 422):
            # Our requests are otherwise well-formed: a 4xx before this mode ever worked means the server
            # does not support it; after it worked, only a message about the format counts.
            return mentions or untried
        if status >= 500:
            # Some servers crash on a schema they cannot compile: a 5xx naming the format, or a 500 repeated
            # on a mode that has never worked, is a refusal. A single 500 is first retried as transient, and
            # 502/503/504 (gateway, overload) never count by repetition alone.
            return mentions or (status == 500 and untried and attempt >= 1)
        return False


def extract_json(content: str) -> str:
    """The JSON object inside a free-text answer: fences and prose around the outermost braces are dropped."""
    text = content.strip()
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end < start:
        return text
    return text[start : end + 1]


def describe_validation_error(exc: ValidationError, limit: int = 5) -> str:
    """The first few validation problems in one line: what a repair request shows the model."""
    parts = []
    for err in exc.errors()[:limit]:
        loc = ".".join(str(p) for p in err["loc"]) or "answer"
        parts.append(f"{loc}: {err['msg']}")
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"and {more} more problems")
    return "; ".join(parts)
