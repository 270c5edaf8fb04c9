"""What every backend's `score` does around its verdicts, written once: check the sample against the metric's
spec, run the handler for the metric's plan, count failures. Backends differ only in their handlers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from ragmetrics._numbers import number_problem
from ragmetrics._team_code import (
    TEAM_CODE_TIMEOUT_S,
    TeamCodeTimeout,
    call_in_thread,
    describe_escape,
    is_stop_request,
)
from ragmetrics.errors import JudgeError, NotApplicable
from ragmetrics.judge.base import MetricOutcome, RagSample, check_scorable, empty_retrieval
from ragmetrics.judge.registry import JudgeMetricSpec, Plan, resolve_judge_metric, spec

__all__ = ["Handler", "PlanDispatch", "run_deterministic"]


Handler = Callable[[JudgeMetricSpec, RagSample], Awaitable[MetricOutcome]]


class PlanDispatch:
    """Mixin: `score(metric, sample)` through `handlers()`, one coroutine per plan of `judge.registry`."""

    _failures: int = 0

    def handlers(self) -> Mapping[Plan, Handler]:
        raise NotImplementedError

    async def score(self, metric: str, sample: RagSample) -> MetricOutcome:
        if resolve_judge_metric(metric) is None:
            check_scorable(metric, sample)  # raises: not a failure of a sample, so not counted
        try:
            check_scorable(metric, sample)
            metric_spec = spec(metric)
            if metric_spec.plan == "deterministic":
                return await run_deterministic(metric_spec, sample)
            empty = empty_retrieval(metric_spec, sample)
            if empty is not None:
                return empty
            return await self.handlers()[metric_spec.plan](metric_spec, sample)
        except JudgeError:
            self._failures += 1
            raise


async def run_deterministic(metric_spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
    """A metric computed from the sample alone, the same under every backend; its value checked against the
    metric's declared range, so a team's function cannot put a NaN, an infinity or an out-of-range number in
    a mean. NotApplicable and JudgeError pass through; any other exception is the metric's failure, with it."""
    compute = metric_spec.compute
    assert compute is not None  # the spec's own check
    try:
        if metric_spec.origin == "built-in":
            value, detail = compute(sample)
        else:
            # A copy: a team's function that changes its sample must not change what other metrics see. A
            # daemon thread with a deadline: one that never returns fails its sample, not the night.
            value, detail = await call_in_thread(
                compute, sample.model_copy(deep=True), timeout=metric_spec.timeout_s or TEAM_CODE_TIMEOUT_S
            )
    except (NotApplicable, JudgeError):
        raise
    except TeamCodeTimeout as exc:
        raise JudgeError(f"metric {metric_spec.name!r} {exc}", cause="timeout") from None
    except (
        BaseException
    ) as exc:  # a team's function may raise anything, sys.exit included (ragmetrics._team_code)
        if is_stop_request(exc):
            raise
        raise JudgeError(f"metric {metric_spec.name!r} {describe_escape(exc)}", cause="metric_error") from exc
    check_value(metric_spec, value)
    return MetricOutcome(float(value), detail)


def check_value(metric_spec: JudgeMetricSpec, value: object) -> None:
    """JudgeError(invalid_value) unless `value` is a finite real number within the metric's range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JudgeError(
            f"metric {metric_spec.name!r} returned {type(value).__name__}, not a number",
            cause="invalid_value",
        )
    low, high = metric_spec.value_range
    problem = number_problem(value)  # 10**400, inf, 1e300: none can be a mean's term (ragmetrics._numbers)
    if problem is not None:
        raise JudgeError(f"metric {metric_spec.name!r} returned {problem}", cause="invalid_value")
    if value < low or (high is not None and value > high):
        span = f"[{low:g}, {high:g}]" if high is not None else f">= {low:g}"
        raise JudgeError(
            f"metric {metric_spec.name!r} returned {value!r}, outside its range {span}", cause="invalid_value"
        )
