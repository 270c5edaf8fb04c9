"""Who answers a question from one passage: the generators of utility judgments.

eRAG (Salemi and Zamani, SIGIR 2024) gives each retrieved passage alone to the system's own LLM. A generator
here is anything with an `identity` (everything that decides its answers besides the question and the
passage: kind, model, prompt version, settings; never a credential) and an async `answer(question, passage)`
that returns a `GeneratedAnswer` or raises `GenerationFailed` with a cause from `errors.FailureCause`.

- `ExtractiveGenerator`: offline and deterministic, the default.
- `OpenAIGenerator` (openai_generator.py): an OpenAI-compatible chat model with the documented RAG prompt
  (`prompts/_rag_answer.yaml`); with `logprobs=True` it also returns the probability of abstaining.
- `FunctionGenerator`: any async callable (the night's `generator:` target, an HTTP target), with the identity
  its owner gives it.

Each generator call is one request against the build's budget: the OpenAI generator sends exactly one HTTP
request per call (the client's own retries are off; `retries` re-asks are separate calls, each budgeted).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragmetrics.errors import FailureCause
from ragmetrics.judge.text.sentences import split_sentences

__all__ = [
    "ABSTENTION_REPLY",
    "P_ABSTAIN_MISSING",
    "RETRYABLE",
    "ExtractiveGenerator",
    "FunctionGenerator",
    "GeneratedAnswer",
    "GenerationFailed",
    "Generator",
    "check_answer",
]

ABSTENTION_REPLY = "UNANSWERABLE"
"""The abstention reply of the packaged RAG prompt (prompts/_rag_answer.yaml `abstention`) and of the
extractive generator."""

MAX_ANSWER_CHARS = 100_000
"""A longer answer is refused as invalid output (a one-passage answer is a phrase or a sentence)."""


class GenerationFailed(Exception):
    """A call that gave no usable answer: `cause` (an errors.FailureCause, or `target_error` when the team's
    callable raised), `message` (no secret in it)."""

    def __init__(self, cause: FailureCause | str, message: str) -> None:
        super().__init__(message)
        self.cause: str = cause
        self.message = message


P_ABSTAIN_MISSING: dict[str, str] = {
    "not_given": "the generator gives no probabilities of abstaining",
    "not_asked": "log-probabilities were not asked for (no --logprobs)",
    "not_returned": "log-probabilities were asked for, but the response held none usable",
    "logprobs_refused": "the server refused log-probabilities (HTTP 400), so the answer was asked without them",
}
"""Why an answer has no probability of abstaining (`GeneratedAnswer.p_abstain_missing`), by code: said per pair
in judgments.jsonl and counted in utility.json, so a missing probability is never read as a made-up one."""


@dataclass(frozen=True)
class GeneratedAnswer:
    """A generator's answer to one (question, passage), the probability it abstains on that passage when
    known (None: the generator gave none, and `p_abstain_missing` says why, a key of `P_ABSTAIN_MISSING`),
    and the tokens it cost."""

    text: str
    p_abstain: float | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    p_abstain_missing: str | None = None


class Generator(Protocol):
    """What utility judgments call: see the module docstring."""

    @property
    def identity(self) -> dict[str, Any]: ...

    async def answer(self, question: str, passage: str) -> GeneratedAnswer: ...

    def reservation(self, question: str, passage: str) -> float:
        """The most one call on this pair can cost (USD): reserved against `max_cost` before the call."""
        ...

    async def aclose(self) -> None: ...


def check_answer(text: object) -> str:
    """`text` when it is an answer (a non-blank string of UTF-8-encodable characters), else GenerationFailed
    invalid_output: a non-text reply is recorded with its cause, never scored 0."""
    if not isinstance(text, str):
        raise GenerationFailed("invalid_output", f"the generator returned {type(text).__name__}, not text")
    if not text.strip():
        raise GenerationFailed("invalid_output", "the generator returned a blank answer")
    if len(text) > MAX_ANSWER_CHARS:
        raise GenerationFailed(
            "invalid_output", f"an answer of {len(text):,} characters (> {MAX_ANSWER_CHARS:,})"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise GenerationFailed("invalid_output", "the answer holds a lone surrogate, not text") from None
    return text


# -- the generators -------------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "by",
        "from",
        "as",
        "at",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "how",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "can",
        "could",
        "should",
        "would",
        "will",
        "may",
        "might",
        "i",
        "you",
        "he",
        "she",
        "we",
        "they",
        "my",
        "your",
        "our",
        "their",
        "there",
        "here",
        "not",
        "no",
        "yes",
        "if",
        "then",
        "than",
        "so",
        "into",
        "about",
    ]
)


def _content_words(text: str) -> set[str]:
    return {w for w in (m.group(0).casefold() for m in _WORD.finditer(text)) if w not in _STOP and len(w) > 1}


@functools.cache
def _segmenter() -> str | None:
    """The installed sentencex release (None when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sentencex")
    except PackageNotFoundError:
        return None


@dataclass(frozen=True)
class ExtractiveGenerator:
    """Offline, deterministic: the passage's sentence sharing the most distinct content words with the question
    (ties: the first such sentence), or the abstention reply when no sentence shares any. Content words are
    the casefolded word tokens of two or more characters outside a short English stop list. Its abstention is
    a decision, so its `p_abstain` is exactly 1.0 (abstained) or 0.0 (answered)."""

    abstention: str = ABSTENTION_REPLY

    @property
    def identity(self) -> dict[str, Any]:
        """Its answers are decided by this code (`version`) and by the sentence segmenter's release (sentencex
        splits the passage): a new release may cut sentences elsewhere, so it asks afresh."""
        return {"kind": "extractive", "version": 1, "abstention": self.abstention, "sentencex": _segmenter()}

    async def answer(self, question: str, passage: str) -> GeneratedAnswer:
        asked = _content_words(question)
        best, best_overlap = "", 0
        for sentence in split_sentences(passage):
            overlap = len(asked & _content_words(sentence))
            if overlap > best_overlap:
                best, best_overlap = sentence, overlap
        if best_overlap == 0:
            return GeneratedAnswer(self.abstention, p_abstain=1.0)
        return GeneratedAnswer(check_answer(" ".join(best.split())), p_abstain=0.0)

    def reservation(self, question: str, passage: str) -> float:
        return 0.0

    async def aclose(self) -> None:
        return None


@dataclass(frozen=True)
class FunctionGenerator:
    """An async callable `call(question, passage) -> answer text` with the identity its owner gives it (the
    night's generator target: its label and build; an HTTP target: its URL and cache_key). It returns no
    probabilities. `cost_per_call` is what one call is reserved against `max_cost` (default 0)."""

    call: Callable[[str, str], Awaitable[object]]
    identity_parts: Mapping[str, Any]
    cost_per_call: float = 0.0
    close: Callable[[], Awaitable[None]] | None = None

    @property
    def identity(self) -> dict[str, Any]:
        return {"kind": "function", **self.identity_parts}

    async def answer(self, question: str, passage: str) -> GeneratedAnswer:
        return GeneratedAnswer(
            check_answer(await self.call(question, passage)), p_abstain_missing="not_given"
        )

    def reservation(self, question: str, passage: str) -> float:
        return self.cost_per_call

    async def aclose(self) -> None:
        if self.close is not None:
            await self.close()


RETRYABLE: frozenset[str] = frozenset(
    {"rate_limited", "server_error", "timeout", "connection", "invalid_response"}
)
"""Causes worth asking again (each new ask is a new budgeted request)."""
