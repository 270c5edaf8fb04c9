"""`ragmetrics judges`: score every candidate judge and panel on the team's labels, and choose one to pay for.

Each single candidate judges each labelled (sample, metric) once, through its own cached judge (a rerun sends
nothing); a panel candidate is made from its members' scores, never asked again. A panel with learned weights
is scored on labels it was not fitted on (cross-fitted per metric, folds stratified by label), so every
candidate's agreement is measured on labels it was never tuned on. Cost is what the candidate's verdicts cost
(asked now or read from the cache, at its prices); latency the mean seconds per unit it asked its server.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from ragmetrics.alignment.folds import stratified_folds
from ragmetrics.errors import ConfigError, InputError
from ragmetrics.judge.base import Judge, MetricOutcome, RagSample
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.evaluate import aevaluate_rag
from ragmetrics.judge.panel import build_member, identity, member_settings
from ragmetrics.judge.panel_config import CandidatesFile, JudgeCandidate, PanelCandidate
from ragmetrics.judge.registry import registered_metrics
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.panels.judge_choice import Choice, JudgeEvidence, choose_judge
from ragmetrics.panels.night import people_alpha
from ragmetrics.panels.own_metrics import OwnMetric, check_labels_fit, check_metrics_known, snippet_keys
from ragmetrics.schema import JudgeInfo, SampleFailure
from ragmetrics.trust.labels import HumanLabels
from ragmetrics.trust.panel_combine import combine_scores
from ragmetrics.trust.people import krippendorff_alpha

__all__ = ["JudgesOutcome", "TimedJudge", "judge_candidates"]


class TimedJudge:
    """A judge that also measures the wall time of the units it had to ask for (cached ones are not timed)."""

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.asked_units = 0
        self.asked_seconds = 0.0

    @property
    def backend(self) -> str:
        return self.judge.backend

    @property
    def preferred_units_in_flight(self) -> int:
        wanted = getattr(self.judge, "preferred_units_in_flight", 16)
        return wanted if isinstance(wanted, int) else 16

    def supported_metrics(self) -> tuple[str, ...]:
        return self.judge.supported_metrics()

    async def score(self, metric: str, sample: RagSample) -> MetricOutcome:
        started = time.perf_counter()
        outcome = await self.judge.score(metric, sample)
        if not outcome.detail.cached:
            self.asked_units += 1
            self.asked_seconds += time.perf_counter() - started
        return outcome

    def info(self) -> JudgeInfo:
        return self.judge.info()

    async def aclose(self) -> None:
        await self.judge.aclose()

    def latency_s(self) -> float | None:
        return self.asked_seconds / self.asked_units if self.asked_units else None


@dataclass(frozen=True)
class JudgesOutcome:
    choice: Choice
    metrics: list[str]
    units: list[tuple[str, str]]  # (sample id, metric) of every unit scored, in the labels' order
    left_out: list[SampleFailure]  # units some candidate could not score (left out for every candidate)
    calls: dict[str, int]  # requests each single candidate sent in this invocation
    judges_alpha: float | None  # Krippendorff alpha among the single candidates' verdicts
    people_alpha: float | None  # among the people, where several labelled a unit
    candidates: CandidatesFile
    base: JudgeSettings
    notes: list[str] = field(default_factory=list)
    own_metrics: Sequence[OwnMetric] = ()
    """the candidates file's own metrics (a rubric, say): the snippet defines the scored ones"""


def _check_prices(candidates: CandidatesFile, base: JudgeSettings, source: str) -> None:
    for position, cand in enumerate(candidates.candidates):
        if isinstance(cand, JudgeCandidate) and cand.resolved_backend() == "openai":
            prices = cand.price_per_million_tokens or base.price_per_million_tokens
            if prices is None:
                raise ConfigError(
                    f"{source}: candidates.{position}.price_per_million_tokens: {cand.name!r} has no prices, so its cost "
                    "cannot be compared; give {prompt: USD, completion: USD} per 1M tokens"
                )


def _check_local_candidates(candidates: CandidatesFile, metrics: Sequence[str], source: str) -> None:
    """A ConfigError naming the candidate when the local judge is asked for a rubric metric: it can only say
    "not applicable" to every unit (similarity of embeddings cannot read a criterion), which would leave every
    unit out for every candidate rather than measure anything."""
    from ragmetrics.judge.registry import spec

    rubrics = [m for m in metrics if spec(m).plan == "rubric"]
    for position, cand in enumerate(candidates.candidates):
        if rubrics and isinstance(cand, JudgeCandidate) and cand.resolved_backend() == "local":
            raise ConfigError(
                f"{source}: candidates.{position}.backend: {cand.name!r} is the local judge, which cannot score "
                f"rubric metric {rubrics[0]!r} (it needs an LLM judge); leave it out or score other metrics "
                "with --metric"
            )


