"""The team's own code, called by the nightly job: a Python callable or an HTTP endpoint.

A target takes one JSON-like mapping (a question and, for a generator, the contexts to answer from) and returns
a mapping or an object holding the answer, the retrieved contexts and, optionally, context ids and scores,
token usage and cost. Whatever it returns is validated here into a `TargetOutput`, or the call fails with a
`CallFailed` that carries a short cause and a message, so every failed question is recorded, never dropped.

The HTTP client sends the inputs only to the configured URL: redirects are refused (a 307 would otherwise
carry the samples to another host), a response has a size cap and one deadline for headers *and* body (a
server that never finishes its body cannot hang the night), and header values from the environment are
scrubbed out of every message.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import hashlib
import inspect
import json
import math
import os
import random
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from ragmetrics._callables import import_callable
from ragmetrics._numbers import number_problem
from ragmetrics._team_code import contained, describe_escape, is_stop_request
from ragmetrics.errors import ConfigError, FailureCause
from ragmetrics.judge.openai.breaker import Breaker, BreakerOpen
from ragmetrics.judge.openai.scrub import Scrubber, public_url
from ragmetrics.judge.openai.transport import connection_text, http_library
from ragmetrics.nightly.config_calls import HttpTarget, Target

__all__ = [
    "MAX_RESPONSE_BYTES",
    "CallFailed",
    "CallableCaller",
    "Caller",
    "HttpCaller",
    "TargetOutput",
    "make_caller",
    "parse_output",
    "target_label",
]

Role = Literal["pipeline", "generator"]

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""A response larger than this is refused (a pipeline's answer and contexts are far smaller)."""
MAX_TEXT_CHARS = 1_000_000
"""One answer or context longer than this is refused as invalid output."""
_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
_MAX_BACKOFF_S = 30.0


class CallFailed(Exception):
    """A call that produced no usable output: `cause` is short and machine-readable, `message` says what
    happened (secrets scrubbed)."""

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(message)
        self.cause = cause
        self.message = message


@dataclass(frozen=True)
class TargetOutput:
    """A validated output: what the pipeline or generator returned, and how long the call took."""

    answer: str | None
    contexts: list[str] | None
    context_ids: list[str] | None
    context_scores: list[float] | None
    tokens: int | None
    cost: float | None
    latency_s: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TargetOutput:
        """A stored output, validated again (a cache row is data from disk, not trusted)."""
        latency = data.get("latency_s")
        if isinstance(latency, bool) or not isinstance(latency, int | float) or not math.isfinite(latency):
            raise CallFailed("invalid_output", "stored latency_s is not a finite number")
        parsed = parse_output(
            {
                k: data.get(k)
                for k in ("answer", "contexts", "context_ids", "context_scores", "tokens", "cost")
            },
            role="pipeline",  # its rule (an answer or contexts) holds for every stored output
        )
        return TargetOutput(**{**asdict(parsed), "latency_s": float(latency)})


