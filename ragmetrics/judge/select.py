"""Which judge backend runs: an explicit choice wins, otherwise the configuration decides.

With an endpoint (`base_url`) or a non-empty API-key variable the OpenAI-compatible LLM judge runs;
with neither, the built-in local judge runs, so a first run works offline with no key. That fallback is
announced with a one-line log notice so nobody mistakes embedding-similarity verdicts for an LLM's.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Literal

from ragmetrics.judge.base import Judge
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.settings import JudgeSettings

if TYPE_CHECKING:
    from ragmetrics.judge.aligned.artifact import AlignedSet

logger = logging.getLogger("ragmetrics.judge")

Backend = Literal["openai", "local"]


def resolve_backend(settings: JudgeSettings) -> tuple[Backend, str]:
    """The backend to use and why (for logs and docs); never reads or reveals the key's value beyond emptiness."""
    if settings.backend is not None:
        return settings.backend, "set explicitly"
    if settings.base_url:
        return "openai", "base_url is set"
    if os.environ.get(settings.api_key_env, "").strip():
        return "openai", f"${settings.api_key_env} is set"
    return "local", f"no base_url and ${settings.api_key_env} is unset or empty"


def make_judge(settings: JudgeSettings | None = None, *, cache: VerdictCache | None = None) -> Judge:
    """Build the judge the settings ask for (see `resolve_backend`); `cache` replaces the one the settings
    name (a worker's shard of it, say)."""
    settings = settings or JudgeSettings()
    if settings.panel is not None:
        from ragmetrics.judge.panel import make_panel

        return make_panel(settings, cache=cache)
    backend, why = resolve_backend(settings)
    if backend == "local":
        from ragmetrics.judge.backends.local import LocalJudge

        if settings.backend is None:
            logger.warning(
                "ragmetrics: using the built-in local judge (embedding similarity, not an LLM): %s; "
                "set base_url or $%s for an LLM judge, or backend='local' to silence this notice",
                why,
                settings.api_key_env,
            )
        if cache is None and settings.cache_path:
            cache = VerdictCache(settings.cache_path, enabled=settings.use_cache)
        return _aligned(LocalJudge(cache=cache, model=settings.local_model), settings, _aligned_set(settings))
    from ragmetrics.judge.backends.llm import LLMJudge

    prompts = None
    aligned = _aligned_set(settings)
    if aligned is not None:
        from ragmetrics.judge.aligned.prompt_edit import EditedLibrary
        from ragmetrics.judge.prompts import default_library

        edits = {
            prompt: entry.prompt_edit
            for name, entry in aligned.metrics.items()
            if entry.prompt_edit is not None
            for prompt in _prompt_names(name)
        }
        prompts = EditedLibrary(default_library(), edits)
    return _aligned(LLMJudge(settings, cache=cache, prompts=prompts), settings, aligned)


def _aligned_set(settings: JudgeSettings) -> AlignedSet | None:
    """The aligned metrics `settings.aligned` names; None without one, or when its alignments kept no step and
    `if_not_aligned` is 'unaligned' (the judge as it is)."""
    if settings.aligned is None:
        return None
    from ragmetrics.judge.aligned.artifact import NothingAligned, load_aligned

    try:
        return load_aligned(settings.aligned)
    except NothingAligned:
        if settings.if_not_aligned == "unaligned":
            return None
        raise


def _prompt_names(metric: str) -> tuple[str, ...]:
    """The prompts a metric's verdicts come from: its prompt files, or its rubric's generated prompt."""
    from ragmetrics.judge.registry import resolve_judge_metric, spec

    # A team's rubric may not be registered yet when the judge is built (a night registers its metrics
    # around the run): its prompt is named after it either way.
    if resolve_judge_metric(metric) is None or spec(metric).plan == "rubric":
        return (f"rubric:{metric}",)
    return spec(metric).prompts


def _aligned(judge: Judge, settings: JudgeSettings, aligned: AlignedSet | None) -> Judge:
    """The judge wrapped in the aligned metrics (read once by the caller), or as it is without them."""
    if aligned is None:
        return judge
    from ragmetrics.judge.aligned.judge import AlignedJudge

    return AlignedJudge(judge, aligned, str(settings.aligned))
