"""One client for every judge call to an OpenAI-compatible endpoint: chat verdicts and embeddings.

The `openai` package does the HTTP; everything a long evaluation needs around it is ours, because its built-in
retries neither tell us why a call failed nor count what they cost: our own retry loop (exponential backoff
with jitter on 429, 5xx, timeouts and connection errors, Retry-After honoured up to a cap), a semaphore
bounding concurrent requests, structured output with a fallback chain (json_schema -> json_object -> plain text
with JSON extraction, remembered per client once a server refuses a mode), pydantic validation and a bounded
number of repair rounds that show the model its previous answer and what was wrong with it, and token and call
accounting with an optional price table.

The API key is read from the environment when the client is built and lives only inside the `openai` client
object: it is never logged, never part of a cache key, and never written to results.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import openai
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion
from pydantic import ValidationError

from ragmetrics.errors import ConfigError, JudgeError
from ragmetrics.judge.prompts import InputValue, Message, Prompt, PromptLibrary, repair_message
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.judge.verdicts import Verdict, strict_json_schema
from ragmetrics.schema import TokenUsage

logger = logging.getLogger("ragmetrics.judge")

T = TypeVar("T")
ResponseMode = Literal["json_schema", "json_object", "text"]
_MODES: tuple[ResponseMode, ...] = ("json_schema", "json_object", "text")
_NO_KEY_PLACEHOLDER = "not-needed"
_FORMAT_WORDS = re.compile(
    r"response_format|json_schema|json_object|structured output|schema|grammar", re.IGNORECASE
)


def public_url(url: str | None) -> str | None:
    """`url` without user info, query or fragment, so a URL that carries credentials is safe to record."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets, or the port would read as part of the address
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


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


