"""A panel of judges as one judge: every member scores every (sample, metric) once, the scores are combined.

Why a panel: one judge's verdicts vary with its model family and its sampling; several judges from different
families agree with people better than one larger judge, at a fraction of its cost (PoLL, Verga et al. 2024,
arXiv 2404.18796). Each member is an ordinary judge with its verdicts cached as alone, under its own identity
(`panel_config.identity`), so a rerun asks no member again and two members never share a verdict.

Per item this module combines by the mean of the members' scores or the majority of their verdicts (cut at
the panel's threshold; a tie is 0.5). The combinations that need the whole run (weights learned from labels,
Dawid-Skene) are computed above the judge (`ragmetrics.panels`) from the members' scores this judge records
in each score's detail; until then an item's score is the members' mean, and the detail says so.

A member that fails fails the unit with its cause and name; the other members' verdicts stay cached.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ragmetrics.errors import ConfigError, JudgeError, NotApplicable
from ragmetrics.judge.base import Judge, MetricOutcome, RagSample
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.openai.budget import RequestBudget
from ragmetrics.schema import CacheStats, JudgeDetail, JudgeInfo, TokenUsage

if TYPE_CHECKING:
    from ragmetrics.judge.panel_config import PanelMember, PanelSettings
    from ragmetrics.judge.settings import JudgeSettings

__all__ = ["Member", "PanelJudge", "build_member", "combine_item", "identity", "make_panel", "member_settings"]

PANEL_BACKEND = "panel"


@dataclass
class Member:
    """A named judge of the panel, and the wall time of the units it had to ask for (not cached ones)."""

    name: str
    judge: Judge
    asked_units: int = 0
    asked_seconds: float = 0.0
    failures: int = 0
    identity: dict[str, Any] = field(default_factory=dict)

    def latency_s(self) -> float | None:
        """Mean seconds per unit it asked its server for; None when every unit came from the cache."""
        return self.asked_seconds / self.asked_units if self.asked_units else None


def combine_item(scores: Sequence[float], method: str, threshold: float) -> float:
    """One item's panel score: the mean, or the majority of verdicts (score >= threshold) with a tie at 0.5.
    'learned' and 'dawid_skene' need the whole run; per item they are the mean until recombined."""
    if not scores:
        raise ValueError("no member scores to combine")
    if method == "majority":
        yes = sum(1 for s in scores if s >= threshold)
        no = len(scores) - yes
        return 1.0 if yes > no else 0.0 if no > yes else 0.5
    return sum(scores) / len(scores)


class PanelJudge:
    """The Judge protocol over several member judges (module docstring)."""

    def __init__(self, members: Sequence[Member], *, combine: str = "mean", threshold: float = 0.5) -> None:
        if len(members) < 2:
            raise ConfigError("judge.panel: a panel needs at least two members")
        names = [m.name for m in members]
        if len(set(names)) != len(names):
            raise ConfigError(f"judge.panel: member names repeat: {names}")
        self.members = list(members)
        self.combine = combine
        self.threshold = threshold

    @property
    def backend(self) -> str:
        return PANEL_BACKEND

    @property
    def preferred_units_in_flight(self) -> int:
        wanted = [getattr(m.judge, "preferred_units_in_flight", 16) for m in self.members]
        return max(int(w) for w in wanted if isinstance(w, int)) if wanted else 16

    def supported_metrics(self) -> tuple[str, ...]:
        shared = set(self.members[0].judge.supported_metrics())
        for member in self.members[1:]:
            shared &= set(member.judge.supported_metrics())
        return tuple(m for m in self.members[0].judge.supported_metrics() if m in shared)

    async def _one(self, member: Member, metric: str, sample: RagSample) -> MetricOutcome:
        started = time.perf_counter()
        try:
            outcome = await member.judge.score(metric, sample)
        except JudgeError:
            member.failures += 1
            raise
        if not outcome.detail.cached:
            member.asked_units += 1
            member.asked_seconds += time.perf_counter() - started
        return outcome

    async def score(self, metric: str, sample: RagSample) -> MetricOutcome:
        outcomes = await asyncio.gather(
            *(self._one(m, metric, sample) for m in self.members), return_exceptions=True
        )
        for member, outcome in zip(self.members, outcomes, strict=True):
            if isinstance(outcome, NotApplicable):
                raise outcome
            if isinstance(outcome, JudgeError):
                raise JudgeError(f"panel member {member.name!r}: {outcome}", cause=outcome.cause) from outcome
            if isinstance(outcome, BaseException):
                raise outcome
        scored = [o for o in outcomes if isinstance(o, MetricOutcome)]
        values = [float(o.value) for o in scored]
        value = combine_item(values, self.combine, self.threshold)
        pending = self.combine in ("learned", "dawid_skene")
        reason = (
            f"panel of {len(values)} judges: their mean until the {self.combine} combination is fitted on the run"
            if pending
            else f"panel of {len(values)} judges, combined by the {self.combine}"
        )
        verdicts = [
            {"judge": m.name, "score": v, "cached": o.detail.cached}
            for m, v, o in zip(self.members, values, scored, strict=True)
        ]
        return MetricOutcome(
            value=value,
            detail=JudgeDetail(verdicts=verdicts, reason=reason, cached=all(o.detail.cached for o in scored)),
        )

    def member_report(self) -> list[dict[str, Any]]:
        """Per member: who it is, its calls, tokens, cost, cache use, failures and latency (its share of the bill)."""
        rows = []
        for member in self.members:
            info = member.judge.info()
            bill = getattr(member.judge, "verdicts_usage", None)
            rows.append(
                {
                    "name": member.name,
                    "backend": info.backend,
                    "model": info.model,
                    "base_url": info.base_url,
                    "usage": info.usage.model_dump(),
                    "verdicts_usage": bill().model_dump() if callable(bill) else None,
                    "cache": info.cache.model_dump(),
                    "failures": member.failures,
                    "asked_units": member.asked_units,
                    "latency_s": member.latency_s(),
                }
            )
        return rows

    def info(self) -> JudgeInfo:
        infos = [m.judge.info() for m in self.members]
        usage = TokenUsage()
        for field_name in ("calls", "prompt_tokens", "completion_tokens", "embedding_tokens", "retries",
                           "repairs", "batch_prompt_tokens", "batch_completion_tokens"):  # fmt: skip
            setattr(usage, field_name, sum(getattr(i.usage, field_name) for i in infos))
        costs = [i.usage.cost_usd for i in infos]
        usage.cost_usd = sum(c for c in costs if c is not None) if any(c is not None for c in costs) else None
        cache = CacheStats(
            hits=sum(i.cache.hits for i in infos),
            misses=sum(i.cache.misses for i in infos),
            writes=sum(i.cache.writes for i in infos),
            write_failures=sum(i.cache.write_failures for i in infos),
            failure_hits=sum(i.cache.failure_hits for i in infos),
            failure_retries=sum(i.cache.failure_retries for i in infos),
            path=next((i.cache.path for i in infos if i.cache.path), None),
            enabled=any(i.cache.enabled for i in infos),
        )
        return JudgeInfo(
            backend=PANEL_BACKEND,
            model="panel: " + ", ".join(m.name for m in self.members),
            settings={"panel": {"combine": self.combine, "threshold": self.threshold,
                                "members": self.member_report()}},
            cache=cache,
            usage=usage,
            failures=sum(m.failures for m in self.members),
        )

    async def aclose(self) -> None:
        for member in self.members:
            await member.judge.aclose()


def member_settings(member: PanelMember, base: JudgeSettings) -> JudgeSettings:
    """The night's judge settings with the member's keys laid over them (and no panel of its own)."""
    from ragmetrics.judge.panel_config import MEMBER_KEYS
    from ragmetrics.judge.settings import JudgeSettings

    update: dict[str, Any] = {k: getattr(member, k) for k in MEMBER_KEYS if getattr(member, k) is not None}
    update["backend"] = member.resolved_backend()
    fields = set(JudgeSettings.model_fields)
    merged = {k: v for k, v in base.model_dump().items() if k in fields} | update
    merged["panel"] = None
    return JudgeSettings.model_validate(merged)


def identity(settings: JudgeSettings) -> dict[str, Any]:
    """What makes one judge's verdicts its own in the cache: backend, endpoint (without credentials, query or
    fragment) and model. Never the key variable's value. A member's settings name their backend
    (`member_settings`)."""
    if settings.backend is None:
        raise ValueError("a panel member's settings must name their backend")
    if settings.backend == "local":
        return {"backend": "local", "local_model": settings.local_model}
    parts = urlsplit(settings.base_url or "https://api.openai.com/v1")
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return {"backend": "openai", "endpoint": f"{parts.scheme}://{netloc}{parts.path}", "model": settings.model}


def make_panel(settings: JudgeSettings, *, cache: VerdictCache | None = None) -> PanelJudge:
    """The panel `settings.panel` names, each member built from the night's settings with its keys laid over
    them, sharing one verdict cache (keys differ by member identity)."""
    panel: PanelSettings | None = settings.panel
    if panel is None:
        raise ConfigError("judge.panel is not set")
    if cache is None and settings.cache_path:
        cache = VerdictCache(settings.cache_path, enabled=settings.use_cache)
    members: list[Member] = []
    seen: dict[str, str] = {}
    # the panel is one judge: its max_requests (an adaptive night's max_calls) caps its members together
    shared = RequestBudget(settings.max_requests) if settings.max_requests is not None else None
    for position, spec in enumerate(panel.members):
        own = member_settings(spec, settings)
        who = identity(own)
        signature = repr(sorted({**who, "temperature": own.temperature, "seed": own.seed}.items()))
        name = spec.label(settings.model, settings.base_url)
        if signature in seen:
            raise ConfigError(
                f"judge.panel.members.{position}: {name!r} is the same judge as {seen[signature]!r} "
                "(same backend, endpoint, model and sampling); a panel's members must differ"
            )
        seen[signature] = name
        members.append(Member(name=name, judge=build_member(own, who, cache, budget=shared), identity=who))
    return PanelJudge(members, combine=panel.combine, threshold=panel.threshold)


def build_member(
    settings: JudgeSettings, who: dict[str, Any], cache: VerdictCache | None, *, budget: RequestBudget | None = None
) -> Judge:
    """One member judge: the LLM judge with its identity in its cache keys, or the local judge. `budget`: a
    request cap it shares with other judges (the local judge sends none)."""
    if who["backend"] == "local":
        from ragmetrics.judge.backends.local import LocalJudge

        return LocalJudge(cache=cache, model=settings.local_model)
    from ragmetrics.judge.backends.llm import LLMJudge

    return LLMJudge(settings, cache=cache, identity=who, budget=budget)
