"""A server that refuses `logprobs`: the build asks again without them, and keeps on without them.

Some OpenAI-compatible servers and gateways answer HTTP 400 to any request carrying `logprobs`. Without a
fallback, every pair of a `--logprobs` build would fail with `bad_request` and no utility qrels would come out
of a server that answers perfectly well. So a 400 to a request that asked for log-probabilities is asked once
more without them (a budgeted request like any other). When that one is answered, the refusal was about
log-probabilities: every later request of the build goes without them, one warning says so, and each such
answer records why it has no probability of abstaining (`logprobs_refused`) instead of a made-up one. A 400
that comes back without log-probabilities too is about the pair itself (a passage too long for the model's
context, say): it is that pair's `bad_request`, and log-probabilities stay on for the others.

Those answers are cached under the key of the same generator without log-probabilities (`plain_identity`):
a later build at a server that does return them misses them and asks again, so no answer is ever taken for
one that had a probability; a build without `--logprobs` reuses them, since they are exactly what it asks.
The build's first request with log-probabilities goes alone (the other workers wait for its pair), so a
refusing server sees one refused request per build, whatever the concurrency. A build resumed after a
fallback sends that one refused request, finds the refused pair answered under the plain key (which confirms
the refusal without asking it again) and reads every other pair it has from there too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ragmetrics.utility.generators import GeneratedAnswer, GenerationFailed, Generator
from ragmetrics.utility.openai_generator import OpenAIGenerator

if TYPE_CHECKING:
    from ragmetrics.judge.cache import VerdictCache

__all__ = ["LogprobFallback"]

logger = logging.getLogger("ragmetrics.utility")

REFUSED = "logprobs_refused"


class LogprobFallback:
    """The fallback state of one build (module docstring). Inert for a generator that never asks for
    log-probabilities (`enabled` False)."""

    def __init__(
        self,
        generator: Generator,
        cache: VerdictCache | None,
        key: Callable[[Mapping[str, Any], str, str], str],
        read_stored: Callable[[Any], GeneratedAnswer | None],
    ) -> None:
        """`key(identity, question, passage)` is the build's answer key, `read_stored(value)` its validation of
        a cached value (a GeneratedAnswer or None)."""
        self.generator = generator if isinstance(generator, OpenAIGenerator) else None
        self.enabled = self.generator is not None and self.generator.logprobs
        self.cache = cache
        self._key = key
        self._read_stored = read_stored
        self.refused_requests = 0
        """Requests with log-probabilities the server answered with HTTP 400 (each then asked without)."""
        self._probing = False  # a pair asking with log-probabilities is out alone, the others wait for it
        self._decided = False  # the server's answer to log-probabilities is known: taken, or refused
        self._probed: asyncio.Event | None = None

    async def first_request(self) -> bool:
        """Whether this pair's ask is the build's first with log-probabilities (True: call `probed()` when
        its pair is done). The other workers wait for it, so a refusing server sees one refused request per
        build, not one per worker, before the build knows to ask without. A first pair that fails for a
        cause of its own (a timeout, a passage too long with log-probabilities and without, the budget)
        decides nothing: the next pair then goes alone in its turn."""
        while self.enabled and not self.active and not self._decided:
            if not self._probing:
                self._probing = True
                self._probed = asyncio.Event()
                return True
            assert self._probed is not None
            await self._probed.wait()
        return False

    def probed(self, answered: bool) -> None:
        """The first pair with log-probabilities is done: answered (with them: the server takes them; without
        them: the fallback is on) or not (failed: the question is still open, the next pair asks alone)."""
        self._decided = self._decided or answered or self.active
        self._probing = False
        if self._probed is not None:
            self._probed.set()

    @property
    def active(self) -> bool:
        """The server was found to refuse log-probabilities: later requests go without them."""
        return self.generator is not None and self.generator.logprobs_refused is not None

    @property
    def refusal(self) -> str | None:
        return self.generator.logprobs_refused if self.generator is not None else None

    def asks_logprobs(self) -> bool:
        """Whether `generator.answer` sends its next request with log-probabilities."""
        return self.generator is not None and self.generator.asks_logprobs

    def is_refusal(self, exc: GenerationFailed, asked_logprobs: bool) -> bool:
        """A 400 to a request with log-probabilities: ask the pair again without them."""
        if self.enabled and asked_logprobs and exc.cause == "bad_request":
            self.refused_requests += 1
            return True
        return False

    def plain_key(self, question: str, passage: str) -> str:
        assert self.generator is not None
        return self._key(self.generator.plain_identity, question, passage)

    def store_key(self, key: str, got: GeneratedAnswer, question: str, passage: str) -> str:
        """Where an answer is cached: under the plain key when it was asked without log-probabilities after
        a refusal, so it is never read as an answer that had them."""
        if self.enabled and got.p_abstain_missing == REFUSED:
            return self.plain_key(question, passage)
        return key

    async def cached(self, question: str, passage: str) -> GeneratedAnswer | None:
        """The pair's answer asked without log-probabilities, when the cache holds one."""
        if self.cache is None or self.generator is None:
            return None
        hit = await asyncio.to_thread(self.cache.get, self.plain_key(question, passage))
        stored = self._read_stored(hit.value) if hit is not None else None
        if stored is None:
            return None
        return GeneratedAnswer(stored.text, p_abstain=None, usage=stored.usage, p_abstain_missing=REFUSED)

    async def ask_plain(self, question: str, passage: str) -> GeneratedAnswer:
        """The pair asked without log-probabilities (one request)."""
        assert self.generator is not None
        return await self.generator.ask(question, passage, logprobs=False)

    def confirm(self) -> None:
        """A request refused with log-probabilities was answered without them: so the server refuses them.
        Every later request goes without; said once."""
        if self.generator is None or self.active:
            return
        why = (
            "the server answered HTTP 400 to a request with logprobs and answered it without them; the rest "
            "of the build asks without logprobs, so those pairs have no probability of abstaining "
            "(p_abstain_missing: logprobs_refused)"
        )
        self.generator.without_logprobs(why)
        logger.warning("utility judgments: %s", why)

    def missing_reason(self, got: GeneratedAnswer) -> str:
        """Why `got` has no probability of abstaining, for this build: an answer cached by a fallback and read
        by a build that never asked for log-probabilities lacks it because they were not asked."""
        reason = got.p_abstain_missing or "not_given"
        return "not_asked" if reason == REFUSED and not self.enabled else reason

    def provenance(self) -> dict[str, Any]:
        """What utility.json's provenance says about log-probabilities ({} for a generator not asking them)."""
        if not self.enabled:
            return {}
        return {"logprobs_refused": self.refusal, "refused_requests": self.refused_requests}
