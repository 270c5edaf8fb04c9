"""A night judged by a cascade (`judge.cascade`): the labels read, split (`cascade_labels`), the calibration
checked against the budget (`cascade_budget`), and each metric sent up the cascade.

Each judge of the cascade is one session (its own cache keys: its endpoint and model), kept open across
metrics and runs so every item is asked once per view; a rerun finds every verdict in the cache and sends
nothing. Every request of every judge counts against one request budget (`judge.max_requests`, an adaptive
night's `max_calls`), its calibration's included.

The figures (coverage, guaranteed and reached agreement, requests per judge against the strongest judge
alone) go into each result's metadata (`cascade:<metric>`) and one note per metric.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmetrics.engines.base import InProcessJudgeSession
from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.cascade.config import CascadePanel
from ragmetrics.judge.cascade.run import Cascade, CascadeReport, Stage
from ragmetrics.judge.openai.budget import RequestBudget
from ragmetrics.nightly.cascade_budget import (
    CalibrationCost,
    budget_key,
    calibration_stopped,
    check_calibration_budget,
)
from ragmetrics.nightly.cascade_labels import labelled_items, split_labels
from ragmetrics.nightly.estimate import question_costs
from ragmetrics.schema import JudgeInfo, RunResult, TokenUsage

if TYPE_CHECKING:
    from ragmetrics.engines.base import Engine
    from ragmetrics.judge.panel_config import PanelMember
    from ragmetrics.nightly.config_judge import JudgeConfig
    from ragmetrics.nightly.config_night import NightlyConfig

__all__ = ["CascadeSession", "judge_cascade", "split_labels"]

Item = tuple[str, str]


@dataclass
class _Judge:
    """One judge of the cascade: its views' sessions and the requests it was sent."""

    name: str
    sessions: list[_Session]
    spread: bool = False
    """a panel step: the sessions are its members, their agreement the confidence"""
    asked: int = 0
    infos: list[JudgeInfo] = field(default_factory=list)

    def score(self, run: str, samples: Sequence[RagSample], metric: str) -> list[RunResult]:
        self.asked += len(samples) * len(self.sessions)
        return [s.score(samples, [metric], name=run, progress=False) for s in self.sessions]


_Session = InProcessJudgeSession  # one judge scoring in this process: a cascade's member or one annotator


def _prompt_names(metric: str) -> tuple[str, ...]:
    from ragmetrics.judge.registry import resolve_judge_metric, spec

    if resolve_judge_metric(metric) is None or spec(metric).plan == "rubric":
        return (f"rubric:{metric}",)
    return spec(metric).prompts


def _sessions(
    member: PanelMember,
    judge: JudgeConfig,
    cache: VerdictCache | None,
    examples: Mapping[str, list[tuple[RagSample, float]]],
    budget: RequestBudget | None,
) -> list[_Session]:
    """The member's views: one judge (logprobs), `samples` seeds, or `samples` annotators with their examples;
    each asked `judge.repeats` times (`repeated_views`). Each is cached under the member's identity (endpoint
    and model), so two members never share a verdict; all send against the cascade's one `budget`."""
    from ragmetrics.judge.panel import build_member, identity, member_settings
    from ragmetrics.nightly.cascade_estimate import repeated_views

    base = member_settings(member, judge.settings())
    who = identity(base)
    if judge.confidence == "logprobs":
        return [_Session(build_member(s, who, cache, budget=budget)) for _, s in repeated_views([base], judge.repeats)]
    seed = base.seed or 0
    views = [base.model_copy(update={"seed": seed + r}) for r in range(judge.samples)]
    if judge.confidence == "samples":
        return [_Session(build_member(s, who, cache, budget=budget)) for _, s in repeated_views(views, judge.repeats)]
    if who["backend"] != "openai":
        raise InputError(
            "simulated annotators are LLM judges shown labelled examples", field="judge.confidence"
        )
    from ragmetrics.judge.aligned.prompt_edit import EditedLibrary, PromptEdit, example_of
    from ragmetrics.judge.backends.llm import LLMJudge
    from ragmetrics.judge.prompts import default_library
    from ragmetrics.judge.registry import spec
    from ragmetrics.judge.rubric import RubricMetric

    rubrics = {m.name: m for m in judge.custom_metrics if isinstance(m, RubricMetric)}
    libraries = []
    for r in range(len(views)):
        edits: dict[str, PromptEdit] = {}
        for metric, pool in examples.items():
            shots = pool[r * judge.shots : (r + 1) * judge.shots]
            reads = tuple(rubrics[metric].reads) if metric in rubrics else spec(metric).required
            edit = PromptEdit(examples=[example_of(s, label, reads) for s, label in shots])
            edits.update({name: edit for name in _prompt_names(metric)})
        libraries.append(EditedLibrary(default_library(), edits))
    # annotator r keeps its own examples in every repeat
    return [_Session(LLMJudge(settings, cache=cache, prompts=libraries[r], identity=who, budget=budget))
            for r, settings in repeated_views(views, judge.repeats)]  # fmt: skip


