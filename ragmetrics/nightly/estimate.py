"""Before and after a night: the calls, tokens, dollars and minutes it will take, and what it took.

`ragmetrics run --dry-run` builds everything a night builds without calling anything that costs: the team's
pipeline and generator are asked only for what their output cache lacks (counted, with placeholder outputs in
its place), and the LLM judge is run as `PlanningJudge`, which counts every verdict its cache does not hold. A
real night makes the same judge estimate just before it judges and records it beside what it spent
(`NightlyRun.work`), so the estimate's accuracy is visible every night.

Time is calls x seconds per call: the last night's measured seconds per call of each stage when the output
folder has one (`latest/report.json`), else a stated default divided by the configured concurrency. The judge is
timed too: an LLM judge as its requests at the last night's rate (or the default, `max_concurrency` at a time),
the local judge per verdict at the last night's rate or, without one, at the rate measured by judging a few
units of each metric now. Retriever runs are built on a sample of the corpus, never all of it
(`dry_retrievers`): their index building and searches are scaled up from it. Comparison and artifact time are not
included: they are seconds, and cost nothing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics._async import run_sync
from ragmetrics._textfile import read_bytes
from ragmetrics.errors import InputError, JudgeError, NotApplicable
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.openai.usage import CallUsage, token_usage
from ragmetrics.nightly.config_night import NightlyConfig
from ragmetrics.schema import NightWork, Report, WorkFigures

if TYPE_CHECKING:
    from ragmetrics.judge.backends.planning import PlanningJudge
    from ragmetrics.judge.settings import JudgeSettings
    from ragmetrics.retrievers import RetrieverTiming

__all__ = [
    "DEFAULT_SECONDS_PER_CALL",
    "actual_work",
    "estimate_judge",
    "estimate_night",
    "estimate_work",
    "finish_estimate",
    "question_costs",
]

DEFAULT_SECONDS_PER_CALL = 2.0
"""One request's seconds when no earlier night measured it (a chat completion of a few hundred tokens)."""

JudgePlan = Mapping[str, tuple[list[RagSample], list[str]]]


def estimate_judge(config: NightlyConfig, plan: JudgePlan) -> tuple[WorkFigures, list[str]]:
    """The judge's requests and tokens over `plan` (run -> samples, metrics), counted against its cache."""
    figures = WorkFigures()
    assumptions: list[str] = []
    if config.judge is None or not plan:
        return figures, assumptions
    settings = config.judge.settings()
    units = sum(len(samples) * len(metrics) for samples, metrics in plan.values())
    figures.judge_units = units * settings.repeats
    steps = None
    if config.judge.cascade:  # its judges' views, step by step (a bound: nightly.cascade_estimate)
        from ragmetrics.nightly.cascade_estimate import cascade_views

        steps = cascade_views(config.judge)
    judges = [view for _, views in steps for view in views] if steps is not None else _judges_of(settings)
    if not judges:
        assumptions.append("the local judge makes no requests; its time is the last night's per verdict")
        return figures, assumptions
    from ragmetrics.judge.backends.planning import CHARS_PER_TOKEN
    from ragmetrics.judge.cache import VerdictCache

    path = settings.cache_path if settings.use_cache else None
    # A cache that does not exist yet holds nothing: read as empty rather than created by a dry run.
    cache = VerdictCache(path if path is not None and path.exists() else None, enabled=path is not None)
    priced = unpriced = 0
    per_view: list[int] = []  # each judge's requests, in order
    try:
        for judge_settings, identity in judges:
            before = WorkFigures(prompt_tokens=figures.prompt_tokens, completion_tokens=figures.completion_tokens,
                                 embedding_tokens=figures.embedding_tokens, judge_calls=figures.judge_calls)  # fmt: skip
            _plan_judge(judge_settings, identity, plan, cache, figures, assumptions)
            per_view.append(figures.judge_calls - before.judge_calls)
            prices = judge_settings.price_per_million_tokens
            if prices is None:
                unpriced += 1
                continue
            priced += 1
            usage = CallUsage(
                prompt_tokens=figures.prompt_tokens - before.prompt_tokens,
                completion_tokens=figures.completion_tokens - before.completion_tokens,
                embedding_tokens=figures.embedding_tokens - before.embedding_tokens,
            )
            # the chat requests through the Batch API instead (priced both ways for --dry-run)
            factor = judge_settings.batch.price_factor if judge_settings.batch is not None else 0.5
            batched = CallUsage(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                                embedding_tokens=usage.embedding_tokens, batch_prompt_tokens=usage.prompt_tokens,
                                batch_completion_tokens=usage.completion_tokens)  # fmt: skip
            figures.cost_usd = (figures.cost_usd or 0.0) + (token_usage(usage, prices).cost_usd or 0.0)
            figures.cost_usd_batch = (figures.cost_usd_batch or 0.0) + (
                token_usage(batched, prices, batch_factor=factor).cost_usd or 0.0
            )
    finally:
        cache.close()
    if steps is not None:
        from ragmetrics.nightly.cascade_estimate import cascade_bound_note

        calls = iter(per_view)
        per_step = [(name, sum(next(calls) for _ in views)) for name, views in steps]
        assumptions.append(cascade_bound_note(per_step[0][0], per_step[0][1], per_step[1:]))
        from ragmetrics.nightly.cascade_budget import calibration_estimate

        calibrating = calibration_estimate(config, plan, question_costs)  # under a budget: the calibration within it
        if calibrating is not None:
            assumptions.append(calibrating)
    if unpriced:  # a partial bill would read as the whole one
        figures.cost_usd = figures.cost_usd_batch = None
    assumptions.append(
        f"judge requests are exact for this cache (retries and repairs not included); prompt tokens are the "
        f"rendered messages at {CHARS_PER_TOKEN:g} characters a token, completion tokens the cache's mean per "
        "prompt where it has verdicts of it"
    )
    if unpriced and not priced:
        assumptions.append("no judge.price_per_million_tokens in the config: cost not estimated")
    elif unpriced:
        assumptions.append(f"{unpriced} panel members have no price_per_million_tokens: cost not estimated")
    return figures, assumptions


