"""An OpenAI-compatible chat model as the generator of utility judgments, with the documented RAG prompt
(`prompts/_rag_answer.yaml`) and, from the first token's log-probabilities, the probability of abstaining
(docs/utilities.md, "Abstention"). One call is one HTTP request: the client's own retries are off, so the
build's budget counts every request sent.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from ragmetrics.errors import ConfigError, FailureCause
from ragmetrics.utility.generators import ABSTENTION_REPLY, GeneratedAnswer, GenerationFailed, check_answer

__all__ = ["ABSTENTION_REPLY", "OpenAIGenerator", "RagPrompt", "abstention_probability", "load_rag_prompt"]

# -- the RAG prompt ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RagPrompt:
    """The documented RAG prompt: system text, user template ({passage}, {question}), the abstention reply,
    and `version`, the SHA-256 (12 hex) of the file's bytes, which enters every answer's cache key."""

    system: str
    user: str
    abstention: str
    version: str

    def messages(self, question: str, passage: str) -> list[dict[str, str]]:
        user = self.user.replace("{passage}", passage.replace("{", "{{").replace("}", "}}"))
        user = user.replace("{question}", question).replace("{{", "{").replace("}}", "}")
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def load_rag_prompt(raw: bytes | None = None, source: str = "prompts/_rag_answer.yaml") -> RagPrompt:
    """The packaged prompt, or `raw` (a team's own file with the same three keys)."""
    if raw is None:
        raw = resources.files("ragmetrics").joinpath("prompts", "_rag_answer.yaml").read_bytes()
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with system, user and abstention")
    for key in ("system", "user", "abstention"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ConfigError(f"{source}: {key!r} must be a non-empty string")
    if "{passage}" not in data["user"] or "{question}" not in data["user"]:
        raise ConfigError(f"{source}: 'user' must hold {{passage}} and {{question}}")
    return RagPrompt(
        system=data["system"],
        user=data["user"],
        abstention=data["abstention"].strip(),
        version=hashlib.sha256(raw).hexdigest()[:12],
    )


def abstention_probability(logprobs: Any, abstention: str) -> float | None:
    """The probability of abstaining, from a chat choice's `logprobs` (docs/utilities.md, "Abstention").

    Definition: at the FIRST generated token, the sum of exp(logprob) over the distinct candidate tokens (the
    sampled token and its `top_logprobs` alternatives) whose text, leading whitespace removed, is a prefix of
    the abstention reply exactly as the prompt asks for it (case kept) and at least two characters long (or
    the whole reply), capped at 1. So a model that would write "UNANSWERABLE" as "UN" + "ANSWERABLE" counts
    the mass of "UN" and "UNANSWERABLE" alike, while the "U" of "U.S." or the "Un" of "Unclear" is an answer's
    start, not an abstention (a one-letter or case-folded prefix would count them). None when the server sent
    no usable log-probabilities (the answer is still scored; UDCG has no probability for it).
    """
    from ragmetrics.judge.openai.logprobs import token_choices

    choices = token_choices(logprobs)
    if not choices:
        return None
    first = choices[0]
    candidates: dict[str, float] = {first.token: first.logprob}
    for token, logprob in first.alternatives:
        candidates.setdefault(token, logprob)
    shortest = min(2, len(abstention))
    mass = 0.0
    for token, logprob in candidates.items():
        text = token.lstrip()
        if len(text) >= shortest and abstention.startswith(text) and math.isfinite(logprob):
            mass += math.exp(min(logprob, 0.0))
    return min(mass, 1.0)


_PROMPT_OVERHEAD_TOKENS = 32
"""Chat formatting tokens a server adds around two messages, counted generously in the cost bound."""


class OpenAIGenerator:
    """An OpenAI-compatible chat model answering with the RAG prompt. `logprobs=True` asks for the first
    tokens' log-probabilities (`top_logprobs` alternatives) and returns `abstention_probability`.

    Cost: `price_in` / `price_out` are USD per million prompt / completion tokens. A call is reserved at its
    bound (prompt tokens <= UTF-8 bytes of the messages + 32, completion tokens <= `max_tokens`), so a budget
    is never exceeded even before the server says what the call cost; `cost(usage)` is what it did cost.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 0.0,
        max_tokens: int = 64,
        seed: int | None = 0,
        logprobs: bool = False,
        top_logprobs: int = 20,
        timeout_s: float = 60.0,
        price_in: float = 0.0,
        price_out: float = 0.0,
        prompt: RagPrompt | None = None,
    ) -> None:
        if max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {max_tokens}")
        if not 0 <= top_logprobs <= 20:
            raise ConfigError(f"top_logprobs must be from 0 to 20, got {top_logprobs}")
        if timeout_s <= 0 or price_in < 0 or price_out < 0:
            raise ConfigError("timeout_s must be > 0 and prices >= 0")
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.logprobs = logprobs
        self.top_logprobs = top_logprobs
        self.timeout_s = timeout_s
        self.price_in = price_in
        self.price_out = price_out
        self.prompt = prompt or load_rag_prompt()
        self._client: Any = None
        self.logprobs_refused: str | None = None
        """Set once the server refused `logprobs` (`without_logprobs`): from then on answers are asked without
        them, and say so (`p_abstain_missing` "logprobs_refused")."""
        if base_url is None and not os.environ.get(api_key_env):
            raise ConfigError(f"the OpenAI generator needs an API key: set {api_key_env} (or give base_url)")

    @property
    def identity(self) -> dict[str, Any]:
        """What decides an answer besides its inputs; the base URL by host, port and path (a local server answers
        whatever model name it is sent, so the endpoint tells two of them apart; no query string, no
        credentials), the key never."""
        from urllib.parse import urlsplit

        endpoint = None
        # With no base_url the openai client reads OPENAI_BASE_URL: that server answers, so it is the endpoint.
        base_url = self.base_url or os.environ.get("OPENAI_BASE_URL") or None
        if base_url:
            parts = urlsplit(base_url)
            port = f":{parts.port}" if parts.port is not None else ""
            endpoint = f"{parts.hostname}{port}{parts.path.rstrip('/')}"
        return {
            "kind": "openai",
            "model": self.model,
            "endpoint": endpoint,
            "prompt": self.prompt.version,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "logprobs": self.top_logprobs if self.logprobs else None,
        }

    @property
    def plain_identity(self) -> dict[str, Any]:
        """The identity of this generator asked without log-probabilities: the key of an answer obtained after
        the server refused them, so a later build with a server that returns them does not take it for one
        that had them (and a build without --logprobs reuses it, since it is exactly what that build asks)."""
        return {**self.identity, "logprobs": None}

    @property
    def asks_logprobs(self) -> bool:
        """Whether the next request asks for log-probabilities: configured, and not refused by the server."""
        return self.logprobs and self.logprobs_refused is None

    def without_logprobs(self, why: str) -> None:
        """Ask every later request without log-probabilities (the server refused them: `why`)."""
        self.logprobs_refused = why

    def _make_client(self) -> Any:
        import openai

        key = os.environ.get(self.api_key_env) or ("not-needed" if self.base_url else None)
        if key is None:
            raise GenerationFailed("auth", f"no API key: set {self.api_key_env} (or give base_url)")
        return openai.AsyncOpenAI(api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s)

    def reservation(self, question: str, passage: str) -> float:
        prompt_bytes = sum(len(m["content"].encode("utf-8")) for m in self.prompt.messages(question, passage))
        return (
            (prompt_bytes + _PROMPT_OVERHEAD_TOKENS) * self.price_in + self.max_tokens * self.price_out
        ) / 1e6

    def cost(self, usage: Mapping[str, int]) -> float:
        return (
            usage.get("prompt_tokens", 0) * self.price_in + usage.get("completion_tokens", 0) * self.price_out
        ) / 1e6

    async def answer(self, question: str, passage: str) -> GeneratedAnswer:
        return await self.ask(question, passage, logprobs=self.asks_logprobs)

    async def ask(self, question: str, passage: str, *, logprobs: bool) -> GeneratedAnswer:
        """One request, with or without log-probabilities; `answer` asks as configured (unless refused)."""
        import openai

        if self._client is None:
            self._client = self._make_client()
        extra: dict[str, Any] = {}
        if logprobs:
            extra = {"logprobs": True, "top_logprobs": self.top_logprobs}
        if self.seed is not None:
            extra["seed"] = self.seed
        try:
            response = await self._client.chat.completions.create(
                model=self.model,
                messages=self.prompt.messages(question, passage),
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                **extra,
            )
        except openai.APITimeoutError:
            raise GenerationFailed("timeout", f"no response within {self.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            raise GenerationFailed(
                "connection", f"the endpoint could not be reached ({type(exc).__name__})"
            ) from None
        except openai.APIStatusError as exc:
            raise GenerationFailed(_status_cause(exc.status_code), f"HTTP {exc.status_code}") from None
        except (ValueError, TypeError) as exc:  # a 200 whose body is not a chat completion
            raise GenerationFailed(
                "invalid_response", f"the response could not be read: {type(exc).__name__}"
            ) from None
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise GenerationFailed("invalid_response", "the response holds no choice")
        choice = choices[0]
        text = check_answer(getattr(getattr(choice, "message", None), "content", None))
        usage_obj = getattr(response, "usage", None)
        usage = {
            k: int(v)
            for k in ("prompt_tokens", "completion_tokens")
            if isinstance(v := getattr(usage_obj, k, None), int) and not isinstance(v, bool) and v >= 0
        }
        p = (
            abstention_probability(getattr(choice, "logprobs", None), self.prompt.abstention)
            if logprobs
            else None
        )
        missing = None
        if p is None:
            missing = "not_returned" if logprobs else "logprobs_refused" if self.logprobs else "not_asked"
        return GeneratedAnswer(text, p_abstain=p, usage=usage, p_abstain_missing=missing)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


def _status_cause(status: int) -> FailureCause:
    if status == 429:
        return "rate_limited"
    if status == 408:
        return "timeout"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status == 501:
        return "unsupported"
    if status >= 500:
        return "server_error"
    return "bad_request"
