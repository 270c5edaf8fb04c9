"""The LLM pairwise judge: which of two runs' answers to a question is better, asked in both orders.

A judge reading two answers tends to prefer the one it reads first (or second): position bias. Each question
is therefore asked twice, run a's answer first and then run b's first. Both raw judgements are kept (left =
the answer shown first), so `comparison.preference.position_bias` measures the judge's bias, and a question's
net preference is the majority of its two judgements: the same answer preferred in both orders wins, a
preference that follows the position (first, then first again) is a tie. The verdicts go through the same
client, cache and validation as every other verdict; judged text is data (the prompt fences it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ragmetrics._async import run_sync
from ragmetrics.errors import JudgeError
from ragmetrics.judge.base import Judge, RagSample
from ragmetrics.judge.verdicts import PairwisePreference
from ragmetrics.schema import Choice, Preference

__all__ = ["PROMPT", "judge_pairwise"]

PROMPT = "pairwise_preference"
MAX_CONTEXT_CHARS = 6000


def _values(question: str, contexts: Sequence[str], first: str, second: str) -> dict[str, str]:
    joined = "\n\n".join(contexts)[:MAX_CONTEXT_CHARS]
    return {"question": question, "contexts": joined or "(none)", "first": first, "second": second}


def judge_pairwise(
    judge: Judge, a: str, samples_a: Sequence[RagSample], b: str, samples_b: Sequence[RagSample]
) -> tuple[list[Preference], list[str]]:
    """Both orders of every question both runs answered: (the raw judgements, the failures as 'id: cause')."""
    verdict = getattr(judge, "verdict", None)
    if verdict is None:
        raise JudgeError("the pairwise judge needs the LLM judge (an endpoint)", cause="unsupported_metric")
    limit = max(1, int(getattr(getattr(judge, "settings", None), "max_concurrency", 4) or 4))
    by_id = {s.id: s for s in samples_b}
    pairs = [(s, by_id[s.id]) for s in samples_a if s.id in by_id and s.answer is not None
             and by_id[s.id].answer is not None]  # fmt: skip

    async def ask(gate: asyncio.Semaphore, first: tuple[str, RagSample], second: tuple[str, RagSample]) -> Preference | str:
        (left, one), (right, two) = first, second
        contexts = list(dict.fromkeys([*(one.contexts or []), *(two.contexts or [])]))
        async with gate:
            try:
                answer, _ = await verdict(PROMPT, _values(one.question, contexts, str(one.answer), str(two.answer)))
            except JudgeError as exc:
                return f"{one.id}: {exc.cause}: {exc}"
        assert isinstance(answer, PairwisePreference)
        choice: Choice = {"first": "left", "second": "right", "tie": "tie"}[answer.preferred]  # type: ignore[assignment]
        return Preference(one.id, left, right, choice, judge="llm")

    async def everything() -> list[Preference | str]:
        gate = asyncio.Semaphore(limit)
        jobs = [job for x, y in pairs for job in (ask(gate, (a, x), (b, y)), ask(gate, (b, y), (a, x)))]
        try:
            return list(await asyncio.gather(*jobs))
        finally:
            await judge.aclose()

    results = run_sync(everything())
    return [r for r in results if isinstance(r, Preference)], [r for r in results if isinstance(r, str)]
