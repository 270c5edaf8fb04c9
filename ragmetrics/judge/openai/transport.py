"""Sending requests to an OpenAI-compatible endpoint: bounded concurrency, timeouts and retries.

The `openai` package does the HTTP; its own retries are off because they neither tell us why a call failed
nor count what it cost. Ours: exponential backoff with jitter on 429, 5xx, timeouts, connection errors and
bodies that are not complete JSON (a 200 cut off by a proxy), Retry-After honoured up to a cap. Permanent
errors fail at once: every 4xx but 408 and 429, HTTP 501, and a 5xx whose text says the server cannot do
this at all ("must be created with embedding=True", "not supported"), because asking again gets the same
answer. Every failure keeps the server's own words (its error message, scrubbed and shortened), and every
message that leaves this module has passed the scrubber. How many requests are in flight is the adaptive
limit's job (`limiter.AdaptiveLimit`); a request's timeout starts when it is sent, not while it waits for a
slot.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import openai

from ragmetrics.errors import FailureCause, JudgeError
from ragmetrics.judge.interrupt import raise_if_stopped
from ragmetrics.judge.openai.breaker import Breaker
from ragmetrics.judge.openai.budget import RequestBudget
from ragmetrics.judge.openai.limiter import AdaptiveLimit, Signal
from ragmetrics.judge.openai.scrub import Scrubber, public_url, split_base_url
from ragmetrics.judge.openai.usage import CallUsage
from ragmetrics.judge.settings import JudgeSettings

__all__ = ["RetryPolicy", "Transport", "retry_after_seconds", "server_message", "status_cause"]

logger = logging.getLogger("ragmetrics.judge")

T = TypeVar("T")
_RETRIED: tuple[FailureCause, ...] = (
    "rate_limited",
    "server_error",
    "timeout",
    "connection",
    "invalid_response",
)


_MESSAGE_CHARS = 400
# How servers say "I cannot do this" in a 5xx (llama.cpp: "Llama model must be created with embedding=True",
# "This server does not support embeddings. Start it with `--embeddings`"; vLLM: "... is not supported").
_UNSUPPORTED = re.compile(
    r"not supported|unsupported|does not support|doesn't support|not implemented|must be created with|"
    r"start it with|not enabled|is disabled",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait before retry number `attempt` (0-based) of a failed request."""

    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0

    def delay(self, attempt: int, retry_after_s: float | None, rng: random.Random) -> float:
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.max_retry_after_s)
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0**attempt)
        return ceiling * rng.uniform(0.5, 1.0)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, else `retry-after` as seconds or an HTTP date."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return float(raw_ms) / 1000.0
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_cause(status: int, message: str = "") -> FailureCause:
    """The failure cause an HTTP status (and the server's message) means; only rate_limited, server_error
    and timeout are retried."""
    if status == 429:
        return "rate_limited"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status == 408:
        return "timeout"
    if status == 501 or (status >= 500 and _UNSUPPORTED.search(message)):
        return "unsupported"
    if status >= 500:
        return "server_error"
    return "bad_request"


def server_message(exc: openai.APIStatusError) -> str:
    """What the server said, from the shapes servers use: OpenAI/llama.cpp/vLLM ``{"error": {"message"}}``,
    ``{"error": "..."}``, FastAPI and text-embeddings-inference ``{"detail"}`` / ``{"message"}``, or plain
    text. Whitespace folded and shortened to a few hundred characters; the caller scrubs it."""
    body = exc.body
    text: object = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            text = error.get("message") or error.get("msg")
        elif isinstance(error, str):
            text = error
        if not text:
            text = body.get("message") or body.get("detail") or body.get("msg")
        if text is not None and not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False)
    elif isinstance(body, str):
        text = body
    message = " ".join(str(text).split()) if text else ""
    if not message:
        message = exc.message.removeprefix(f"Error code: {exc.status_code}").strip(" -") or "no message"
    if len(message) > _MESSAGE_CHARS:
        message = message[: _MESSAGE_CHARS - 1] + "…"
    return message


RefusalCheck = Callable[[openai.APIStatusError, int], bool]


