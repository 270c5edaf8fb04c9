"""Items up the cascade: each judge decides where it is confident, the rest go to the next, the last abstains.

For one metric, judge k is asked only about the items no earlier judge was confident on (a request it is not
sent costs nothing). Its threshold is certified on the labelled calibration items among them (`thresholds`),
then applied to every item that reached it, labelled or not: the rule that routes an item is the same for
both, so the calibration items are exactly a sample of what judge k sees. A verdict whose judge failed
(a timeout, invalid output) is no verdict: the item goes on up; only the last judge's failure is recorded.
A judge of several views (repeats, samples, annotators, members) gives one only when every view answers.
An item no judge was confident on is abstained on: not applicable, with the reason, never scored, so a mean,
a test or the gate reads only decided items.

The held-out labels (labelled items not used to calibrate) give the agreement the cascade reached, beside the
agreement it guarantees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ragmetrics.judge.base import RagSample
from ragmetrics.judge.cascade.confidence import View, Voted, vote
from ragmetrics.judge.cascade.thresholds import (
    ThresholdChoice,
    fixed_sequence_threshold,
    is_confident,
    stage_delta,
)
from ragmetrics.schema import JudgeDetail, NotApplicableScore, RunResult, SampleFailure

__all__ = ["ABSTAINED", "Cascade", "CascadeReport", "Stage", "StageReport", "abstained_count", "run_cascade"]

ABSTAINED = "abstained: no judge of the cascade was confident enough to keep its verdict"
"""The start of an abstained score's not-applicable reason (the gate and the adaptive night count them)."""

Item = tuple[str, str]
"""(run, sample id)"""


def abstained_count(result: RunResult, metric: str) -> int:
    """How many of a result's queries the cascade abstained on for `metric` (none unless a cascade judged it)."""
    return sum(1 for n in result.not_applicable if n.metric == metric and n.reason.startswith(ABSTAINED))


Scorer = Callable[[str, Sequence[RagSample], str], Sequence[RunResult]]
"""(run, samples, metric) -> one result per view (one verdict each; several for sampled confidences)."""


@dataclass(frozen=True)
class Stage:
    """One judge of the cascade: its name and how it scores. `spread`: its views are a panel's members, whose
    agreement is the confidence (log-probabilities, where sent, refine each member's vote, never required)."""

    name: str
    score: Scorer
    spread: bool = False


@dataclass
class StageReport:
    judge: str
    threshold: ThresholdChoice
    asked: int = 0
    """items it was asked about (each once per view)"""
    decided: int = 0
    unstated: int = 0
    """verdicts without the log-probabilities the confidence is read from (never kept)"""
    failed: int = 0


@dataclass
class CascadeReport:
    """What the cascade did for one metric: the figures the night reports."""

    metric: str
    target: float
    delta: float
    stages: list[StageReport] = field(default_factory=list)
    items: int = 0
    decided: int = 0
    abstained: int = 0
    failed: int = 0
    not_applicable: int = 0
    held_out: int = 0
    held_out_decided: int = 0
    held_out_agreeing: int = 0

    @property
    def coverage(self) -> float | None:
        """Share of the items with a verdict to give (not failed, applicable) that were decided."""
        scorable = self.decided + self.abstained
        return self.decided / scorable if scorable else None

    @property
    def held_out_agreement(self) -> float | None:
        return self.held_out_agreeing / self.held_out_decided if self.held_out_decided else None

    def as_dict(self) -> dict[str, object]:
        return {
            "metric": self.metric,
            "agreement_target": self.target,
            "delta": self.delta,
            "coverage": self.coverage,
            "decided": self.decided,
            "abstained": self.abstained,
            "failed": self.failed,
            "held_out": self.held_out,
            "held_out_decided": self.held_out_decided,
            "held_out_agreement": self.held_out_agreement,
            "judges": [
                {
                    "judge": s.judge,
                    "threshold": s.threshold.threshold,
                    "calibration_kept": s.threshold.kept,
                    "calibration_agreeing": s.threshold.agreeing,
                    "p_value": s.threshold.p_value,
                    "asked": s.asked,
                    "decided": s.decided,
                    "without_logprobs": s.unstated,
                    "failed": s.failed,
                }
                for s in self.stages
            ],
        }


@dataclass
class _Outcome:
    """Where an item stands after a stage."""

    voted: Voted | None = None
    failure: SampleFailure | None = None
    not_applicable: NotApplicableScore | None = None


