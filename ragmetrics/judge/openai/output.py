"""Getting a structured answer out of any OpenAI-compatible server: response modes, extraction, validation.

Servers differ in what they accept. OpenAI, vLLM, Ollama (0.5 and later) and LM Studio take
`response_format: {"type": "json_schema", ...}`; llama-cpp-python's server refuses that type ("Input should be
'text' or 'json_object'") but constrains its output to a schema sent as `{"type": "json_object", "schema":
...}`, as llama.cpp's own server does; older servers take only JSON mode, some only free text. Requests start
with the strongest mode the server is known to take and step down (json_schema -> json_object with schema ->
json_object -> text with JSON extraction) when it refuses one: without the schema step, a small model on
llama-cpp-python answered in free-form JSON and every verdict failed validation. The step down is
remembered only once a lower mode has worked, so one oversized request cannot degrade a whole run, and it is
remembered across runs (per endpoint and model, in the verdict cache, through `ModeMemory`), so a new judge
does not probe a mode the server has already refused, and a fully cached rerun still reports the mode that
produced its verdicts.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Protocol

import openai
from pydantic import BaseModel, ValidationError

from ragmetrics.judge.verdicts import strict_json_schema

__all__ = [
    "MODES",
    "FormatRefused",
    "ModeMemory",
    "ModeNegotiator",
    "ResponseMode",
    "describe_validation_error",
    "extract_json",
    "response_format",
]

ResponseMode = Literal["json_schema", "json_object_schema", "json_object", "text"]
MODES: tuple[ResponseMode, ...] = ("json_schema", "json_object_schema", "json_object", "text")
"""Strongest first. `json_object_schema` is JSON mode with the schema beside it (llama.cpp's form)."""
_FORMAT_WORDS = re.compile(
    r"response_format|json_schema|json_object|structured output|schema|grammar", re.IGNORECASE
)


class FormatRefused(Exception):
    """The server does not take the requested response_format; the request moves to the next mode."""


def response_format(
    mode: ResponseMode, model: type[BaseModel], *, count: int | None = None
) -> dict[str, Any] | None:
    """The `response_format` request field for `mode` (None: plain text, the schema goes in the prompt).

    With `json_object_schema` and the number of verdicts the answer must hold (`count`: one per chunk or
    statement), the verdict list's schema also says so (minItems = maxItems = count): llama.cpp turns the
    schema into a grammar, so the count is then enforced while sampling instead of failing validation (a
    small model otherwise judges one statement twice). OpenAI's strict json_schema refuses those keywords, so
    it never gets them."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": model.__name__, "schema": strict_json_schema(model), "strict": True},
        }
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": _counted(strict_json_schema(model), count)}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def _counted(schema: dict[str, Any], count: int | None) -> dict[str, Any]:
    """`schema` with its one top-level list sized to `count` (a copy; the cached schema is not touched)."""
    lists = [
        k for k, v in schema.get("properties", {}).items() if isinstance(v, dict) and v.get("type") == "array"
    ]
    if count is None or len(lists) != 1:
        return schema
    (key,) = lists
    return {**schema, "properties": {**schema["properties"], key: {**schema["properties"][key],
                                                                 "minItems": count, "maxItems": count}}}  # fmt: skip


class ModeMemory(Protocol):
    """Where the mode an endpoint accepted is kept between runs (the verdict cache, keyed by endpoint+model)."""

    def recall(self) -> ResponseMode | None: ...

    def remember(self, mode: ResponseMode) -> None: ...


class ModeNegotiator:
    """Which mode a request starts with, and whether an HTTP error means "this mode is not supported"."""

    def __init__(self, memory: ModeMemory | None = None) -> None:
        self._memory = memory
        remembered = memory.recall() if memory is not None else None
        self.remembered: ResponseMode | None = remembered
        self._index = MODES.index(remembered) if remembered in MODES else 0
        self._confirmed: set[ResponseMode] = set()
        self.used: ResponseMode | None = None

    def report(self) -> tuple[ResponseMode | None, str]:
        """(the mode verdicts came in, how that is known) for the result's metadata: a mode is reported only
        when an answer came in it, this run or an earlier one against the same endpoint and model."""
        if self.used is not None:
            return self.used, "negotiated this run"
        if self.remembered is not None:
            return self.remembered, "remembered from an earlier run (no request this run)"
        return None, "not negotiated: no request was made"

    @property
    def start_index(self) -> int:
        return self._index

    @property
    def current(self) -> ResponseMode:
        """The structured-output mode requests start with."""
        return MODES[self._index]

    def worked(self, index: int) -> bool:
        """Record that MODES[index] produced an answer; True when that is a step down from `current`."""
        mode = MODES[index]
        self._confirmed.add(mode)
        stepped_down = index > self._index
        if stepped_down:
            self._index = index
        if index < self._index:
            return False  # a late answer in a mode already stepped down from: not what requests use now
        self.used = mode
        if self._memory is not None and mode != self.remembered:
            self._memory.remember(mode)
            self.remembered = mode
        return stepped_down

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
