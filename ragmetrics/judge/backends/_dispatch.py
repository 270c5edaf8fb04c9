"""What every backend's `score` does around its verdicts, written once: check the sample against the metric's
spec, run the handler for the metric's plan, count failures. Backends differ only in their handlers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from ragmetrics.errors import JudgeError
from ragmetrics.judge.base import MetricOutcome, RagSample, check_scorable, empty_retrieval
from ragmetrics.judge.registry import JudgeMetricSpec, Plan, resolve_judge_metric, spec

__all__ = ["Handler", "PlanDispatch"]

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
            empty = empty_retrieval(metric_spec, sample)
            if empty is not None:
                return empty
            return await self.handlers()[metric_spec.plan](metric_spec, sample)
        except JudgeError:
            self._failures += 1
            raise
