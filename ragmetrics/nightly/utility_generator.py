"""The team's generator target (a callable or an HTTP endpoint) as a utility-judgment generator.

A target is called as the night calls its `generator:` with one passage: ``{"question": ..., "contexts":
[passage]}`` (no ids: an answer is keyed on the texts, so two ids with one text share it). Its identity, which
enters every answer's cache key, is the target's label and the key of its build (`call_identity`: its code,
the environment it reads, version, cache_key), so a changed build is asked afresh and a credential never
enters the key. A `CallFailed` becomes a `GenerationFailed` with the judge's name for its cause (`http_503` -> server_error).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmetrics.errors import FAILURE_CAUSES
from ragmetrics.nightly.call_identity import call_identity
from ragmetrics.nightly.config_calls import CallSettings
from ragmetrics.nightly.targets import CallableCaller, CallFailed, make_caller, parse_output
from ragmetrics.utility.generators import FunctionGenerator, GenerationFailed

__all__ = ["target_generator"]


def _cause(cause: str) -> str:
    """The judge's name for a target's failure cause (errors.FailureCause) where there is one; a callable that
    raised keeps the night's own name, `target_error`."""
    status = cause.removeprefix("http_")
    if cause == "connection_error":
        return "connection"
    if cause in FAILURE_CAUSES or not status.isdigit():
        return cause
    code = int(status)
    if code == 429:
        return "rate_limited"
    if code == 408:
        return "timeout"
    if code in (401, 403):
        return "auth"
    if code == 404:
        return "not_found"
    return "server_error" if code >= 500 else "bad_request"


def target_generator(
    settings: CallSettings, search: list[Path], *, cost_per_call: float = 0.0
) -> FunctionGenerator:
    """A `FunctionGenerator` calling `settings.target`. One call is one request: the caller's own retries are
    off (`settings.retries` is not used), because a retry inside the caller is a request the build's budget
    never sees; the build's `retries` re-asks instead, each re-ask a budgeted request."""
    caller = make_caller(
        settings.target,
        concurrency=settings.concurrency,
        timeout_s=settings.timeout_s,
        retries=0,
        version=settings.version,
        search=[*settings.python_path, *search],
    )
    fn = caller.function if isinstance(caller, CallableCaller) else None
    build = call_identity(settings.cache_settings(), fn=fn, search=[*settings.python_path, *search])

    async def call(question: str, passage: str) -> Any:
        try:
            raw = await caller.call({"question": question, "contexts": [passage]})
            output = parse_output(raw, role="generator")
        except CallFailed as exc:
            raise GenerationFailed(_cause(exc.cause), exc.message) from None
        return output.answer

    return FunctionGenerator(
        call=call,
        identity_parts={"target": caller.label, "build": build.key},
        cost_per_call=cost_per_call,
        close=caller.aclose,
    )