def _judges_of(settings: JudgeSettings) -> list[tuple[JudgeSettings, dict[str, Any] | None]]:
    """The LLM judges that send requests, each with the identity its cache keys carry: the judge alone (no
    identity), or a panel's OpenAI-compatible members (the local judge sends none)."""
    from ragmetrics.judge.select import resolve_backend

    if settings.panel is None:
        backend, _why = resolve_backend(settings)
        return [] if backend == "local" else [(settings, None)]
    from ragmetrics.judge.panel import identity, member_settings

    members = [member_settings(m, settings) for m in settings.panel.members]
    return [(m, identity(m)) for m in members if m.backend != "local"]


def _plan_judge(
    settings: JudgeSettings,
    identity: dict[str, Any] | None,
    plan: JudgePlan,
    cache: Any,
    figures: WorkFigures,
    assumptions: list[str],
) -> None:
    """Count one judge's requests over `plan` (every repeat) into `figures`."""
    from ragmetrics.judge.backends.planning import PlanningJudge

    for repeat in range(settings.repeats):
        seeded = settings if repeat == 0 else settings.model_copy(update={"seed": (settings.seed or 0) + repeat})
        judge = PlanningJudge(seeded, cache=cache, identity=identity)
        run_sync(_plan_units(judge, plan))
        work = judge.work
        figures.judge_calls += work.chat_calls
        figures.embedding_calls += work.embedding_calls
        figures.prompt_tokens += work.prompt_tokens
        figures.completion_tokens += work.completion_tokens
        figures.embedding_tokens += work.embedding_tokens
        figures.cached_verdicts += work.cached_verdicts
        if work.recorded_failures:
            assumptions.append(
                f"{work.recorded_failures} verdicts failed before and are not asked again "
                f"(retry_failed={settings.retry_failed!r}): no requests counted for them"
            )