@dataclass
class CallUsage:
    """Tokens and calls spent on one verdict (or accumulated over a client's life)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    retries: int = 0
    repairs: int = 0

    def add(self, other: CallUsage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.embedding_tokens += other.embedding_tokens
        self.retries += other.retries
        self.repairs += other.repairs

    def as_dict(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "embedding_tokens": self.embedding_tokens,
            "retries": self.retries,
            "repairs": self.repairs,
        }


@dataclass(frozen=True)
class Completion:
    """A validated verdict and what it cost across its retries and repairs."""

    verdict: Verdict
    usage: CallUsage


class _FormatRefused(Exception):
    """The server does not take the requested response_format; the request moves to the next mode."""


def extract_json(content: str) -> str:
    """The JSON object inside a free-text answer: fences and prose around the outermost braces are dropped."""
    text = content.strip()
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end < start:
        return text
    return text[start : end + 1]


def describe_validation_error(exc: ValidationError, limit: int = 5) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        loc = ".".join(str(p) for p in err["loc"]) or "answer"
        parts.append(f"{loc}: {err['msg']}")
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"and {more} more problems")
    return "; ".join(parts)


def _status_cause(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status == 408 or status >= 500:
        return "server_error" if status != 408 else "timeout"
    return "bad_request"


class JudgeClient:
    """Chat verdicts and embeddings over one OpenAI-compatible endpoint, with retries, repairs and accounting."""

    def __init__(
        self,
        settings: JudgeSettings,
        *,
        prompts: PromptLibrary,
        retry: RetryPolicy | None = None,
        rng_seed: int | None = None,
    ) -> None:
        self.settings = settings
        self.prompts = prompts
        self.retry = retry or RetryPolicy()
        key = os.environ.get(settings.api_key_env, "").strip()
        if not key:
            if settings.base_url is None:
                raise ConfigError(
                    f"the judge needs an API key: set the environment variable {settings.api_key_env} "
                    "or a base_url for a server that needs none (or use the local judge)"
                )
            key = _NO_KEY_PLACEHOLDER
        self._api_key = key
        self._rng = random.Random(rng_seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._openai: openai.AsyncOpenAI | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._mode_index = 0
        self._confirmed_modes: set[ResponseMode] = set()
        self.usage = CallUsage()

    def __repr__(self) -> str:
        return f"JudgeClient(model={self.settings.model!r}, base_url={public_url(self.settings.base_url)!r})"

    def _scrub(self, text: str) -> str:
        """`text` from the server or the transport with our API key blanked out.

        Some gateways echo the key they rejected in the error message, and those messages end up in
        `SampleFailure.message` (results) and in logs.
        """
        if self._api_key == _NO_KEY_PLACEHOLDER:
            return text
        return text.replace(self._api_key, "[redacted]")

    @property
    def response_mode(self) -> ResponseMode:
        """The structured-output mode requests start with; it steps down once a lower mode has worked after a refusal."""
        return _MODES[self._mode_index]

    def _api(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        # An AsyncOpenAI client and a semaphore belong to one event loop; the synchronous entry point runs a
        # fresh loop per call, so both are rebuilt when the loop changes.
        loop = asyncio.get_running_loop()
        if self._openai is None or self._semaphore is None or self._loop is not loop:
            self._openai = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.settings.base_url,
                max_retries=0,
                timeout=self.settings.timeout_s,
            )
            self._semaphore = asyncio.Semaphore(self.settings.max_concurrency)
            self._loop = loop
        return self._openai, self._semaphore

    async def aclose(self) -> None:
        if self._openai is not None and self._loop is asyncio.get_running_loop():
            await self._openai.close()
        self._openai = None
        self._semaphore = None
        self._loop = None

    def token_usage(self) -> TokenUsage:
        """Totals so far, with cost when the settings carry a price table (USD per million tokens)."""
        u = self.usage
        cost = None
        prices = self.settings.price_per_million_tokens
        if prices is not None:
            cost = (
                u.prompt_tokens * prices.get("prompt", 0.0)
                + u.completion_tokens * prices.get("completion", 0.0)
                + u.embedding_tokens * prices.get("embedding", 0.0)
            ) / 1_000_000
        return TokenUsage(cost_usd=cost, **u.as_dict())

    # -- transport -------------------------------------------------------------------------------------------

    def _is_format_refusal(self, exc: openai.APIStatusError, mode: ResponseMode, attempt: int) -> bool:
        if mode == "text":
            return False
        status = exc.status_code
        mentions = bool(_FORMAT_WORDS.search(f"{exc.message} {exc.body}"))
        untried = mode not in self._confirmed_modes
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

    async def _with_retries(
        self, call: CallUsage, what: str, op: Callable[[openai.AsyncOpenAI], Awaitable[T]], mode: ResponseMode
    ) -> T:
        attempt = 0
        while True:
            api, semaphore = self._api()
            retry_after: float | None = None
            try:
                async with semaphore:
                    call.calls += 1
                    self.usage.calls += 1
                    return await op(api)
            except openai.APIStatusError as exc:
                message = self._scrub(exc.message)
                if self._is_format_refusal(exc, mode, attempt):
                    raise _FormatRefused(message) from None
                cause = _status_cause(exc.status_code)
                if cause not in ("rate_limited", "server_error", "timeout"):
                    # `from None`: the chained openai exception carries the raw, unscrubbed server message.
                    raise JudgeError(f"{what}: HTTP {exc.status_code}: {message}", cause=cause) from None
                retry_after = retry_after_seconds(exc.response.headers)
                detail = f"HTTP {exc.status_code}"
            except openai.APIResponseValidationError as exc:
                raise JudgeError(
                    f"{what}: unreadable response: {self._scrub(exc.message)}", cause="invalid_output"
                ) from None
            except openai.APITimeoutError:
                cause, detail = "timeout", f"no response within {self.settings.timeout_s:g} s"
            except openai.APIConnectionError as exc:
                cause, detail = "connection", self._scrub(f"connection failed ({exc.__cause__ or exc})")
            if attempt >= self.settings.max_retries:
                raise JudgeError(
                    f"{what}: {detail}; gave up after {attempt + 1} attempts", cause=cause
                ) from None
            delay = self.retry.delay(attempt, retry_after, self._rng)
            call.retries += 1
            self.usage.retries += 1
            logger.info("%s: %s (%s); retry %d in %.2f s", what, detail, cause, attempt + 1, delay)
            await asyncio.sleep(delay)
            attempt += 1

    # -- chat verdicts ---------------------------------------------------------------------------------------

    def _response_format(self, mode: ResponseMode, model: type[Verdict]) -> dict[str, Any] | None:
        if mode == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": model.__name__, "schema": strict_json_schema(model), "strict": True},
            }
        if mode == "json_object":
            return {"type": "json_object"}
        return None

    async def _chat(
        self, call: CallUsage, prompt: Prompt, base: Callable[[bool], list[Message]], tail: list[Message]
    ) -> str:
        index = self._mode_index
        while True:
            mode = _MODES[index]
            messages = base(mode != "json_schema") + tail
            response_format = self._response_format(mode, prompt.model)
            payload: dict[str, Any] = {
                "model": self.settings.model,
                "messages": messages,
                "temperature": self.settings.temperature,
            }
            if self.settings.seed is not None:
                payload["seed"] = self.settings.seed
            if response_format is not None:
                payload["response_format"] = response_format

            async def op(api: openai.AsyncOpenAI, body: dict[str, Any] = payload) -> ChatCompletion:
                # The typed `chat.completions.create` re-walks the whole payload (messages, JSON schema) on
                # every call, a quarter of the client's CPU per request; the payload is built and checked
                # here, so it goes through the client's plain POST (same auth, base_url, timeout).
                return await api.post("/chat/completions", body=body, cast_to=ChatCompletion)

            try:
                response = await self._with_retries(call, f"{prompt.name} ({self.settings.model})", op, mode)
            except _FormatRefused as refusal:
                # Try the next mode for this request; the client only remembers the step down once the
                # lower mode has worked, so one oversized request cannot degrade a whole run.
                logger.info("%s: the server refused response_format=%s (%s)", prompt.name, mode, refusal)
                index += 1
                continue
            self._confirmed_modes.add(mode)
            if index > self._mode_index:
                logger.warning(
                    "the server does not accept response_format=%s; using %s from now on",
                    self.response_mode,
                    mode,
                )
                self._mode_index = index
            usage = getattr(response, "usage", None)
            if usage is not None:
                call.prompt_tokens += usage.prompt_tokens or 0
                call.completion_tokens += usage.completion_tokens or 0
                self.usage.prompt_tokens += usage.prompt_tokens or 0
                self.usage.completion_tokens += usage.completion_tokens or 0
            choices = getattr(response, "choices", None) or []
            content = choices[0].message.content if choices else None
            return content or ""

    async def complete(
        self,
        prompt: Prompt,
        values: Mapping[str, InputValue],
        *,
        answer_in_input_language: bool = False,
    ) -> Completion:
        """A validated verdict for `prompt` on `values`, or JudgeError(cause=...) when none can be had."""
        call = CallUsage()
        context = prompt.validation_context(values)
        shared = self.prompts.shared

        def base(with_schema: bool) -> list[Message]:
            return prompt.messages(
                values, shared, answer_in_input_language=answer_in_input_language, with_schema=with_schema
            )

        tail: list[Message] = []
        for round_ in range(self.settings.max_repairs + 1):
            content = await self._chat(call, prompt, base, tail)
            try:
                if not content.strip():
                    raise ValueError("the answer was empty")
                verdict = prompt.model.model_validate_json(extract_json(content), context=context)
            except ValidationError as exc:
                error = describe_validation_error(exc)
            except ValueError as exc:
                error = str(exc)
            else:
                return Completion(verdict=verdict, usage=call)
            if round_ == self.settings.max_repairs:
                raise JudgeError(
                    f"{prompt.name}: no valid answer after {round_} repair attempt(s): {error}",
                    cause="invalid_output",
                )
            logger.info("%s: invalid answer (%s); asking for a repair", prompt.name, error)
            call.repairs += 1
            self.usage.repairs += 1
            tail = [*tail, {"role": "assistant", "content": content}, repair_message(shared, error)]
        raise AssertionError("unreachable")  # pragma: no cover

    # -- embeddings ------------------------------------------------------------------------------------------

    async def embed(self, texts: list[str], model: str) -> tuple[list[list[float]], CallUsage]:
        """One /v1/embeddings request for `texts` (the caller batches); vectors in input order."""
        call = CallUsage()

        async def op(api: openai.AsyncOpenAI) -> CreateEmbeddingResponse:
            body = {"model": model, "input": texts, "encoding_format": "float"}
            return await api.post("/embeddings", body=body, cast_to=CreateEmbeddingResponse)

        response = await self._with_retries(call, f"embeddings ({model})", op, "text")
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != len(texts) or [d.index for d in data] != list(range(len(texts))):
            raise JudgeError(
                f"embeddings ({model}): asked for {len(texts)} vectors, got {len(data)}",
                cause="invalid_output",
            )
        vectors = [list(map(float, d.embedding)) for d in data]
        if len({len(v) for v in vectors}) > 1 or any(not v for v in vectors):
            raise JudgeError(
                f"embeddings ({model}): vectors of unequal or zero length", cause="invalid_output"
            )
        tokens = getattr(getattr(response, "usage", None), "prompt_tokens", 0) or 0
        call.embedding_tokens += tokens
        self.usage.embedding_tokens += tokens
        return vectors, call


def dump_verdict(verdict: Verdict) -> dict[str, Any]:
    """A verdict as plain JSON data (what the cache stores and the result details show)."""
    data: dict[str, Any] = json.loads(verdict.model_dump_json())
    return data