class Transport:
    """One endpoint's `openai.AsyncOpenAI` client, its concurrency bound, and the retry loop around requests."""

    def __init__(
        self,
        settings: JudgeSettings,
        *,
        api_key: str,
        scrub: Scrubber,
        retry: RetryPolicy | None = None,
        rng_seed: int | None = None,
        budget: RequestBudget | None = None,
        usage: CallUsage | None = None,
    ) -> None:
        self.settings = settings
        self.budget = budget
        """A cap shared with other judges (a cascade's, a panel's), checked beside this judge's own"""
        self.retry = retry or RetryPolicy()
        self.scrub = scrub
        self._api_key = api_key
        self._base_url, self._query = split_base_url(settings.base_url)
        self._endpoint = public_url(settings.base_url) or "the OpenAI API"
        self._rng = random.Random(rng_seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._openai: openai.AsyncOpenAI | None = None
        self._batch_openai: openai.AsyncOpenAI | None = None
        self._batch_loop: asyncio.AbstractEventLoop | None = None
        self._limit: AdaptiveLimit | None = None
        self._lowest_limit = settings.max_concurrency
        self.usage = usage if usage is not None else CallUsage()
        """What this endpoint sent; shared with the judge's chat client when this is its second (embeddings)
        endpoint, so `max_requests` counts both endpoints' requests and the judge's usage holds them"""
        self.breaker = Breaker(failures=settings.breaker_failures, min_outage_s=settings.breaker_outage_s)

    def _within_budget(self, what: str) -> None:
        """JudgeError (budget_reached) instead of a request past `max_requests`: a budget is a bound, not a
        target that a batch in flight may overrun."""
        cap = self.settings.max_requests
        if cap is not None and self.usage.calls >= cap:
            raise JudgeError(f"{what}: not sent: the budget of {cap} judge requests is spent", cause="budget_reached")
        if self.budget is not None:
            self.budget.take(what)

    def concurrency(self) -> dict[str, int]:
        """The request limit: its ceiling, its size now and its lowest this run (the report's back-off figures)."""
        now = self._limit.limit if self._limit is not None else self.settings.max_concurrency
        lowest = min(self._lowest_limit, self._limit.lowest if self._limit is not None else now)
        return {"max": self.settings.max_concurrency, "now": now, "lowest": lowest}

    def api(self) -> tuple[openai.AsyncOpenAI, AdaptiveLimit]:
        # An AsyncOpenAI client and the limit's condition belong to one event loop; the synchronous entry point
        # runs a fresh loop per call, so both are rebuilt when the loop changes (the limit keeps its size).
        loop = asyncio.get_running_loop()
        if self._openai is None or self._limit is None or self._loop is not loop:
            self._openai = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self._base_url,
                default_query=self._query or None,
                max_retries=0,
                timeout=self.settings.timeout_s,
                # Redirects are never followed: a 307 to another host would carry the samples (and the key)
                # there. Bodies are capped: a server that streams without end cannot fill the memory.
                http_client=bounded_http_client(self.settings.timeout_s),
            )
            previous = self._limit
            self._limit = AdaptiveLimit(
                self.settings.max_concurrency, adaptive=self.settings.adaptive_concurrency
            )
            if previous is not None:
                self._limit.limit = previous.limit
                self._lowest_limit = min(self._lowest_limit, previous.lowest)
            self._loop = loop
        return self._openai, self._limit

    def batch_api(self) -> openai.AsyncOpenAI:
        """A client for the Batch API's files and batches: the same endpoint and key, the SDK's own retries
        (five), no cap on the body (a batch's output file holds every answer), redirects never followed."""
        loop = asyncio.get_running_loop()
        if self._batch_openai is None or self._batch_loop is not loop:
            self._batch_openai = openai.AsyncOpenAI(
                api_key=self._api_key, base_url=self._base_url, default_query=self._query or None, max_retries=5,
                timeout=max(self.settings.timeout_s, 120.0),
                http_client=openai.DefaultAsyncHttpxClient(follow_redirects=False,
                                                           timeout=max(self.settings.timeout_s, 120.0)),
            )  # fmt: skip
            self._batch_loop = loop
        return self._batch_openai

    async def aclose(self) -> None:
        if self._openai is not None and self._loop is asyncio.get_running_loop():
            await self._openai.close()
        if self._batch_openai is not None and self._batch_loop is asyncio.get_running_loop():
            await self._batch_openai.close()
        self._openai = self._batch_openai = None
        self._loop = self._batch_loop = None

    async def send(
        self,
        call: CallUsage,
        what: str,
        op: Callable[[openai.AsyncOpenAI], Awaitable[T]],
        *,
        refusal: RefusalCheck | None = None,
        on_refusal: Callable[[str], BaseException] | None = None,
    ) -> T:
        """`op` with retries. `refusal(exc, attempt)` says an HTTP error means "format not supported": then
        `on_refusal(message)` is raised for the caller to try another format."""
        attempt = 0
        while True:
            self.breaker.check(what)
            api, limit = self.api()
            retry_after: float | None = None
            cause: FailureCause
            try:
                async with limit.slot():
                    self.breaker.check(what)  # it may have opened while this request waited for a slot
                    raise_if_stopped()
                    self._within_budget(what)
                    call.calls += 1
                    self.usage.calls += 1
                    # One deadline for connect, headers and the whole body: httpx's own timeout is per read,
                    # so a server trickling a byte at a time would otherwise hold the call forever.
                    answer = await asyncio.wait_for(
                        _observed(limit, op(api)), self.settings.timeout_s + _DEADLINE_GRACE_S
                    )
                    self.breaker.success()
                    return answer
            except openai.APIStatusError as exc:
                message = self.scrub(server_message(exc))
                if refusal is not None and on_refusal is not None and refusal(exc, attempt):
                    raise on_refusal(message) from None
                cause = status_cause(exc.status_code, message)
                detail = f"HTTP {exc.status_code}: {message}"
                if cause not in _RETRIED:
                    self.breaker.failure(cause, detail)
                    # `from None`: the chained openai exception carries the raw, unscrubbed server message.
                    raise JudgeError(f"{what}: {detail}", cause=cause) from None
                retry_after = retry_after_seconds(exc.response.headers)
            except openai.APIResponseValidationError as exc:
                cause, detail = "invalid_response", f"unreadable response: {self.scrub(exc.message)}"
            except json.JSONDecodeError as exc:
                # A 200 whose body is cut off (a proxy dropped the rest): transient, like a dropped connection.
                cause, detail = "invalid_response", f"the response body is not complete JSON ({exc.msg})"
            except (openai.APITimeoutError, TimeoutError):
                cause = "timeout"
                detail = f"no response within {self.settings.timeout_s:g} s from {self._endpoint}"
            except openai.APIConnectionError as exc:
                too_large = _chained(exc, ResponseTooLarge)
                if too_large is not None:
                    raise JudgeError(f"{what}: {too_large}", cause="invalid_response") from None
                cause, detail = "connection", self.scrub(connection_text(exc, self._endpoint))
            except RecursionError:
                # json.loads on a body nested hundreds of thousands deep: not a verdict, and not worth a retry.
                raise JudgeError(
                    f"{what}: the response JSON is nested too deeply to be a verdict",
                    cause="invalid_response",
                ) from None
            self.breaker.failure(cause, detail)
            if attempt >= self.settings.max_retries or self.breaker.opened is not None:
                raise JudgeError(
                    f"{what}: {detail}; gave up after {attempt + 1} attempts", cause=cause
                ) from None
            delay = self.retry.delay(attempt, retry_after, self._rng)
            call.retries += 1
            self.usage.retries += 1
            logger.info("%s: %s (%s); retry %d in %.2f s", what, detail, cause, attempt + 1, delay)
            await asyncio.sleep(delay)
            attempt += 1


