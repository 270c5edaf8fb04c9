"""`ragmetrics testset --dry-run`: what a build would ask an LLM endpoint, before it asks anything.

The chunks and kinds are chosen exactly as the build chooses them (same seed, same plan), so the count of
generation requests is exact, and each is looked up in the verdict cache: a rerun, or a build resumed after a
kill, shows only what is still to pay for. The judge checks and the pool are counted as upper bounds, since
how many drafts survive the cheap filters is known only after generating them.
"""

from __future__ import annotations

from typing import Any

from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.testset.build_plan import plan_corpus, round_jobs
from ragmetrics.testset.settings import TestsetSettings

__all__ = ["estimate_testset"]


def estimate_testset(
    corpus: Any, settings: TestsetSettings, judge_settings: JudgeSettings, *, pooled: int
) -> str:
    """A paragraph: requests the build would make (generation exact, checks and pool at most)."""
    from ragmetrics.judge.select import resolve_backend

    backend, why = resolve_backend(judge_settings)
    plan = plan_corpus(corpus, settings)
    shares = {k: v for k, v in settings.kinds.items() if v > 0}
    jobs, _ = round_jobs(plan, plan.selection.picks, shares)
    drafts = len(jobs)
    use_llm = settings.generator == "llm" or (settings.generator == "auto" and backend == "openai")
    checks = (
        sum(len(chunks) + 1 for kind, chunks, _ in jobs if kind != "unanswerable")
        if settings.judge_checks
        else 0
    )
    pool_pairs = settings.size * settings.pool_depth * pooled
    lines = [
        f"corpus {plan.source.source}: {plan.profile.n_chunks} chunks, {len(plan.profile.ids)} worth asking about; "
        f"{drafts} drafts in the first round for {settings.size} questions (more rounds only if the filters leave "
        "too few)"
    ]
    if backend != "openai":
        lines.append(f"judge: local ({why}): no request leaves this machine; generator offline")
        return "\n".join(lines)
    if use_llm:
        cached = _cached_generation(jobs, judge_settings)
        lines.append(
            f"generation: {drafts} requests, {cached} already in the cache, {drafts - cached} to ask"
        )
    else:
        lines.append("generation: offline (no requests)")
    lines.append(
        f"judge checks: at most {checks} requests (passage_relevance per source, faithfulness per draft)"
    )
    if pooled:
        lines.append(
            f"pool: at most {pool_pairs} passage_relevance requests ({pooled} runs x top {settings.pool_depth})"
        )
    lines.append("nothing was asked (dry run)")
    return "\n".join(lines)


def _cached_generation(jobs: list[tuple[str, list[Any], str]], judge_settings: JudgeSettings) -> int:
    from ragmetrics.judge.backends.llm import LLMJudge
    from ragmetrics.judge.cache import VerdictCache
    from ragmetrics.testset.llm import PROMPT, _values

    if not judge_settings.use_cache or judge_settings.cache_path is None:
        return 0
    cache = VerdictCache(judge_settings.cache_path)
    judge = LLMJudge(judge_settings, cache=cache)
    keys = [judge.request_key(PROMPT, _values(kind, chunks, language)) for kind, chunks, language in jobs]
    return len(cache.peek_many(keys))