async def _score_single(
    cand: JudgeCandidate, base: JudgeSettings, samples: list[RagSample], metrics: list[str], cache: VerdictCache | None
) -> tuple[dict[tuple[str, str], float], list[SampleFailure], float, float | None, int]:
    settings = member_settings(cand, base)
    judge = TimedJudge(build_member(settings, identity(settings), cache))
    try:
        result = await aevaluate_rag(samples, metrics, judge, name=cand.name, progress=False)
    finally:
        await judge.aclose()
    scores = {(q, m): v for q, row in result.per_query.items() for m, v in row.items() if v is not None}
    bill = getattr(judge.judge, "verdicts_usage", None)
    cost = bill().cost_usd if callable(bill) else 0.0  # the local judge costs nothing
    calls = judge.info().usage.calls
    return scores, list(result.failures), float(cost or 0.0), judge.latency_s(), calls


def _panel_scores(
    cand: PanelCandidate,
    member_scores: Mapping[str, NDArray[np.float64]],
    labels: NDArray[np.float64],
    metric_of: Sequence[str],
    threshold: float,
    folds: int,
    seed: int,
) -> NDArray[np.float64]:
    """The panel's score per unit, per metric (a learned panel cross-fitted within each metric's labels)."""
    matrix = np.column_stack([member_scores[name] for name in cand.panel])
    out = np.empty(len(labels))
    metric_arr = np.asarray(metric_of)
    for metric in sorted(set(metric_of)):
        rows = metric_arr == metric
        fold_of = None
        if cand.combine == "learned":
            k = min(folds, int(rows.sum()))
            if k < 2:
                raise InputError(
                    f"panel {cand.name!r}: learned weights need at least 2 labels of {metric} to cross-fit",
                    field="candidates",
                )
            fold_of = stratified_folds(list(labels[rows]), k, seed)
        out[rows] = combine_scores(
            cand.combine, matrix[rows], threshold=threshold, labels=labels[rows], fold_of=fold_of
        )
    return out