def question_costs(config: NightlyConfig, plan: JudgePlan, questions: list[str]) -> list[tuple[int, float]]:
    """What judging each of `questions` (every run of `plan` on it) will cost, in order, against the cache as it
    is now: (judge requests, USD; 0.0 without prices). A request two questions share is counted for the first.
    Exact for metrics of one request per item; a floor for those whose later requests depend on a verdict (the
    planner stops a unit at its first uncached verdict). The local judge costs nothing.

    A cascade: every view of every judge, each at its own prices and cache identity. The first judge is asked
    about every question; which go further is known only once they are judged, so each later judge is counted
    as if asked too: an upper bound (`cascade_estimate`), so an adaptive night's budget is never passed by a
    question escalated beyond what was planned."""
    if config.judge is None or not plan:
        return [(0, 0.0)] * len(questions)
    settings = config.judge.settings()
    if config.judge.cascade:
        from ragmetrics.nightly.cascade_estimate import cascade_views

        judges = [view for _, views in cascade_views(config.judge) for view in views]
    else:
        judges = _judges_of(settings)  # a panel: every member that sends requests, at its own prices
    if not judges:
        return [(0, 0.0)] * len(questions)
    from ragmetrics.judge.backends.planning import PlanningJudge
    from ragmetrics.judge.cache import VerdictCache

    path = settings.cache_path if settings.use_cache else None
    cache = VerdictCache(path if path is not None and path.exists() else None, enabled=path is not None)
    costs = [[0, 0.0] for _ in questions]
    try:
        for member, identity in judges:
            factor = member.batch.price_factor if member.batch is not None else 1.0
            for repeat in range(member.repeats):
                seeded = member if repeat == 0 else member.model_copy(update={"seed": (member.seed or 0) + repeat})
                judge = PlanningJudge(seeded, cache=cache, identity=identity)
                for i, qid in enumerate(questions):
                    one = {run: ([x for x in samples if x.id == qid], metrics)
                           for run, (samples, metrics) in plan.items()}  # fmt: skip
                    before = CallUsage(prompt_tokens=judge.work.prompt_tokens,
                                       completion_tokens=judge.work.completion_tokens,
                                       embedding_tokens=judge.work.embedding_tokens)  # fmt: skip
                    # every request counts against the cap and budget, chat and embeddings, to either endpoint
                    # (`backends.llm.make_embedder`); a local embedder plans none
                    calls = judge.work.calls
                    run_sync(_plan_units(judge, {run: part for run, part in one.items() if part[0]}))
                    spent = CallUsage(prompt_tokens=judge.work.prompt_tokens - before.prompt_tokens,
                                      completion_tokens=judge.work.completion_tokens - before.completion_tokens,
                                      embedding_tokens=judge.work.embedding_tokens - before.embedding_tokens)  # fmt: skip
                    if factor != 1.0:
                        spent.batch_prompt_tokens = spent.prompt_tokens
                        spent.batch_completion_tokens = spent.completion_tokens
                    cost = token_usage(spent, member.price_per_million_tokens, batch_factor=factor).cost_usd
                    costs[i][0] += judge.work.calls - calls
                    costs[i][1] += cost or 0.0
    finally:
        cache.close()
    return [(int(c), float(u)) for c, u in costs]


async def _plan_units(judge: PlanningJudge, plan: JudgePlan) -> None:
    import asyncio

    from ragmetrics.judge.backends.planning import Planned

    for samples, metrics in plan.values():
        for sample in samples:
            for metric in metrics:
                try:
                    await judge.score(metric, sample)
                except (Planned, JudgeError, NotApplicable):
                    continue
    await asyncio.sleep(0)  # let units gathered inside a handler finish their count


def _last_night(config: NightlyConfig, output_dir: Path | None) -> WorkFigures | None:
    """What the latest night under the output folder spent, when it recorded it."""
    from ragmetrics.nightly.artifacts import latest_folder

    folder = latest_folder(output_dir or config.output.dir)
    if folder is None:
        return None
    path = folder / "report.json"
    try:
        report = Report.model_validate_json(read_bytes(path))
    except (InputError, ValueError):
        return None
    nightly = report.metadata.nightly
    if nightly is None or nightly.work is None or nightly.work.actual is None:
        return None
    return nightly.work.actual


def _seconds(
    calls: int, stage: str, concurrency: int, last: WorkFigures | None, last_calls: int, notes: list[str]
) -> float:
    if calls == 0:
        return 0.0
    if last is not None and last_calls > 0 and stage in last.seconds:
        return calls * last.seconds[stage] / last_calls
    notes.append(
        f"{stage}: no earlier night measured its seconds per call; assumed {DEFAULT_SECONDS_PER_CALL:g} s per "
        f"call, {concurrency} at a time"
    )
    return calls * DEFAULT_SECONDS_PER_CALL / max(1, concurrency)


JUDGE_SAMPLE_UNITS = (4, 12)
"""Two sample sizes per metric the local judge is timed on in a dry run without an earlier night (after one unit
to warm it up): two, because it batches the units in flight, so its cost is a start-up plus a smaller cost per
unit than any small sample shows."""


