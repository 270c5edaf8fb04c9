"""An adaptive night's judging (`judge: {adaptive: {...}}`, `ragmetrics run --adaptive`; docs/adaptive.md).

Questions are judged in a seeded random order (each stratum of `strata` in turn, in proportion, when the
dataset has such a column), in batches, every judged run on the same questions, so every comparison stays
paired. After each batch the night's decisions are updated (`comparison.adaptive`): each pair of runs on each
judge metric, each run's drop against the baseline report (when there is one), each run's mean to `precision`.
Judging stops once every decision is settled, or at the budget (questions, judge requests, cost). With
`signal` a free score on every question (the local judge's, or a retrieval metric) is a control variate of
every pair and gate decision (`comparison.ppi_sequence`): the same interval from fewer judged questions when it
predicts the judge, and about the same number when it does not. The questions
left are recorded as not applicable with the reason "not judged (settled early)" (or "(budget reached)"): never
zeros, never in a mean. Retrieval metrics are computed on every question as in any night.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ragmetrics.comparison.adaptive import Decision, settle
from ragmetrics.engines.base import JudgeSession
from ragmetrics.errors import ConfigError
from ragmetrics.judge.base import RagSample
from ragmetrics.nightly.config_judge import AdaptiveConfig
from ragmetrics.nightly.config_night import NightlyConfig
from ragmetrics.nightly.estimate import question_costs
from ragmetrics.nightly.qa_dataset import QADataset
from ragmetrics.options import lower_is_better
from ragmetrics.schema import AdaptiveDecision, AdaptiveSummary, NotApplicableScore, Report, RunResult

__all__ = ["judge_adaptively", "judging_order"]

Plan = Mapping[str, tuple[list[RagSample], list[str]]]


def judging_order(ids: Sequence[str], dataset: QADataset, settings: AdaptiveConfig) -> list[str]:
    """The seeded order questions are judged in; with `strata`, the strata interleaved in proportion (each
    stratum's own order seeded), so every prefix holds each stratum at about its share."""
    rng = np.random.default_rng(settings.seed)
    if settings.strata is None:
        return [ids[i] for i in rng.permutation(len(ids)).tolist()]
    strata = settings.strata
    samples = {s.id: s for s in dataset.samples}

    def value_of(qid: str) -> Any:
        """The question's stratum: a column of the dataset's own, or a field of the sample (language, ...)."""
        extras = dataset.extras.get(qid, {})
        return extras[strata] if strata in extras else getattr(samples.get(qid), strata, None)

    values = {qid: value_of(qid) for qid in ids}
    if all(v is None for v in values.values()):
        raise ConfigError(f"judge.adaptive.strata: no question has a value in column {strata!r} to stratify by")
    groups: dict[str, list[str]] = {}
    for qid in ids:  # a question without a value is a stratum of its own ("None"), not dropped
        groups.setdefault(str(values[qid]), []).append(qid)
    queues = {key: [members[i] for i in rng.permutation(len(members)).tolist()] for key, members in sorted(groups.items())}
    taken = dict.fromkeys(queues, 0)
    order: list[str] = []
    while len(order) < len(ids):  # the stratum furthest behind its share goes next
        key = min((k for k in queues if taken[k] < len(queues[k])),
                  key=lambda k: ((taken[k] + 1) / len(queues[k]), k))  # fmt: skip
        order.append(queues[key][taken[key]])
        taken[key] += 1
    return order


def _decisions(
    config: NightlyConfig, plan: Plan, settings: AdaptiveConfig, baseline: Report | None
) -> list[Decision]:
    runs = list(plan)
    out: list[Decision] = []
    judged = {m for _, metrics in plan.values() for m in metrics}
    metrics = [m for m in (config.judge.metrics if config.judge is not None else []) if m in judged]
    for metric in metrics:
        having = [r for r in runs if metric in plan[r][1]]
        for i, other in enumerate(having):
            for run in having[i + 1 :]:
                out.append(Decision("pair", metric, run, other=other, threshold=settings.margin,
                                    lower_is_better=lower_is_better(metric)))  # fmt: skip
        if baseline is not None:
            checked = config.baseline.metrics
            for run in having:
                old = next((r for r in baseline.runs if r.name == run), None)
                if old is not None and metric in old.metrics and (checked is None or metric in checked):
                    out.append(Decision("gate", metric, run, other="baseline", threshold=config.baseline.threshold(metric),
                                        lower_is_better=lower_is_better(metric)))  # fmt: skip
        if settings.precision is not None:
            out.extend(Decision("precision", metric, run, threshold=settings.precision) for run in having)
    return out


@dataclass
class _Spend:
    """The most one question has cost so far (calls, USD), measured over each group of questions sent. A
    question's cost is expected to be at least this, and at least what the judge's planner counts for it against
    the cache (`nightly.estimate`: exact for single-request metrics, a floor for those whose later requests
    depend on an earlier verdict)."""

    calls: float = 0.0
    cost: float = 0.0
    groups: int = 0

    def seen(self, questions: int, calls: int, cost: float | None) -> None:
        self.groups += 1
        if questions:
            self.calls = max(self.calls, calls / questions)
            self.cost = max(self.cost, (cost or 0.0) / questions)


def _affordable(
    config: NightlyConfig, plan: Plan, batch: Sequence[str], judged: int, session: JudgeSession, spend: _Spend
) -> int:
    """How many of `batch`'s questions the budget allows, checked before they are sent: questions by count;
    calls and cost at each question's expected cost (`_Spend`), the batch trimmed to the longest prefix within
    what is left."""
    assert config.judge is not None and config.judge.adaptive is not None
    settings = config.judge.adaptive
    allowed = len(batch)
    if settings.max_questions is not None:
        allowed = min(allowed, max(settings.max_questions - judged, 0))
    if settings.max_calls is None and settings.max_cost is None:
        return allowed
    usage = session.info().usage
    calls_left = math.inf if settings.max_calls is None else settings.max_calls - usage.calls
    cost_left = math.inf if settings.max_cost is None else settings.max_cost - (usage.cost_usd or 0.0)
    for k, (calls, cost) in enumerate(question_costs(config, plan, list(batch[:allowed]))):
        calls_left -= max(float(calls), spend.calls)
        cost_left -= max(cost, spend.cost)
        if calls_left < 0 or cost_left < 0:
            return k
    return allowed


def free_signals(
    config: NightlyConfig, plan: Plan, retrieval: Mapping[str, RunResult] | None, *, progress: bool = False
) -> dict[str, dict[str, dict[str, float | None]]] | None:
    """`judge.adaptive.signal` on every question of every judged run, per judge metric: the local judge's
    score of that metric ('local'), or the run's retrieval metric of that name (the same for every judge
    metric). None without a signal."""
    assert config.judge is not None and config.judge.adaptive is not None
    name = config.judge.adaptive.signal
    if name is None:
        return None
    if name == "local":
        from ragmetrics.engines import LocalEngine

        session = LocalEngine().judge_session(config.judge.settings().model_copy(update={"backend": "local"}))
        try:
            return {run: {qid: dict(scores) for qid, scores in
                          session.score(samples, metrics, name=f"{run} (signal)", progress=progress).per_query.items()}
                    for run, (samples, metrics) in plan.items()}  # fmt: skip
        finally:
            session.close()
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for run, (samples, metrics) in plan.items():
        scored = (retrieval or {}).get(run)
        if scored is None or name not in scored.metadata.metrics:
            have = sorted(scored.metadata.metrics) if scored is not None else []
            raise ConfigError(
                f"judge.adaptive.signal: {name!r} is neither 'local' nor a retrieval metric of run {run!r} "
                f"tonight (it has: {', '.join(have) or 'no retrieval metrics'})"
            )
        out[run] = {s.id: dict.fromkeys(metrics, scored.per_query.get(s.id, {}).get(name)) for s in samples}
    return out


def judge_adaptively(
    config: NightlyConfig,
    dataset: QADataset,
    plan: Plan,
    session: JudgeSession,
    *,
    baseline: Report | None,
    progress: bool = False,
    retrieval: Mapping[str, RunResult] | None = None,
) -> tuple[dict[str, RunResult], AdaptiveSummary]:
    """Judge `plan` (run -> samples, metrics) batch by batch until every decision is settled (module doc);
    `retrieval`: the night's retrieval results (a retrieval metric as the free signal)."""
    assert config.judge is not None and config.judge.adaptive is not None
    settings = config.judge.adaptive
    # a cascade's judges carry their own prices, checked with its calibration before anything is sent
    if settings.max_cost is not None and config.judge.price_per_million_tokens is None and not config.judge.cascade:
        from ragmetrics.judge.select import resolve_backend

        if resolve_backend(config.judge.settings())[0] != "local":  # the local judge costs nothing
            raise ConfigError("judge.adaptive.max_cost needs judge.price_per_million_tokens to turn tokens into "
                              "USD (without it the budget could never be checked)")  # fmt: skip
    ids = list(dict.fromkeys(s.id for samples, _ in plan.values() for s in samples))
    order = judging_order(ids, dataset, settings)
    decisions = _decisions(config, plan, settings, baseline)
    signals = free_signals(config, plan, retrieval, progress=progress)
    baseline_values = {r.name: r.per_query for r in baseline.runs} if baseline is not None else None
    by_id = {run: {s.id: s for s in samples} for run, (samples, _) in plan.items()}
    pieces: dict[str, list[RunResult]] = {run: [] for run in plan}
    values: dict[str, dict[str, dict[str, float | None]]] = {run: {} for run in plan}
    judged: list[str] = []
    stopped: Literal["settled", "budget", "all_judged"] = "all_judged"
    spend = _Spend()
    position = 0
    while position < len(order):
        batch = order[position : position + settings.batch_size]
        sent = _judge_within_budget(batch, plan, by_id, session, config, len(judged), spend, pieces, values, progress)
        if not sent:
            stopped = "budget"
            break
        judged.extend(sent)
        position += len(sent)
        settle(decisions, values, judged, population=len(order), alpha=settings.alpha, baseline=baseline_values,
               signals=signals, questions=order, target=settings.target)  # fmt: skip
        if len(judged) < len(order):
            if decisions and all(d.settled for d in decisions):
                stopped = "settled"
                break
            if len(sent) < len(batch):  # the budget trimmed this batch: nothing more is affordable
                stopped = "budget"
                break
    if not judged and stopped == "budget":
        limits = {"max_questions": settings.max_questions, "max_calls": settings.max_calls, "max_cost": settings.max_cost}
        named = ", ".join(f"judge.adaptive.{k}: {v:g}" for k, v in limits.items() if v is not None)
        raise ConfigError(f"{named} allows not one question: judging the first question "
                          f"({order[0]!r}) for every run would exceed it; nothing was sent")  # fmt: skip
    judged_set = set(judged)
    left = [q for q in order if q not in judged_set]
    reason = "not judged (settled early)" if stopped == "settled" else "not judged (budget reached)"
    results = {run: _joined(run, parts, plan[run][1], [q for q in left if q in by_id[run]], reason)
               for run, parts in pieces.items() if parts}  # fmt: skip
    usage = session.info().usage
    rate = usage.calls / len(judged) if judged else None
    per_question = sum(len(metrics) for _, metrics in plan.values())
    summary = AdaptiveSummary(
        questions=len(order), judged=len(judged), stopped=stopped, alpha=settings.alpha,
        batch_size=settings.batch_size, seed=settings.seed, calls=usage.calls,
        units=per_question * len(judged), units_full=per_question * len(order),
        calls_full_estimate=None if rate is None else round(rate * len(order)), cost_usd=usage.cost_usd,
        not_judged=left, signal=settings.signal, target=settings.target,
        decisions=[AdaptiveDecision(kind=d.kind, metric=d.metric, run=d.run, other=d.other, threshold=d.threshold,
                                    verdict=d.verdict, settled_at=d.settled_at, n=d.n, estimate=d.estimate,
                                    low=d.low, high=d.high, signal_weight=d.signal_weight,
                                    signal_correlation=d.signal_correlation,
                                    text=d.describe(len(order))) for d in decisions],
    )  # fmt: skip
    return results, summary


def _has_budget(config: NightlyConfig) -> bool:
    settings = config.judge.adaptive if config.judge is not None else None
    return settings is not None and (settings.max_calls is not None or settings.max_cost is not None)


def _judge_within_budget(
    batch: list[str],
    plan: Plan,
    by_id: Mapping[str, Mapping[str, RagSample]],
    session: JudgeSession,
    config: NightlyConfig,
    judged: int,
    spend: _Spend,
    pieces: dict[str, list[RunResult]],
    values: dict[str, dict[str, dict[str, float | None]]],
    progress: bool,
) -> list[str]:
    """Judge as much of `batch` as the budget allows, every run on the same questions; the questions judged. The
    budget is checked before each group is sent (one question first while its cost is unknown)."""
    sent: list[str] = []
    while len(sent) < len(batch):
        rest = batch[len(sent) :]
        # while what a question costs is unseen, one question at a time; then the rest of the batch at once
        ahead = rest[:1] if spend.groups == 0 and _has_budget(config) else rest
        group = ahead[: _affordable(config, plan, ahead, judged + len(sent), session, spend)]
        if not group:
            break
        before = session.info().usage
        for run, (_, metrics) in plan.items():
            samples = [by_id[run][q] for q in group if q in by_id[run]]
            if samples:
                result = session.score(samples, metrics, name=run, progress=progress)
                pieces[run].append(result)
                values[run].update(result.per_query)
        after = session.info().usage
        cost = None if after.cost_usd is None else after.cost_usd - (before.cost_usd or 0.0)
        spend.seen(len(group), after.calls - before.calls, cost)
        sent.extend(group)
    return sent


def _joined(run: str, parts: list[RunResult], metrics: list[str], left: list[str], reason: str) -> RunResult:
    """One run's batch results as one result, its unjudged questions not applicable with `reason`."""
    per_query: dict[str, dict[str, float | None]] = {}
    details: dict[str, Any] = {}
    failures, not_applicable = [], []
    for part in parts:
        per_query.update(part.per_query)
        details.update(part.details)
        failures.extend(part.failures)
        not_applicable.extend(part.not_applicable)
    for qid in left:
        per_query[qid] = dict.fromkeys(metrics)
        not_applicable.extend(NotApplicableScore(query_id=qid, metric=m, reason=reason) for m in metrics)
    joined = parts[0].model_copy(update={"per_query": per_query, "details": details, "failures": failures,
                                         "not_applicable": not_applicable, "name": run})  # fmt: skip
    joined.metadata = joined.metadata.model_copy(update={"num_queries": len(per_query)})
    joined.recompute_aggregate()
    return joined