async def judge_candidates(
    samples: Sequence[RagSample],
    human: HumanLabels,
    candidates: CandidatesFile,
    *,
    metrics: Sequence[str] | None = None,
    run: str | None = None,
    threshold: float = 0.5,
    margin: float = 0.05,
    alpha: float = 0.05,
    folds: int = 5,
    resamples: int = 2000,
    seed: int = 0,
    source: str = "candidates",
    own_metrics: Sequence[OwnMetric] = (),
) -> JudgesOutcome:
    """Score every candidate on the labelled units and choose (module docstring; `panels.judge_choice`).
    `own_metrics`: the candidates file's own metrics (`panels.own_metrics`), in the registry while judging."""
    try:
        base = JudgeSettings.model_validate(candidates.judge)
    except ValidationError as exc:  # the first problem at its key, as the rest of the file's are named
        err = exc.errors()[0]
        key = ".".join(["judge", *(str(p) for p in err["loc"])])
        message = str(err["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{source}: {key}: {message}") from None
    _check_prices(candidates, base, source)
    by_id = {s.id: s for s in samples}
    human.check_ids(by_id)
    wanted = list(metrics) if metrics else human.metrics()
    with ExitStack() as registered:
        try:
            registered.enter_context(registered_metrics([m.spec for m in own_metrics]))
        except ValueError as exc:  # another definition of the name is registered in this process
            raise ConfigError(f"{source}: {exc}") from None
        check_metrics_known(wanted, human, from_option=bool(metrics))
        missing = [m for m in wanted if m not in human.metrics()]
        if missing:
            raise InputError(f"no labels of metric {missing[0]!r} in the labels file", source=human.source,
                             field="metric")  # fmt: skip
        check_labels_fit(own_metrics, human, wanted)
        _check_local_candidates(candidates, wanted, source)
        labelled = {m: human.for_metric(m, run) for m in wanted}
        ids = sorted({sid for per in labelled.values() for sid in per})
        chosen_samples = [by_id[i] for i in ids]
        cache = VerdictCache(base.cache_path, enabled=base.use_cache) if base.cache_path else None

        singles = candidates.singles()
        # The candidates judge side by side (each within its own concurrency limit), as a panel's members do.
        outcomes = await asyncio.gather(*(_score_single(c, base, chosen_samples, wanted, cache) for c in singles))
    scored: dict[str, dict[tuple[str, str], float]] = {}
    failures: list[SampleFailure] = []
    costs: dict[str, float] = {}
    latency: dict[str, float | None] = {}
    calls: dict[str, int] = {}
    for single, (s, failed, cost, lat, n_calls) in zip(singles, outcomes, strict=True):
        scored[single.name], costs[single.name], latency[single.name], calls[single.name] = s, cost, lat, n_calls
        failures.extend(f.model_copy(update={"message": f"{single.name}: {f.message}"}) for f in failed)

    units = [(sid, m) for m in wanted for sid in sorted(labelled[m]) if all((sid, m) in scored[c] for c in scored)]
    kept = set(units)
    left_out = [f for f in failures if (f.query_id, f.metric) not in kept]
    if not units:
        # nothing is written on this path, so the failures are said here (a server down, a key unset, ...)
        first = failures[0] if failures else None
        example = (f"; {len(failures)} failed verdicts, the first: {first.query_id} {first.metric}: {first.cause}: "
                   f"{first.message}" if first is not None else "")  # fmt: skip
        raise InputError(f"no labelled unit was scored by every candidate{example}", source=human.source)
    y = np.array([labelled[m][sid].value for sid, m in units], dtype=np.float64)
    position = {sid: i for i, sid in enumerate(ids)}
    clusters = np.array([position[sid] for sid, _ in units], dtype=np.int64)
    metric_of = [m for _, m in units]
    member_scores = {c: np.array([scored[c][u] for u in units], dtype=np.float64) for c in scored}

    evidence: list[JudgeEvidence] = []
    for cand in candidates.candidates:
        if isinstance(cand, JudgeCandidate):
            evidence.append(JudgeEvidence(cand.name, member_scores[cand.name], costs[cand.name], latency[cand.name]))
        else:
            panel = _panel_scores(cand, member_scores, y, metric_of, threshold, folds, seed)
            member_latency = [latency[m] for m in cand.panel]  # members are asked in parallel
            evidence.append(
                JudgeEvidence(
                    cand.name,
                    panel,
                    math.fsum(costs[m] for m in cand.panel),
                    max(v for v in member_latency if v is not None)
                    if all(v is not None for v in member_latency)
                    else None,
                    tuned_on_labels=cand.combine == "learned",
                )
            )
    choice = choose_judge(evidence, y, clusters, threshold=threshold, margin=margin, alpha=alpha,
                          resamples=resamples, seed=seed)  # fmt: skip
    decisions = np.array([member_scores[c] >= threshold for c in scored], dtype=np.float64)
    judges_alpha = krippendorff_alpha(decisions) if len(scored) >= 2 else None
    people = people_alpha(human, wanted, threshold, run)
    notes = []
    if left_out:
        notes.append(f"{len({(f.query_id, f.metric) for f in left_out})} labelled units left out for every "
                     "candidate because one could not score them (failures listed)")  # fmt: skip
    return JudgesOutcome(
        choice=choice,
        metrics=wanted,
        units=units,
        left_out=left_out,
        calls=calls,
        judges_alpha=None if judges_alpha is None or math.isnan(judges_alpha) else judges_alpha,
        people_alpha=people,
        candidates=candidates,
        base=base,
        notes=notes,
        own_metrics=tuple(own_metrics),
    )


def snippet(outcome: JudgesOutcome) -> dict[str, Any]:
    """The `judge:` section of a night's config for the chosen candidate."""
    name = outcome.choice.chosen
    by_name = {c.name: c for c in outcome.candidates.candidates}
    chosen = by_name[name]

    def member(c: JudgeCandidate) -> dict[str, Any]:
        return c.model_dump(exclude_none=True)

    own = snippet_keys(outcome.own_metrics, outcome.metrics)  # a night must define and list them to judge them
    if isinstance(chosen, JudgeCandidate):
        keys = {k: v for k, v in member(chosen).items() if k != "name"}
        return {"judge": {**outcome.candidates.judge, **keys, **own}}
    members = [member(by_name[m]) for m in chosen.panel if isinstance(by_name[m], JudgeCandidate)]  # type: ignore[arg-type]
    return {"judge": {**outcome.candidates.judge, **own, "panel": {"members": members, "combine": chosen.combine}}}
