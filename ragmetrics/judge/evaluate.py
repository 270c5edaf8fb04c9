"""Score RAG samples with a judge into the unified `RunResult`, for any backend.

This module talks to the `Judge` protocol only. It owns what is the same for every backend: validating the
samples, scheduling (sample, metric) units with bounded concurrency, turning every failure into a recorded
`SampleFailure` with its cause (never a NaN, never a dropped sample), the progress bar, and the result
metadata. It runs async inside; `evaluate_rag` also works when called from code that already runs an event
loop (a notebook, an async web handler) by running its own loop in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import math
import sys
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from pydantic import ValidationError

from ragmetrics._async import run_sync
from ragmetrics.errors import ConfigError, InputError, JudgeError, NotApplicable
from ragmetrics.judge.base import Judge, MetricOutcome, RagSample, reference_not_applicable
from ragmetrics.judge.conversation import (
    CONVERSATION_FIELD,
    HISTORY_METRICS,
    conversation_view,
    earlier_turns,
    last_turns,
    with_history,
)
from ragmetrics.judge.interrupt import stop_scope
from ragmetrics.schema import JudgeDetail, NotApplicableScore, RunMetadata, RunResult, SampleFailure

logger = logging.getLogger("ragmetrics.judge")

DEFAULT_MAX_CONCURRENCY = 64
# How long an interrupted run waits for the judge calls already sent before it stops anyway.
DRAIN_TIMEOUT_S = 60.0


def _samples(samples: Iterable[RagSample | dict[str, Any]]) -> list[RagSample]:
    out: list[RagSample] = []
    seen: dict[str, int] = {}
    for position, item in enumerate(samples, start=1):
        if isinstance(item, RagSample):
            sample = item
        elif isinstance(item, dict):
            if item.get("id") is None:
                # Rows without ids are numbered as the CLI numbers them: "row-<position>", stable across runs.
                item = {**item, "id": f"row-{position}"}
            try:
                sample = RagSample.model_validate(item)
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(p) for p in err["loc"]) or None
                raise InputError(err["msg"], source="samples", line=position, field=field) from exc
        else:
            raise InputError(
                f"expected a RagSample or a dict, got {type(item).__name__}", source="samples", line=position
            )
        if sample.id in seen:
            raise InputError(
                f"duplicate sample id {sample.id!r} (first at position {seen[sample.id]})",
                source="samples",
                line=position,
                field="id",
            )
        seen[sample.id] = position
        out.append(sample)
    return out


def _check_metrics(metrics: Sequence[str], judge: Judge) -> list[str]:
    if isinstance(metrics, str):
        raise ConfigError(f"metrics must be a list of names, not the string {metrics!r}")
    supported = judge.supported_metrics()
    unknown = [m for m in metrics if m not in supported]
    if unknown:
        import difflib

        hints = [
            f"{m!r}: did you mean {close[0]!r}?"
            for m in unknown
            if (close := difflib.get_close_matches(m, supported, n=1, cutoff=0.6))
        ]
        raise ConfigError(
            f"unknown judge metric(s) {unknown}"
            + (f" ({'; '.join(hints)})" if hints else "")
            + f"; the {judge.backend} judge supports {list(supported)}"
        )
    if not metrics:
        raise ConfigError("no judge metric requested")
    if len(set(metrics)) != len(metrics):
        raise ConfigError(
            f"judge metrics listed twice: {sorted({m for m in metrics if list(metrics).count(m) > 1})}"
        )
    return list(metrics)


def _progress(
    enabled: bool, total: int, run: str, metrics: Sequence[str]
) -> tuple[AbstractContextManager[Any], Any]:
    """A rich progress bar on an interactive stderr, else a no-op; returns (context, advance callback).

    The bar says which run and which metrics it judges, so a nightly job's several bars can be told apart.
    """
    if not enabled or not sys.stderr.isatty():
        return nullcontext(), lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    label = f"judging {run}: {', '.join(metrics)}"
    bar = Progress(
        TextColumn(label.replace("[", "\\[")),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )
    task = bar.add_task("judge", total=total)
    return bar, lambda: bar.advance(task)


async def _score_one(
    judge: Judge, metric: str, sample: RagSample
) -> MetricOutcome | SampleFailure | NotApplicableScore:
    unanswerable = reference_not_applicable(metric, sample)
    if unanswerable is not None:
        return NotApplicableScore(query_id=sample.id, metric=metric, reason=unanswerable)
    missing = sample.missing_fields(metric)
    if missing:
        return SampleFailure(
            query_id=sample.id,
            metric=metric,
            cause="missing_field",
            message=f"{metric} needs {', '.join(missing)}, which the sample lacks",
        )
    try:
        outcome = await judge.score(metric, sample)
    except NotApplicable as exc:
        return NotApplicableScore(query_id=sample.id, metric=metric, reason=exc.reason)
    except JudgeError as exc:
        return SampleFailure(query_id=sample.id, metric=metric, cause=exc.cause, message=str(exc))
    except Exception as exc:  # one faulty unit must not cost the run its other, possibly paid-for, scores
        logger.exception("judge %s failed on sample %r, metric %s", judge.backend, sample.id, metric)
        return SampleFailure(
            query_id=sample.id, metric=metric, cause="internal_error", message=f"{type(exc).__name__}: {exc}"
        )
    if not isinstance(outcome.value, float | int) or not math.isfinite(outcome.value):
        return SampleFailure(
            query_id=sample.id,
            metric=metric,
            cause="invalid_value",
            message=f"the judge returned {outcome.value!r}, not a finite number",
        )
    return outcome


async def aevaluate_rag(
    samples: Iterable[RagSample | dict[str, Any]],
    metrics: Sequence[str],
    judge: Judge | None = None,
    *,
    name: str = "rag",
    max_units_in_flight: int | None = None,
    progress: bool = True,
    max_concurrency: int | None = None,
) -> RunResult:
    """The coroutine behind `evaluate_rag`; use it directly from async code.

    A judge passed in stays open (the caller owns it and closes it with `await judge.aclose()`); one made
    here is closed at the end.
    """
    items = _samples(samples)
    owned = judge is None
    if judge is None:
        from ragmetrics.judge.select import make_judge

        judge = make_judge()
    try:
        metric_list = _check_metrics(metrics, judge)
        limit = _unit_limit(max_units_in_flight, max_concurrency, judge)
        results: dict[tuple[str, str], MetricOutcome | SampleFailure | NotApplicableScore] = {}
        units = _units(items, metric_list, results)
        queue: asyncio.Queue[tuple[RagSample, str]] = asyncio.Queue()
        for unit in units:
            queue.put_nowait(unit)
        context, advance = _progress(progress, len(units), name, metric_list)

        in_flight: set[asyncio.Task[MetricOutcome | SampleFailure | NotApplicableScore]] = set()

        async def worker(j: Judge) -> None:
            while True:
                try:
                    sample, metric = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                unit = asyncio.ensure_future(_score_one(j, metric, sample))
                in_flight.add(unit)
                unit.add_done_callback(in_flight.discard)
                # Shielded: an interruption stops the workers, not the calls already sent (see below).
                results[(sample.id, metric)] = await asyncio.shield(unit)
                advance()

        with context, stop_scope() as stop:
            try:
                await asyncio.gather(*(worker(judge) for _ in range(min(limit, max(1, len(units))))))
            except asyncio.CancelledError:
                # Ctrl-C / SIGTERM: start nothing new (no unit, and no request of a unit under way: see
                # `interrupt`), but let the requests already sent finish so their verdicts reach the cache and
                # a restart does not ask for them again. A second Ctrl-C (asyncio raises KeyboardInterrupt
                # then) or the drain timeout ends the wait at once.
                stop.stopped = True
                if in_flight:
                    await asyncio.wait(set(in_flight), timeout=DRAIN_TIMEOUT_S)
                raise
        return _result(name, items, metric_list, results, judge)
    finally:
        if owned:
            await judge.aclose()


def _units(
    items: list[RagSample],
    metrics: list[str],
    results: dict[tuple[str, str], MetricOutcome | SampleFailure | NotApplicableScore],
) -> list[tuple[RagSample, str]]:
    """The (sample, metric) units to judge, each sample as its metric sees it (`judge.conversation`): a
    turn's faithfulness with the conversation so far, a conversation metric on the conversation's last turn
    with its transcript (its other turns recorded as not applicable in `results`), the rest as given."""
    from ragmetrics.judge.registry import spec

    earlier = earlier_turns(items)
    ends = last_turns(items)
    conversational = {m for m in metrics if _reads_conversation(spec(m))}
    units: list[tuple[RagSample, str]] = []
    for sample in items:
        for metric in metrics:
            if metric in conversational:
                view = conversation_view(sample, earlier.get(sample.id, []), ends)
                if isinstance(view, str):
                    results[(sample.id, metric)] = NotApplicableScore(
                        query_id=sample.id, metric=metric, reason=view
                    )
                    continue
                units.append((view, metric))
            elif metric in HISTORY_METRICS and sample.id in earlier:
                units.append((with_history(sample, earlier[sample.id]), metric))
            else:
                units.append((sample, metric))
    return units


def _reads_conversation(metric: Any) -> bool:
    rubric = getattr(metric, "rubric", None)
    return rubric is not None and CONVERSATION_FIELD in getattr(rubric, "reads", ())


def _result(
    name: str,
    items: list[RagSample],
    metrics: list[str],
    results: dict[tuple[str, str], MetricOutcome | SampleFailure | NotApplicableScore],
    judge: Judge,
) -> RunResult:
    per_query: dict[str, dict[str, float | None]] = {}
    details: dict[str, dict[str, JudgeDetail]] = {}
    failures: list[SampleFailure] = []
    not_applicable: list[NotApplicableScore] = []
    for sample in items:
        scores: dict[str, float | None] = {}
        for metric in metrics:
            outcome = results[(sample.id, metric)]
            if isinstance(outcome, SampleFailure):
                scores[metric] = None
                failures.append(outcome)
            elif isinstance(outcome, NotApplicableScore):
                scores[metric] = None
                not_applicable.append(outcome)
            else:
                scores[metric] = float(outcome.value)
                details.setdefault(sample.id, {})[metric] = outcome.detail
        per_query[sample.id] = scores
    info = judge.info()
    info.failures = len(failures)
    info.settings = {**info.settings, **_language_settings(items)}
    result = RunResult(
        name=name,
        per_query=per_query,
        failures=failures,
        not_applicable=not_applicable,
        details=details,
        metadata=RunMetadata(
            kind="judge",
            metrics=metrics,
            num_queries=len(items),
            judge=info,
            metric_settings={"backend": info.backend, **info.settings, **_claim_relevance(details)},
        ),
    )
    result.recompute_aggregate()
    return result


def _claim_relevance(details: dict[str, dict[str, JudgeDetail]]) -> dict[str, Any]:
    """How many samples' claim diagnostics took chunk relevance from the qrels and how many from the
    reference claims, so a report says which source decided it (nothing when no diagnostic ran)."""
    sources = Counter(
        next(d.claims.relevance_source for d in per_metric.values() if d.claims is not None)
        for per_metric in details.values()
        if any(d.claims is not None for d in per_metric.values())
    )
    return {"claim_relevance": dict(sorted(sources.items()))} if sources else {}


def _language_settings(items: list[RagSample]) -> dict[str, Any]:
    """What the result records about languages: how many samples' questions are in each (set per sample, or
    detected from the script), and whether any language was set rather than detected."""
    counts = Counter(sample.question_language for sample in items)
    given = sorted({sample.language for sample in items if sample.language})
    return {
        "languages": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        "language_source": ("set: " + ", ".join(given)) if given else "detected from each text's script",
    }


def evaluate_rag(
    samples: Iterable[RagSample | dict[str, Any]],
    metrics: Sequence[str],
    judge: Judge | None = None,
    *,
    name: str = "rag",
    max_units_in_flight: int | None = None,
    progress: bool = True,
    max_concurrency: int | None = None,
) -> RunResult:
    """Score `samples` on judge `metrics` (see `ragmetrics.judge.registry`).

    `judge` defaults to `ragmetrics.judge.select.make_judge()`: the LLM judge when an endpoint or API key is
    configured, else the built-in local judge. `max_units_in_flight` bounds the (sample, metric) units in
    flight (default 64); the LLM judge bounds its HTTP requests separately (`JudgeSettings.max_concurrency`);
    `max_concurrency` here is the old name of `max_units_in_flight`, accepted with a warning. Every unit
    ends with a value or a `SampleFailure` with its cause; aggregates are means over the values, failures
    counted apart.

    This synchronous entry point runs its own event loop (in a worker thread when the caller already runs
    one) and calls `judge.aclose()` before that loop ends, because connections cannot outlive their loop; a
    judge reopens them on its next use, so the same judge object can be passed to several calls.
    """

    async def run() -> RunResult:
        try:
            return await aevaluate_rag(
                samples,
                metrics,
                judge,
                name=name,
                max_units_in_flight=max_units_in_flight,
                progress=progress,
                max_concurrency=max_concurrency,
            )
        finally:
            if judge is not None:
                await judge.aclose()

    return run_sync(run())


def _unit_limit(max_units_in_flight: int | None, max_concurrency: int | None, judge: Judge) -> int:
    """The unit limit: given, or (with a warning) from the old name it had before 0.2, or the judge's own
    preference (an LLM judge wants about twice its HTTP limit: more units would only queue for a request
    slot, and keep running after an interrupt; the local judge wants many, to batch its embeddings)."""
    if max_concurrency is not None:
        warnings.warn(
            "evaluate_rag(max_concurrency=...) is now max_units_in_flight (units in flight); "
            "JudgeSettings.max_concurrency bounds HTTP requests",
            DeprecationWarning,
            stacklevel=3,
        )
        if max_units_in_flight is None:
            max_units_in_flight = max_concurrency
    if max_units_in_flight is None:
        preferred = getattr(judge, "preferred_units_in_flight", None)
        max_units_in_flight = preferred if isinstance(preferred, int) else DEFAULT_MAX_CONCURRENCY
    limit = max_units_in_flight
    if limit < 1:
        raise ConfigError(f"max_units_in_flight must be at least 1, not {limit}")
    return limit