_DEADLINE_GRACE_S = 1.0
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""A judge's reply (a verdict, or embeddings of a batch) is far smaller; a larger body is refused."""


class ResponseTooLarge(Exception):
    """Raised inside the HTTP stream when a body passes MAX_RESPONSE_BYTES."""


def http_library() -> Any:
    """The HTTP client library the installed `openai` client is built on (httpx, or its successor httpx2);
    every HTTP client of ours (the judge's, a pipeline target's) uses the same one."""
    import importlib

    try:
        return importlib.import_module("httpx2")
    except ImportError:
        return importlib.import_module("httpx")


def bounded_http_client(timeout_s: float) -> Any:
    """The openai client's HTTP client with redirects off and a size cap on every response body."""
    httpx = http_library()

    class CappedStream(httpx.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        async def __aiter__(self) -> Any:
            total = 0
            async for chunk in self._inner:
                total += len(chunk)
                if total > MAX_RESPONSE_BYTES:
                    raise httpx.ReadError(  # surfaces as APIConnectionError; the cause says why
                        f"the response is larger than {MAX_RESPONSE_BYTES // 2**20} MiB"
                    ) from ResponseTooLarge(
                        f"the response is larger than {MAX_RESPONSE_BYTES // 2**20} MiB (refused)"
                    )
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    class CappedTransport(httpx.AsyncBaseTransport):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            self._inner = httpx.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            response = await self._inner.handle_async_request(request)
            return httpx.Response(
                status_code=response.status_code,
                headers=response.headers,
                stream=CappedStream(response.stream),
                extensions=response.extensions,
                request=request,
            )

        async def aclose(self) -> None:
            await self._inner.aclose()

    return openai.DefaultAsyncHttpxClient(
        follow_redirects=False, transport=CappedTransport(), timeout=timeout_s
    )


def _chained(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of `kind` in `exc`'s chain of causes and contexts."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def connection_text(exc: BaseException, endpoint: str) -> str:
    """'connection refused at http://127.0.0.1:9/v1', or the underlying error where it says more."""
    inner = exc.__cause__ or exc
    text = str(inner)
    chain = f"{text} {inner.__cause__ or ''} {inner.__context__ or ''}".lower()
    if "refused" in chain or "all connection attempts failed" in chain or "errno 111" in chain:
        return f"connection refused at {endpoint}"
    return f"connection failed at {endpoint} ({text})"


async def _observed(limit: AdaptiveLimit, request: Awaitable[T]) -> T:
    """`await request`, telling the limit what its outcome says about the server's load."""
    sent = time.monotonic()
    signal: Signal = "neutral"
    try:
        result = await request
    except openai.APITimeoutError:
        signal = "overload"
        raise
    except openai.APIStatusError as exc:
        signal = "overload" if exc.status_code in (429, 503) else "neutral"
        raise
    else:
        signal = "ok"
        return result
    finally:
        limit.record(signal, time.monotonic() - sent if signal == "ok" else None)
