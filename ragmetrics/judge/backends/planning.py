"""What judging a set of samples will cost, before a call is made: the LLM judge run without its server.

`PlanningJudge` is the LLM judge with every request replaced by a count. Every plan of the registry knows its
request's inputs before the request (statements, sentences and chunks are cut in code), so the planner builds
the very cache key the real judge would, and a verdict the cache already holds costs nothing while any other
costs one call: the count of calls is exact up to retries, repairs and what the server refuses. Tokens are
estimated: the rendered messages at four characters a token, and per prompt the mean completion tokens of the
verdicts the cache paid for (a default per judged item when it has none).

The planner has no client at all, so it cannot reach a server by mistake; an uncached verdict raises `Planned`
after it is counted, which ends that unit (its score is not needed). Embeddings that a real unit would ask for
after such a verdict (the generated questions of answer_relevancy, the similarity of answer_correctness) are
counted from the same placeholder texts, through the same embedding store, so they too are counted only when
missing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.judge.backends._dispatch import Handler
from ragmetrics.judge.backends.llm import Judged, LLMJudge
from ragmetrics.judge.base import MetricOutcome, RagSample
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.embedding_store import StoredEmbedder
from ragmetrics.judge.openai.embeddings import DEFAULT_BATCH_SIZE
from ragmetrics.judge.openai.usage import CallUsage
from ragmetrics.judge.prompts import InputValue, Prompt, PromptLibrary, default_library
from ragmetrics.judge.registry import JudgeMetricSpec, Plan
from ragmetrics.judge.rubric import RubricProbe
from ragmetrics.judge.settings import JudgeSettings, retry_failed_delay_s

__all__ = ["CHARS_PER_TOKEN", "Planned", "PlannedWork", "PlanningJudge"]

CHARS_PER_TOKEN = 4.0
"""The usual rule of thumb for English text with OpenAI-style tokenizers (other scripts use more tokens)."""
COMPLETION_TOKENS_PER_ITEM = 40
"""A verdict's reason and flag per judged item (statement, chunk, sentence, question) when the cache has no
verdict of that prompt to learn from."""
COMPLETION_TOKENS_BASE = 30


class Planned(Exception):
    """Raised where the real judge would call the server; the call has been counted."""


@dataclass
class PlannedWork:
    """Requests and tokens a judging pass would spend."""

    chat_calls: int = 0
    embedding_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    cached_verdicts: int = 0
    recorded_failures: int = 0
    """Units a recorded failure answers without a call (`retry_failed`)."""
    by_prompt: dict[str, int] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return self.chat_calls + self.embedding_calls


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


class _NameOnly:
    """An embedder that only names its model: the key of the vectors a store holds for it."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        raise AssertionError(
            "the planner never embeds"
        )  # pragma: no cover - StoredEmbedder.missing only reads


class _PlanningEmbedder:
    """Counts the embedding requests the texts not stored would need; returns stand-in unit vectors."""

    def __init__(
        self, name: str, cache: VerdictCache, backend: str, work: PlannedWork, *, remote: bool
    ) -> None:
        self._store = StoredEmbedder(_NameOnly(name), cache, backend=backend)
        self._work = work
        self._remote = remote
        self._seen: set[str] = set()
        self._rng = np.random.default_rng(0)

    @property
    def name(self) -> str:
        return self._store.name

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        todo = [t for t in self._store.missing(texts) if t not in self._seen]
        if todo and self._remote:
            self._seen.update(todo)
            self._work.embedding_calls += math.ceil(len(todo) / DEFAULT_BATCH_SIZE)
            self._work.embedding_tokens += sum(_tokens(len(t)) for t in todo)
        vectors = self._rng.normal(size=(len(texts), 8))
        unit: NDArray[np.float32] = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(
            np.float32
        )
        return unit


class PlanningJudge(LLMJudge):
    """The LLM judge's handlers over a cache, with every server request counted instead of sent."""

    def __init__(
        self,
        settings: JudgeSettings,
        *,
        cache: VerdictCache,
        prompts: PromptLibrary | None = None,
        identity: Mapping[str, Any] | None = None,
    ) -> None:
        # Deliberately not LLMJudge.__init__: no client is built, so nothing here can reach a server.
        self.settings = settings
        self.identity = dict(identity) if identity is not None else None  # a panel member's (LLMJudge._key)
        self.prompts = prompts or default_library()
        self.cache = cache
        self.work = PlannedWork()
        chosen = settings.embeddings
        remote = chosen is None or chosen.backend != "local"
        model = settings.embedding_model if chosen is None or chosen.model is None else chosen.model
        if not remote:
            from ragmetrics.embeddings.minilm import MODEL_NAME

            model = MODEL_NAME
        self.embedder = _PlanningEmbedder(
            model, cache, "openai" if remote else "local", self.work, remote=remote
        )
        self._retry_after_s = retry_failed_delay_s(settings.retry_failed)
        self._failures = 0
        self._rubric_prompts = {}
        self._asking = {}
        self._planned: set[str] = set()
        self.cached_usage = CallUsage()
        self._completion_means = cache.completion_tokens_by_kind()

    async def judged(
        self, prompt: Prompt, values: Mapping[str, InputValue], probe: RubricProbe | None = None
    ) -> Judged:
        key = self._key(prompt, values, probe)
        stored = self.stored(key, prompt, values, probe)
        if stored is not None:
            self.work.cached_verdicts += 1
            return stored
        try:
            self.raise_if_recorded(key)
        except Exception:
            self.work.recorded_failures += 1
            raise
        if key not in self._planned:  # the same request twice in one night is asked once, then cached
            self._planned.add(key)
            self._count(prompt, values)
        raise Planned(prompt.name)

    def _count(self, prompt: Prompt, values: Mapping[str, InputValue]) -> None:
        messages = prompt.messages(
            values, self.prompts.shared, answer_in_input_language=self.settings.answer_in_input_language
        )
        work = self.work
        work.chat_calls += 1
        work.by_prompt[prompt.name] = work.by_prompt.get(prompt.name, 0) + 1
        work.prompt_tokens += _tokens(sum(len(m["content"]) for m in messages))
        learned = self._completion_means.get(prompt.name)
        if learned is None:
            items = sum(len(v) for v in values.values() if isinstance(v, list | tuple)) or 1
            learned = COMPLETION_TOKENS_BASE + COMPLETION_TOKENS_PER_ITEM * items
        work.completion_tokens += math.ceil(learned)

    def handlers(self) -> dict[Plan, Handler]:
        return {plan: self._counting(plan, handler) for plan, handler in super().handlers().items()}

    def _counting(self, plan: Plan, handler: Handler) -> Handler:
        async def run(spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
            try:
                return await handler(spec, sample)
            except Planned:
                await self._embeddings_after(plan, sample)
                raise

        return run

    async def _embeddings_after(self, plan: Plan, sample: RagSample) -> None:
        """The embeddings a unit asks for once its verdict is in, counted with stand-in texts."""
        if plan == "question_generation":
            n = self.settings.answer_relevancy_questions
            await self.embedder.embed(
                [
                    sample.question,
                    *(f"{sample.question} (question {k + 1} from {sample.id})" for k in range(n)),
                ]
            )
        elif plan == "statement_classification":
            await self.embedder.embed([str(sample.answer).strip(), str(sample.reference).strip()])