def _field(raw: Any, name: str) -> Any:
    if isinstance(raw, Mapping):
        return raw.get(name)
    return getattr(raw, name, None)


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise CallFailed("invalid_output", f"{where}: expected a string, got {type(value).__name__}")
    if len(value) > MAX_TEXT_CHARS:
        raise CallFailed(
            "invalid_output", f"{where}: {len(value):,} characters, more than {MAX_TEXT_CHARS:,}"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: not text, and no cache or report could store it
        raise CallFailed(
            "invalid_output",
            f"{where}: character {exc.start} is a lone surrogate (U+{ord(value[exc.start]):04X}), not text",
        ) from None
    return value


def _text_list(value: Any, where: str, *, ids: bool = False) -> list[str]:
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise CallFailed("invalid_output", f"{where}: expected a list, got {type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        if ids and isinstance(item, int) and not isinstance(item, bool):
            item = str(item)
        text = _text(item, f"{where}[{i}]")
        if ids and not text.strip():
            raise CallFailed("invalid_output", f"{where}[{i}]: a blank id")
        out.append(text)
    return out


def _number(value: Any, where: str, *, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CallFailed("invalid_output", f"{where}: expected a number, got {type(value).__name__}")
    problem = number_problem(value)
    if problem is not None:
        raise CallFailed("invalid_output", f"{where}: {problem}")
    number = float(value)
    if number < 0:
        raise CallFailed("invalid_output", f"{where}: {value!r} is not a finite number >= 0")
    if integer and not number.is_integer():
        raise CallFailed("invalid_output", f"{where}: {value!r} is not a whole number")
    return number


def _tokens(raw: Any) -> int | None:
    tokens = _field(raw, "tokens")
    usage = _field(raw, "usage")
    if tokens is not None:
        return int(_number(tokens, "tokens", integer=True))
    if usage is None:
        return None
    if isinstance(usage, int | float) and not isinstance(usage, bool):
        return int(_number(usage, "usage", integer=True))
    total = _field(usage, "total_tokens")
    if total is not None:
        return int(_number(total, "usage.total_tokens", integer=True))
    parts = [
        _field(usage, k) for k in ("prompt_tokens", "completion_tokens", "input_tokens", "output_tokens")
    ]
    given = [p for p in parts if p is not None]
    if not given:
        raise CallFailed("invalid_output", "usage: expected total_tokens or prompt/completion tokens")
    return int(sum(_number(p, "usage", integer=True) for p in given))


def parse_output(raw: Any, *, role: Role) -> TargetOutput:
    """Validate what a target returned (a mapping or an object with attributes; a generator may return a
    plain string, its answer). Latency is set by the caller."""
    if isinstance(raw, str):
        raw = {"answer": raw}
    if raw is None:
        raise CallFailed("invalid_output", f"the {role} returned nothing (None)")
    answer = _field(raw, "answer")
    answer = None if answer is None else _text(answer, "answer")
    contexts_raw = _field(raw, "contexts")
    contexts = None if contexts_raw is None else _text_list(contexts_raw, "contexts")
    ids_raw = _field(raw, "context_ids")
    ids = None if ids_raw is None else _text_list(ids_raw, "context_ids", ids=True)
    scores_raw = _field(raw, "context_scores")
    if scores_raw is None:
        scores_raw = _field(raw, "scores")
    scores = None
    if scores_raw is not None:
        if not isinstance(scores_raw, list | tuple):
            raise CallFailed(
                "invalid_output", f"context_scores: expected a list, got {type(scores_raw).__name__}"
            )
        scores = []
        for i, v in enumerate(scores_raw):
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise CallFailed("invalid_output", f"context_scores[{i}]: {v!r} is not a finite number")
            scores.append(float(v))
    if ids is not None:
        if contexts is not None and len(ids) != len(contexts):
            raise CallFailed(
                "invalid_output", f"context_ids has {len(ids)} entries but contexts has {len(contexts)}"
            )
        if len(set(ids)) != len(ids):
            raise CallFailed("invalid_output", "context_ids lists an id twice")
    if scores is not None:
        ranked = ids if ids is not None else contexts
        if ranked is None or len(scores) != len(ranked):
            raise CallFailed("invalid_output", "context_scores must have one score per context")
    cost_raw = _field(raw, "cost")
    cost = None if cost_raw is None else _number(cost_raw, "cost")
    tokens = _tokens(raw)
    if role == "generator" and answer is None:
        raise CallFailed("invalid_output", "the generator returned no answer")
    if role == "pipeline" and answer is None and contexts is None and ids is None:
        raise CallFailed("invalid_output", "the pipeline returned neither an answer nor contexts")
    return TargetOutput(answer, contexts, ids, scores, tokens, cost, 0.0)


class Caller(Protocol):
    """Calls one target with one input; raises CallFailed. `label` names it in messages (never a secret)."""

    @property
    def label(self) -> str: ...

    @property
    def version(self) -> str | None: ...

    async def call(self, payload: dict[str, Any]) -> Any: ...

    async def aclose(self) -> None: ...


def target_label(target: Target) -> str:
    """How a target is named in messages and cache keys: 'module:function' or the URL without credentials."""
    if isinstance(target, str):
        return target
    return public_url(target.url) or target.url


def load_callable(spec: str, search: list[Path]) -> Callable[..., Any]:
    """Import 'package.module:function' (the config's folder and the working directory are searched first)."""
    return import_callable(spec, search, "target")


def source_version(fn: Callable[..., Any]) -> str | None:
    """A default version for a callable: a hash of the source file of the module defining it."""
    module = inspect.getmodule(fn)
    try:
        path = inspect.getsourcefile(module) if module is not None else None
    except TypeError:
        path = None
    if path is None:
        return None
    try:
        return "src:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return None


class CallableCaller:
    """A Python callable, sync (run in its own thread pool, one thread per call in flight) or async."""

    def __init__(
        self, spec: str, fn: Callable[..., Any], *, concurrency: int, timeout_s: float, version: str | None
    ) -> None:
        self._spec = spec
        self._fn = fn
        self._timeout = timeout_s
        self._version = version if version is not None else source_version(fn)
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._concurrency = concurrency

    @property
    def label(self) -> str:
        return self._spec

    @property
    def version(self) -> str | None:
        return self._version

    @property
    def function(self) -> Callable[..., Any]:
        """The imported callable (its code is part of the output cache key: `call_identity`)."""
        return self._fn

    async def call(self, payload: dict[str, Any]) -> Any:
        payload = copy.deepcopy(payload)  # the team's code may change its input; the night's record must not
        try:
            if inspect.iscoroutinefunction(self._fn):
                return await asyncio.wait_for(contained(self._fn(payload)), self._timeout)
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._concurrency, thread_name_prefix="ragmetrics-target"
                )
            loop = asyncio.get_running_loop()
            result = await asyncio.wait_for(
                loop.run_in_executor(self._pool, self._fn, payload), self._timeout
            )
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(contained(result), self._timeout)
            return result
        except TimeoutError:
            raise CallFailed("timeout", f"{self._spec} did not return within {self._timeout:g} s") from None
        except CallFailed:
            raise
        except BaseException as exc:  # the team's code left, sys.exit included: recorded per question
            if is_stop_request(exc):
                raise
            raise CallFailed("target_error", f"{self._spec} {describe_escape(exc)}") from None

    async def aclose(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


class HttpCaller:
    """POST the input as JSON to an endpoint; retries transient failures, refuses redirects, caps bodies."""

    def __init__(
        self, target: HttpTarget, *, concurrency: int, timeout_s: float, retries: int, version: str | None
    ) -> None:
        self._target = target
        self._timeout = target.timeout_s if target.timeout_s is not None else timeout_s
        self._retries = retries
        self._version = version
        self._concurrency = concurrency
        headers: dict[str, str] = {"content-type": "application/json", "accept": "application/json"}
        secrets: list[str] = []
        for header, env in target.headers_env.items():
            value = os.environ.get(env)
            if not value:
                raise ConfigError(
                    f"target {target_label(target)}: header {header!r} needs ${env}, which is not set"
                )
            headers[header] = value
            secrets.append(value)
            secrets.extend(
                part for part in value.split() if len(part) >= 8
            )  # "Bearer KEY": the key alone too
        self._headers = headers
        self.secrets = secrets
        self._scrub = Scrubber(secrets=secrets)
        self._client: Any = None
        # A dead endpoint ends the night's calls within seconds instead of every question paying its retries.
        self._breaker = Breaker(name=f"the endpoint {target_label(target)}")

    @property
    def label(self) -> str:
        return target_label(self._target)

    @property
    def version(self) -> str | None:
        return self._version

    def _http(self) -> Any:
        httpx = http_library()
        if self._client is None:
            self._client = httpx.AsyncClient(
                follow_redirects=False,
                timeout=httpx.Timeout(self._timeout),
                limits=httpx.Limits(
                    max_connections=self._concurrency, max_keepalive_connections=self._concurrency
                ),
                trust_env=False,
            )
        return self._client

    async def call(self, payload: dict[str, Any]) -> Any:
        httpx = http_library()
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        attempt = 0
        while True:
            try:
                self._breaker.check(self.label)
            except BreakerOpen as exc:
                raise CallFailed(_BREAKER_CAUSE.get(exc.cause, exc.cause), str(exc)) from None
            try:
                answer = await asyncio.wait_for(self._once(body), self._timeout)
                self._breaker.success()
                return answer
            except TimeoutError:
                failure = CallFailed(
                    "timeout", f"no complete response from {self.label} within {self._timeout:g} s"
                )
                retry_after = None
            except httpx.TransportError as exc:
                failure = CallFailed("connection_error", self._scrub(connection_text(exc, self.label)))
                retry_after = None
            except _Retryable as exc:
                failure, retry_after = exc.failure, exc.retry_after
            self._breaker.failure(_endpoint_cause(failure.cause), failure.message)
            if attempt >= self._retries or self._breaker.opened is not None:
                if attempt:
                    failure.message += f" (gave up after {attempt + 1} attempts)"
                raise failure
            attempt += 1
            delay = min(_MAX_BACKOFF_S, 0.25 * 2 ** (attempt - 1)) * (0.5 + random.random())
            if retry_after is not None:
                delay = min(max(delay, retry_after), _MAX_BACKOFF_S)
            await asyncio.sleep(delay)

    async def _once(self, body: bytes) -> Any:
        client = self._http()
        async with client.stream("POST", self._target.url, content=body, headers=self._headers) as response:
            status = response.status_code
            if 300 <= status < 400:
                location = public_url(response.headers.get("location")) or "?"
                raise CallFailed(
                    "redirect_refused",
                    f"{self.label} answered {status} redirecting to {self._scrub(location)}: the inputs are sent "
                    "only to the configured URL (set url to the final address)",
                )
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise CallFailed(
                        "response_too_large", f"{self.label} sent more than {MAX_RESPONSE_BYTES // 2**20} MiB"
                    )
                chunks.append(chunk)
        text = b"".join(chunks).decode("utf-8", errors="replace")
        if status in _RETRY_STATUS:
            raise _Retryable(
                CallFailed(
                    f"http_{status}", self._scrub(f"{self.label} answered {status}: {_snippet(text)}")
                ),
                _retry_after(response.headers.get("retry-after")),
            )
        if not 200 <= status < 300:
            raise CallFailed(
                f"http_{status}", self._scrub(f"{self.label} answered {status}: {_snippet(text)}")
            )
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            raise CallFailed(
                "invalid_output",
                f"{self.label} answered {status} with a body that is not JSON: {self._scrub(_snippet(text))}",
            ) from None

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


_BREAKER_CAUSE = {"connection": "connection_error", "server_error": "http_5xx", "rate_limited": "http_429"}
"""A target's failure causes for the breaker's (judge.openai.breaker) endpoint causes."""


def _endpoint_cause(cause: str) -> FailureCause:
    """The breaker's name for a target failure: connection, timeout, 5xx and 429 are the endpoint's faults."""
    if cause == "connection_error":
        return "connection"
    if cause == "timeout":
        return "timeout"
    if cause == "http_429":
        return "rate_limited"
    if cause.startswith("http_5"):
        return "server_error"
    return "invalid_output"  # the endpoint answered: never counted


class _Retryable(Exception):
    def __init__(self, failure: CallFailed, retry_after: float | None) -> None:
        super().__init__(failure.message)
        self.failure = failure
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _snippet(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    flat = "".join(ch for ch in flat if ch.isprintable())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def make_caller(
    target: Target,
    *,
    concurrency: int,
    timeout_s: float,
    retries: int,
    version: str | None,
    search: list[Path],
) -> Caller:
    """The caller of a config's target; a callable target is imported now, so a typo fails before any call."""
    if isinstance(target, str):
        fn = load_callable(target, search)
        return CallableCaller(target, fn, concurrency=concurrency, timeout_s=timeout_s, version=version)
    return HttpCaller(target, concurrency=concurrency, timeout_s=timeout_s, retries=retries, version=version)
