"""Questions by the judge's LLM: the `testset_question` prompt through the same client as every verdict.

Each draft is one request: the kind, the language to write in, and the passages (one, or two for the kinds
that need two), as data blocks. The reply is validated (`GeneratedTestItem`: a non-empty question and
reference), repaired when invalid, retried on transient faults, and cached under everything that determines
it, so a killed build resumes without paying twice and a rebuild with the same seed makes no request. A draft
that fails after all of that is recorded with its cause (`generation_failed` in the report), never dropped
silently; the build oversamples so the others fill its place.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ragmetrics._async import run_sync
from ragmetrics.errors import JudgeError
from ragmetrics.judge.base import Judge
from ragmetrics.judge.prompts import InputValue
from ragmetrics.judge.text.language import language_name
from ragmetrics.judge.verdicts import GeneratedTestItem
from ragmetrics.testset.corpus import Chunk
from ragmetrics.testset.offline import Draft

__all__ = ["PROMPT", "draft_with_llm"]

PROMPT = "testset_question"
MAX_PASSAGE_CHARS = 6000


def _values(kind: str, chunks: Sequence[Chunk], language: str) -> dict[str, InputValue]:
    texts = [(f"{c.title}\n{c.text}" if c.title else c.text)[:MAX_PASSAGE_CHARS] for c in chunks]
    return {"kind": kind, "language": language_name(language), "passages": texts}


def draft_with_llm(judge: Judge, jobs: Sequence[tuple[str, list[Chunk], str]]) -> list[Draft | str]:
    """One draft per job, or the failure's cause and message in its place."""
    verdict = getattr(judge, "verdict", None)
    if verdict is None:
        raise JudgeError("the LLM generator needs the LLM judge (an endpoint)", cause="internal_error")
    limit = max(1, int(getattr(getattr(judge, "settings", None), "max_concurrency", 4) or 4))

    async def one(kind: str, chunks: list[Chunk], language: str, gate: asyncio.Semaphore) -> Draft | str:
        async with gate:
            try:
                answer, _ = await verdict(PROMPT, _values(kind, chunks, language))
            except JudgeError as exc:
                return f"{exc.cause}: {exc}"
        assert isinstance(answer, GeneratedTestItem)
        sources = [] if kind == "unanswerable" else [c.id for c in chunks]
        return Draft(
            kind,
            answer.question.strip(),
            answer.reference.strip(),
            language,
            sources,
            answerable=kind != "unanswerable",
            generator="llm",
        )

    async def everything() -> list[Draft | str]:
        gate = asyncio.Semaphore(limit)
        try:
            return list(await asyncio.gather(*(one(k, c, lang, gate) for k, c, lang in jobs)))
        finally:
            await judge.aclose()

    return run_sync(everything())