def _read(
    results: Sequence[RunResult], qid: str, metric: str, threshold: float, need_probabilities: bool
) -> _Outcome:
    """An item's verdict from a stage's views, or why there is none (a failure, not applicable)."""
    views: list[View] = []
    failure: SampleFailure | None = None
    for result in results:
        value = result.per_query.get(qid, {}).get(metric)
        if value is not None:
            views.append(View(value, result.details.get(qid, {}).get(metric) or JudgeDetail()))
            continue
        for na in result.not_applicable:
            if na.query_id == qid and na.metric == metric:
                return _Outcome(not_applicable=na)
        failure = failure or next(
            (f for f in result.failures if f.query_id == qid and f.metric == metric), None
        )
    if len(views) < len(results):
        # A step's verdict is the vote of all its views (repeats, samples, annotators, members): the rule its
        # threshold is certified on. The vote of the views that happened to answer is another rule, with other
        # confidences (one view of a `samples` step is always unanimous), so the item goes up, as a failed one.
        return _Outcome(failure=failure or SampleFailure(
            query_id=qid, metric=metric, cause="internal_error",
            message=f"{len(results) - len(views)} of the step's {len(results)} views gave no verdict and no failure",
        ))  # fmt: skip
    return _Outcome(voted=vote(views, threshold, need_probabilities=need_probabilities))


class Cascade:
    """One metric's cascade: thresholds certified once (`calibrate`), then any batch of items routed (`route`).

    A judge is asked about an item once: what it said during calibration is kept and reused when the item is
    routed, so a batch-by-batch night (the adaptive night) and a whole night send the same requests.
    """

    def __init__(
        self,
        stages: Sequence[Stage],
        metric: str,
        labels: Mapping[Item, float],
        calibration: set[Item],
        *,
        target: float,
        delta: float,
        threshold: float = 0.5,
        need_probabilities: bool = True,
    ) -> None:
        self.stages = list(stages)
        self.metric = metric
        self.labels = labels
        self.calibration = calibration
        self.threshold = threshold
        self.need_probabilities = need_probabilities
        self.report = CascadeReport(metric, target, delta)
        self.report.stages = [StageReport(s.name, ThresholdChoice(None, 0, 0, None, 0)) for s in self.stages]
        self._said: list[dict[Item, _Outcome]] = [{} for _ in self.stages]
        self._metadata: dict[str, RunResult] = {}
        self.calibration_failures: dict[str, int] = {}
        """calibration verdicts no judge gave, by failure cause (budget_reached: a request cap stopped them)"""

    def _ask(self, k: int, samples: Mapping[str, Sequence[RagSample]]) -> dict[Item, _Outcome]:
        """Judge k's outcome on each item, asking it only about the items it has not been asked about yet."""
        said = self._said[k]
        for run, items in samples.items():
            fresh = [s for s in items if (run, s.id) not in said]
            if not fresh:
                continue
            results = list(self.stages[k].score(run, fresh, self.metric))
            self.report.stages[k].asked += len(fresh)
            if results and run not in self._metadata:
                self._metadata[run] = results[0]
            for sample in fresh:
                need = self.need_probabilities and not self.stages[k].spread
                said[(run, sample.id)] = _read(results, sample.id, self.metric, self.threshold, need)
        return {(run, s.id): said[(run, s.id)] for run, items in samples.items() for s in items}

    def _kept(self, k: int, outcome: _Outcome) -> bool:
        """A verdict is kept when its judge stated a confidence and it reaches the certified threshold. One
        without the log-probabilities its confidence is read from has none (not a confidence of 0, which a
        threshold certified at the laxest level would keep): it goes up the cascade, as in calibration."""
        voted = outcome.voted
        return (
            voted is not None
            and voted.stated
            and is_confident(voted.confidence, self.report.stages[k].threshold.threshold)
        )

    def calibrate(self, samples: Mapping[str, Sequence[RagSample]]) -> None:
        """Certify each judge's threshold on the calibration items among `samples` that reach it."""
        level = stage_delta(self.report.delta, len(self.stages))
        reaching = {
            run: [s for s in items if (run, s.id) in self.calibration] for run, items in samples.items()
        }
        for k in range(len(self.stages)):
            read = self._ask(k, reaching)
            for outcome in read.values():
                if outcome.voted is None and outcome.failure is not None:
                    cause = outcome.failure.cause
                    self.calibration_failures[cause] = self.calibration_failures.get(cause, 0) + 1
            # the rule certified is the rule applied (`_kept`): verdicts without a stated confidence are never
            # kept, so they are not among the calibration items a threshold keeps either
            seen = [(o.voted.confidence, o.voted.positive == (self.labels[item] >= self.threshold))
                    for item, o in read.items() if o.voted is not None and o.voted.stated]  # fmt: skip
            self.report.stages[k].threshold = fixed_sequence_threshold(
                [c for c, _ in seen], [a for _, a in seen], target=self.report.target, delta=level
            )
            reaching = {
                run: [
                    s
                    for s in items
                    if read[(run, s.id)].not_applicable is None and not self._kept(k, read[(run, s.id)])
                ]
                for run, items in reaching.items()
            }

    def route(self, samples: Mapping[str, Sequence[RagSample]]) -> dict[str, RunResult]:
        """Each run's result for the metric: every item up the cascade until a judge keeps its verdict."""
        reaching = {run: list(items) for run, items in samples.items()}
        final: dict[Item, _Outcome] = {}
        decided_by: dict[Item, tuple[str, float, float]] = {}
        last = len(self.stages) - 1
        for k, stage in enumerate(self.stages):
            read = self._ask(k, reaching)
            stage_report = self.report.stages[k]
            for item, outcome in read.items():
                if outcome.not_applicable is not None:
                    final[item] = outcome
                elif outcome.voted is None:
                    stage_report.failed += 1
                    if k == last:
                        final[item] = outcome
                else:
                    stage_report.unstated += int(not outcome.voted.stated)
                    if self._kept(k, outcome):
                        stage_report.decided += 1
                        final[item] = outcome
                        cut = stage_report.threshold.threshold or 0.0
                        decided_by[item] = (stage.name, outcome.voted.confidence, cut)
            reaching = {
                run: [s for s in items if (run, s.id) not in final] for run, items in reaching.items()
            }
        out, _ = _results(samples, self.metric, final, decided_by, self._metadata, self.labels, self.calibration,
                          self.threshold, self.report)  # fmt: skip
        return out