def local_judge_seconds(config: NightlyConfig, plan: JudgePlan) -> tuple[float, dict[str, float]]:
    """The local judge's seconds for every unit of `plan`, measured now: (total, metric -> marginal seconds per
    verdict).

    The local judge is a model on this machine: its rate is measured, not assumed. Per metric, one unit first
    warms it up (loading the models is once a night, not per verdict); then two samples of different sizes,
    spread over the plan, are judged and timed, and a line through them (a start-up plus a cost per unit) is
    extended to the metric's units. No cache is read or written (a dry run writes nothing)."""
    from ragmetrics.engines import LocalEngine

    assert config.judge is not None
    by_metric: dict[str, list[RagSample]] = {}
    for samples, metrics in plan.values():
        for metric in metrics:
            by_metric.setdefault(metric, []).extend(samples)
    settings = config.judge.settings().model_copy(update={"use_cache": False, "cache_path": None})
    session = LocalEngine().judge_session(settings)
    small, large = JUDGE_SAMPLE_UNITS
    total = 0.0
    rates: dict[str, float] = {}
    try:
        for metric, samples in by_metric.items():
            step = max(1, len(samples) // (1 + small + large))
            spread = samples[::step] + [x for i, x in enumerate(samples) if i % step]
            session.score(spread[:1], [metric], name="warm-up", progress=False)
            first = _distinct(spread[1:], small) or spread[:1]
            second = _distinct(spread[1 + len(first) :], large)
            started = time.perf_counter()
            session.score(first, [metric], name="dry run", progress=False)
            t_first = time.perf_counter() - started
            per_unit, fixed = t_first / len(first), 0.0  # one sample only (few questions): its mean
            if len(second) > len(first):
                started = time.perf_counter()
                session.score(second, [metric], name="dry run", progress=False)
                t_second = time.perf_counter() - started
                slope = (t_second - t_first) / (len(second) - len(first))
                # noise can make the line fall: then the larger sample's own mean, an upper bound
                per_unit = slope if slope > 0 else t_second / len(second)
                fixed = max(0.0, t_first - per_unit * len(first))
            rates[metric] = per_unit
            total += fixed + per_unit * len(samples)
    finally:
        session.close()
    return total, rates


def _distinct(samples: list[RagSample], count: int) -> list[RagSample]:
    """Up to `count` of `samples` in order with no id twice: one judge call scores each question once (the plan
    holds every run's sample of a question)."""
    out: list[RagSample] = []
    seen: set[str] = set()
    for sample in samples:
        if sample.id not in seen:
            seen.add(sample.id)
            out.append(sample)
            if len(out) == count:
                break
    return out


def finish_estimate(
    config: NightlyConfig,
    figures: WorkFigures,
    assumptions: list[str],
    output_dir: Path | None = None,
    *,
    retrieved: Mapping[str, RetrieverTiming] | None = None,
    judge_seconds: float | None = None,
) -> NightWork:
    """The estimate with its time per stage, from the last night's measured rates where there is one;
    `retrieved`: the retriever runs' estimated timings; `judge_seconds`: the judge's time measured now (the
    local judge, without an earlier night to time it by)."""
    last = _last_night(config, output_dir)
    seconds: dict[str, float] = {}
    if retrieved:
        seconds["retriever index"] = sum(t.index_s for t in retrieved.values())
        seconds["retrieval"] = sum(sum(t.search_s.values()) for t in retrieved.values())
        counted = [t.embedded for t in retrieved.values() if t.embedded is not None]
        figures.chunks_embedded = sum(counted) if counted else None
    for role, calls in (("pipeline", figures.pipeline_calls), ("generator", figures.generator_calls)):
        concurrency = _concurrency(config, role)
        last_calls = getattr(last, f"{role}_calls", 0) if last is not None else 0
        if calls:
            seconds[role] = _seconds(calls, role, concurrency, last, last_calls, assumptions)
    if config.judge is not None and figures.judge_units:
        from ragmetrics.judge.select import resolve_backend

        value: float | None = None
        if resolve_backend(config.judge.settings())[0] == "openai":
            requests = figures.judge_calls + figures.embedding_calls
            last_requests = (last.judge_calls + last.embedding_calls) if last is not None else 0
            value = _seconds(
                requests, "judge", config.judge.max_concurrency, last, last_requests, assumptions
            )
        elif (
            last is not None and last.judge_units and "judge" in last.seconds
        ):  # local: per verdict, measured
            value = figures.judge_units * last.seconds["judge"] / last.judge_units
        elif judge_seconds is not None:
            value = judge_seconds
        if value is not None:
            seconds["judge"] = value
    figures.seconds = seconds
    if last is not None:
        assumptions.append("seconds per call from the last night under the output folder")
    return NightWork(estimate=figures, assumptions=assumptions)


def _concurrency(config: NightlyConfig, role: str) -> int:
    from ragmetrics.nightly.config_runs import PipelineRunSpec

    if role == "generator":
        return config.generator.concurrency if config.generator is not None else 1
    specs = [s for s in config.runs if isinstance(s, PipelineRunSpec)]
    return specs[0].concurrency if specs else 1


def estimate_work(
    config: NightlyConfig,
    plan: JudgePlan,
    made: Mapping[str, int],
    output_dir: Path | None = None,
    *,
    retrieved: Mapping[str, RetrieverTiming] | None = None,
    measure_judge: bool = False,
) -> NightWork:
    """The night's estimate from its judge plan and the pipeline and generator calls `made` (or planned);
    `measure_judge`: time the local judge on a sample when no earlier night did (the dry run)."""
    figures, assumptions = estimate_judge(config, plan)
    figures.pipeline_calls = made.get("pipeline", 0)
    figures.generator_calls = made.get("generator", 0)
    judge_seconds = None
    if measure_judge and config.judge is not None and plan and _local_rate_missing(config, output_dir):
        once, rates = local_judge_seconds(config, plan)
        judge_seconds = once * config.judge.settings().repeats
        assumptions.append(
            "local judge: seconds per verdict measured now on two samples of each metric ("
            + ", ".join(f"{m} {rates[m]:.3g} s" for m in rates) + ", plus its start-up)"
        )
    return finish_estimate(config, figures, assumptions, output_dir, retrieved=retrieved, judge_seconds=judge_seconds)


def _local_rate_missing(config: NightlyConfig, output_dir: Path | None) -> bool:
    """Whether the judge is the local one and no earlier night under the output folder timed its verdicts."""
    from ragmetrics.judge.select import resolve_backend

    assert config.judge is not None
    if resolve_backend(config.judge.settings())[0] != "local":
        return False
    last = _last_night(config, output_dir)
    return last is None or not last.judge_units or "judge" not in last.seconds


def estimate_night(
    config: NightlyConfig, *, output_dir: Path | None = None, refresh_pipeline: bool = False
) -> NightWork:
    """The dry run: everything a night would call and spend, with nothing called and nothing written."""
    from ragmetrics.nightly.answers import AnsweredRun
    from ragmetrics.nightly.load import load_dataset
    from ragmetrics.nightly.runs import build_runs, generate_for_runs, judge_plan, target_calls

    dataset = load_dataset(config.dataset, progress=False)
    calls = target_calls(config, output_dir=output_dir, refresh=refresh_pipeline, dry_run=True)
    calls.dry_contexts = config.judge.contexts_top_k if config.judge is not None else 3
    notes: list[str] = []
    answered: dict[str, AnsweredRun] = {}
    retrieved: dict[str, RetrieverTiming] = {}
    try:
        runs = build_runs(config, dataset, calls=calls, answered=answered, retrieved=retrieved)
        if config.generator is not None:
            generate_for_runs(config, dataset, runs, answered, calls, notes)
    finally:
        if calls.cache is not None:
            calls.cache.close()
    plan = judge_plan(config, dataset, runs, notes, answered)
    work = estimate_work(config, plan, calls.made, output_dir, retrieved=retrieved, measure_judge=True)
    work.assumptions.extend(calls.dry_notes)
    from ragmetrics.nightly.utility_night import utility_plan_notes

    work.assumptions.extend(utility_plan_notes(config, dataset, runs, output_dir=output_dir, search=calls.search))
    if any(calls.made.values()):
        work.assumptions.append(
            "questions the pipeline or generator has not answered yet are judged as placeholders of the same "
            f"shape ({calls.dry_contexts} passages, one answer): their judge requests are counted, their tokens "
            "approximate"
        )
    return work


def actual_work(
    estimate: NightWork,
    *,
    made: Mapping[str, int],
    usage: WorkFigures,
    seconds: Mapping[str, float],
) -> NightWork:
    """The estimate with what the night spent beside it."""
    actual = usage.model_copy(
        update={
            "pipeline_calls": made.get("pipeline", 0),
            "generator_calls": made.get("generator", 0),
            "seconds": {k: round(v, 3) for k, v in seconds.items() if not math.isnan(v)},
        }
    )
    return estimate.model_copy(update={"actual": actual})