class CascadeSession:
    """A judge session (`engines.base.JudgeSession`) that sends each (sample, metric) up the cascade.

    Built over the night's plan: the labels are read and checked, and every metric's thresholds certified on
    its calibration items, before anything else is judged. `score` then routes whatever samples it is given
    (a whole run, or an adaptive night's batch) and returns abstentions as not applicable.
    """

    def __init__(self, config: NightlyConfig, plan: Mapping[str, tuple[list[RagSample], list[str]]]) -> None:
        judge = config.judge
        assert judge is not None and judge.cascade is not None and judge.labels is not None
        metrics = sorted({m for _, ms in plan.values() for m in ms})
        labelled, calibration, examples = labelled_items(config, plan)
        # before anything is sent: the calibration's requests within the night's budget (nightly.cascade_budget)
        self.calibration_bound = check_calibration_budget(config, plan, calibration, question_costs)
        self.notes: list[str] = []
        base = judge.settings()
        # one cap over every request of every judge of the cascade: K judges each capped alone could send K x it
        self.budget = RequestBudget(judge.max_requests) if judge.max_requests is not None else None
        self._cache = VerdictCache(base.cache_path, enabled=base.use_cache) if base.cache_path else None
        self.judges: list[_Judge] = []
        self.cascades: dict[str, Cascade] = {}
        try:
            for member in judge.cascade:  # one by one: a step that cannot be built leaves the others to close
                self.judges.append(_step(member, judge, self._cache, examples, self.budget))
            for metric in metrics:
                cascade = Cascade(
                    [Stage(j.name, j.score, spread=j.spread) for j in self.judges],
                    metric,
                    labelled[metric],
                    calibration[metric],
                    target=judge.agreement_target,
                    delta=judge.cascade_delta,
                    need_probabilities=judge.confidence == "logprobs",
                )
                cascade.calibrate({run: samples for run, (samples, ms) in plan.items() if metric in ms})
                self.cascades[metric] = cascade
                stopped = cascade.calibration_failures.get("budget_reached", 0)
                if stopped:
                    raise calibration_stopped(judge, stopped, self.info().usage.calls)
            if self.calibration_bound is not None:
                self.notes.append(_calibration_note(self.info().usage.calls, self.calibration_bound, judge))
        except BaseException:
            self.close()
            raise

    def score(
        self, samples: Sequence[RagSample], metrics: Sequence[str], *, name: str, progress: bool
    ) -> RunResult:
        del progress
        merged: RunResult | None = None
        for metric in metrics:
            result = self.cascades[metric].route({name: samples})[name]
            merged = result if merged is None else merged.merge(result)
        assert merged is not None
        merged.metadata.judge = self.info()
        merged.metadata.kind = "judge"
        return merged

    def info(self) -> JudgeInfo:
        info = _info([[s.info() for s in j.sessions] for j in self.judges], [j.name for j in self.judges])
        assert info is not None
        return info

    def finish(self, results: Mapping[str, RunResult]) -> list[str]:
        """The night's lines about the cascade; each result's `cascade:<metric>` figures made final."""
        for result in results.values():
            for metric, cascade in self.cascades.items():
                if metric in result.metadata.metrics:
                    result.metadata.extra[f"cascade:{metric}"] = cascade.report.as_dict()
        return [*self.notes, *(_note(c.report) for c in self.cascades.values())]

    def close(self) -> None:
        for j in self.judges:
            for s in j.sessions:
                s.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None