def run_cascade(
    stages: Sequence[Stage],
    samples: Mapping[str, Sequence[RagSample]],
    metric: str,
    labels: Mapping[Item, float],
    calibration: set[Item],
    *,
    target: float,
    delta: float,
    threshold: float = 0.5,
    need_probabilities: bool = True,
) -> tuple[dict[str, RunResult], CascadeReport]:
    """Each run's result for `metric` through the cascade, and what the cascade did.

    `labels`: people's label per (run, sample id), in [0, 1], positive at or above `threshold`; `calibration`:
    the labelled items thresholds are certified on (the others are held out). `need_probabilities`: the
    confidence is read from log-probabilities (a verdict without them is never kept).
    """
    cascade = Cascade(stages, metric, labels, calibration, target=target, delta=delta, threshold=threshold,
                      need_probabilities=need_probabilities)  # fmt: skip
    cascade.calibrate(samples)
    out = cascade.route(samples)
    return out, cascade.report


def _results(
    samples: Mapping[str, Sequence[RagSample]],
    metric: str,
    final: Mapping[Item, _Outcome],
    decided_by: Mapping[Item, tuple[str, float, float]],
    first_results: Mapping[str, RunResult],
    labels: Mapping[Item, float],
    calibration: set[Item],
    threshold: float,
    report: CascadeReport,
) -> tuple[dict[str, RunResult], CascadeReport]:
    out: dict[str, RunResult] = {}
    for run, items in samples.items():
        first = first_results.get(run)
        metadata = first.metadata.model_copy(deep=True) if first is not None else None
        result = RunResult(name=run) if metadata is None else RunResult(name=run, metadata=metadata)
        result.metadata.metrics = [metric]
        for sample in items:
            item = (run, sample.id)
            outcome = final.get(item)
            report.items += 1
            value: float | None = None
            if outcome is None:
                report.abstained += 1
                result.not_applicable.append(
                    NotApplicableScore(query_id=sample.id, metric=metric, reason=f"{ABSTAINED} ({metric})")
                )
            elif outcome.not_applicable is not None:
                report.not_applicable += 1
                result.not_applicable.append(outcome.not_applicable)
            elif outcome.voted is None:
                report.failed += 1
                if outcome.failure is not None:
                    result.failures.append(outcome.failure)
                else:
                    result.failures.append(
                        SampleFailure(query_id=sample.id, metric=metric, cause="internal_error",
                                      message="no judge of the cascade returned a verdict or a failure")
                    )  # fmt: skip
            else:
                report.decided += 1
                judge, confidence, cut = decided_by[item]
                value = outcome.voted.value
                reason = f"decided by {judge} (confidence {confidence:.4g} >= threshold {cut:.4g})"
                detail = outcome.voted.detail
                result.details.setdefault(sample.id, {})[metric] = detail.model_copy(
                    update={"reason": f"{reason}; {detail.reason}" if detail.reason else reason}
                )
                if item in labels and item not in calibration:
                    report.held_out_decided += 1
                    report.held_out_agreeing += int(outcome.voted.positive == (labels[item] >= threshold))
            if item in labels and item not in calibration:
                report.held_out += 1
            result.per_query.setdefault(sample.id, {})[metric] = value
        result.metadata.num_queries = len(result.per_query)
        result.metadata.extra = {**result.metadata.extra, f"cascade:{metric}": report.as_dict()}
        result.recompute_aggregate()
        out[run] = result
    final_dict = report.as_dict()
    for result in out.values():
        result.metadata.extra[f"cascade:{metric}"] = final_dict
    return out, report