def _step(
    member: PanelMember | CascadePanel,
    judge: JudgeConfig,
    cache: VerdictCache | None,
    examples: Mapping[str, list[tuple[RagSample, float]]],
    budget: RequestBudget | None,
) -> _Judge:
    """One step of the cascade: a judge (its views by `judge.confidence`), or a panel (one view per member),
    each view `judge.repeats` times; every view sends against the cascade's one request `budget`."""
    base = judge.settings()
    if isinstance(member, CascadePanel):
        from ragmetrics.judge.panel import build_member, identity, member_settings
        from ragmetrics.nightly.cascade_estimate import repeated_views

        members = [member_settings(one, base) for one in member.panel]
        views = [_Session(build_member(own, identity(own), cache, budget=budget))
                 for _, own in repeated_views(members, judge.repeats)]  # fmt: skip
        return _Judge(member.name, views, spread=True)
    return _Judge(member.label(base.model, base.base_url), _sessions(member, judge, cache, examples, budget))


def judge_cascade(
    config: NightlyConfig,
    plan: Mapping[str, tuple[list[RagSample], list[str]]],
    notes: list[str],
    *,
    engine: Engine | None = None,
) -> tuple[dict[str, RunResult], JudgeInfo | None]:
    """Every run's judge metrics through the cascade; the first judge's info with the cascade's usage. The
    cascade's judges score in this process (each member's identity in its cache keys), whatever `engine`."""
    del engine
    session = CascadeSession(config, plan)
    try:
        results = {run: session.score(samples, metrics, name=run, progress=False)
                   for run, (samples, metrics) in plan.items() if samples}  # fmt: skip
        notes.extend(session.finish(results))
        return results, session.info()
    finally:
        session.close()


def _calibration_note(spent: int, bound: CalibrationCost, judge: JudgeConfig) -> str:
    return (
        f"cascade calibration: {spent:,} requests to certify the thresholds on {bound.items} labelled items "
        f"(planned at most {bound.calls:,}), before the first question; counted in the night's usage, within "
        f"{budget_key(judge)} {judge.max_requests if judge.max_requests is not None else 'unset'}, which every "
        "judge of the cascade shares"
    )


def _note(report: CascadeReport) -> str:
    coverage = "n/a" if report.coverage is None else f"{report.coverage:.1%}"
    reached = (
        f"{report.held_out_agreement:.3f} on {report.held_out_decided} decided held-out labels"
        if report.held_out_agreement is not None
        else "not measured (no held-out label was decided)"
    )
    # a judge that failed (down, timing out) sends its items up; said here, or it would read as merely unsure
    per_judge = ", ".join(
        f"{s.judge}: asked about {s.asked} items, {s.decided} decided"
        + (f", {s.failed} failed (sent up the cascade)" if s.failed else "")
        # a verdict whose server sent no log-probabilities, or only the sampled token's (normalised, a fake
        # certainty of 1), states no confidence: never kept on it, and said here
        + (f", {s.unstated} stated no confidence (no log-probabilities, or only the sampled token's with no "
           "alternative: sent up the cascade)" if s.unstated else "")
        + f" (threshold {'none certified' if s.threshold.threshold is None else f'{s.threshold.threshold:.4g}'})"
        for s in report.stages
    )
    return (
        f"cascade {report.metric}: {report.decided} decided, {report.abstained} abstained (never scored), "
        f"{report.failed} failed; coverage {coverage}; agreement with people guaranteed >= {report.target:g} "
        f"with probability >= {1 - report.delta:g} (if the labelled and judged items are exchangeable); "
        f"reached {reached}; {per_judge}; the strongest judge alone: asked about {report.items} items"
    )


def _add(a: TokenUsage, b: TokenUsage) -> TokenUsage:
    counts = {k: getattr(a, k) + getattr(b, k) for k in TokenUsage.model_fields if k != "cost_usd"}
    cost = None if a.cost_usd is None and b.cost_usd is None else (a.cost_usd or 0.0) + (b.cost_usd or 0.0)
    return TokenUsage(**counts, cost_usd=cost)


def _info(infos: Sequence[Sequence[JudgeInfo]], names: Sequence[str]) -> JudgeInfo | None:
    """The first judge's info with the whole cascade's usage; each judge's usage in its settings."""
    if not infos or not infos[0]:
        return None
    total = TokenUsage()
    per_judge: dict[str, Any] = {}
    for name, views in zip(names, infos, strict=True):
        usage = TokenUsage()
        for view in views:
            usage = _add(usage, view.usage)
        per_judge[name] = usage.model_dump()
        total = _add(total, usage)
    first = infos[0][0]
    return first.model_copy(
        update={"usage": total, "settings": {**first.settings, "cascade_usage": per_judge}}
    )
