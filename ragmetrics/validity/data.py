"""A night's results as the validity study reads them: one questions x runs matrix per metric and one of the
answer quality, with every metric sorted into what it is (a retrieval metric on which qrels, UDCG, a judge
context metric) and every metric left out named with the reason.

What a metric is comes from the registries (the retrieval metric parser, the judge's specs), never from a list
here, so a metric added to either is assessed without a change. A retrieval metric scored on a further qrels set
(generated, utility) carries the set's label in its name: `ndcg@10 (utility)`, `ndcg@10 [utility]`,
`utility:ndcg@10` or `utility/ndcg@10` are all read as nDCG@10 on the `utility` qrels. A metric of no known kind
(a team's own, an operational figure) is listed as not assessed unless asked for by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.options import is_descriptive, lower_is_better
from ragmetrics.schema import Report

__all__ = ["ANSWER_METRICS", "ValidityData", "metric_kind", "validity_data"]

ANSWER_METRICS = ("answer_correctness", "token_f1", "exact_match", "rouge_l", "claim_f1")
"""The answer-quality metrics a night may hold, in the order the default is chosen from (the judge's graded
correctness first, then the SQuAD measures, then RAGChecker's claim F1; never faithfulness, which measures
grounding in the contexts, not whether the answer is right)."""

_SUFFIXED = re.compile(r"^(?P<base>.+?)\s*[\[(](?P<label>[^\[\]()]+)[\])]$")
_PREFIXED = re.compile(r"^(?P<label>[A-Za-z][\w-]*)[:/](?P<base>.+)$")


@dataclass(frozen=True)
class ValidityData:
    """questions x runs values (NaN: no value) of the answer quality and of each assessed metric."""

    answer_metric: str
    questions: list[str]
    runs: list[str]
    answer: NDArray[np.float64]
    metrics: dict[str, NDArray[np.float64]]
    kinds: dict[str, tuple[str, str | None]]
    """metric -> (kind, qrels label)."""
    notes: list[str] = field(default_factory=list)


def split_label(name: str) -> tuple[str, str | None]:
    """(base metric, qrels label) of a metric's name; the label is None for the night's own qrels."""
    for pattern in (_SUFFIXED, _PREFIXED):
        match = pattern.match(name)
        if match:
            return match["base"].strip(), match["label"].strip()
    return name, None


def metric_kind(name: str, default_qrels: str | None = None) -> tuple[str, str | None] | None:
    """('retrieval' | 'udcg' | 'judge context', qrels label) of a metric, or None when it is none of these."""
    from ragmetrics.judge.registry import resolve_judge_metric
    from ragmetrics.retrieval.metric_parse import parse_metric

    judged = resolve_judge_metric(name)
    if judged is not None:
        return ("judge context", None) if judged.startswith(("context_", "retrieval_")) else None
    base, label = split_label(name)
    for candidate, qrels in ((name, default_qrels), (base, label)):
        try:
            request = parse_metric(candidate)
        except InputError:
            continue
        kind = "udcg" if request.spelling.startswith("udcg") else "retrieval"
        return kind, qrels
    return None


def _default_qrels(report: Report) -> str | None:
    """What the night's own qrels are: human (the dataset's grades) or generated (a test set's pooled grades)."""
    nightly = report.metadata.nightly
    qrels = nightly.dataset.qrels if nightly is not None else None
    if qrels is None:
        return None
    origins = {k for k, v in qrels.by_origin.items() if v}
    if origins <= {"dataset", "human", "people", "review"}:
        return "human"
    return "generated (" + ", ".join(sorted(origins)) + ")"


def _present(report: Report, metric: str) -> bool:
    return any(v.get(metric) is not None for run in report.runs for v in run.per_query.values())


def choose_answer_metric(report: Report, requested: str | None) -> str:
    held = [m for m in dict.fromkeys(m for r in report.runs for m in r.metrics)]
    if requested is not None:
        if is_descriptive(requested):
            raise InputError(f"{requested} has no better direction; it cannot stand for answer quality",
                             field="--answer-metric")  # fmt: skip
        if not _present(report, requested):
            raise InputError(
                f"the night has no answer quality {requested!r}: no run has a value of it; it has {held}",
                field="--answer-metric",
            )
        return requested
    for metric in ANSWER_METRICS:
        if _present(report, metric):
            return metric
    raise InputError(
        "the night has no answer quality: no run has a value of any answer metric "
        f"({', '.join(ANSWER_METRICS)}); add one to judge.metrics (token_f1 needs no judge), or name one "
        f"with --answer-metric; its metrics are {held}",
        field="answer quality",
    )


def validity_data(
    report: Report,
    *,
    answered: Mapping[str, set[str]] | None = None,
    answer_metric: str | None = None,
    metrics: Sequence[str] | None = None,
) -> ValidityData:
    """The matrices of `report`'s runs that have answers (`answered`: run -> questions with an answer, from
    judged_samples.jsonl; None: every run with answer quality). `metrics`: exactly these (any name the night
    holds); default every retrieval metric, UDCG and judge context metric of the night."""
    if answered is not None and not any(answered.values()):
        raise InputError("the night has no answers: no run's sample has an answer (judged_samples.jsonl)",
                         field="answers")  # fmt: skip
    chosen = choose_answer_metric(report, answer_metric)
    notes: list[str] = []
    runs = [r for r in report.runs if any(v.get(chosen) is not None for v in r.per_query.values())]
    without = [r.name for r in report.runs if r not in runs]
    if without:
        notes.append(f"runs without answer quality ({chosen}), left out: {', '.join(without)}")
    if len(runs) < 2:
        raise InputError(
            f"the validity study needs at least 2 runs with answer quality ({chosen}); the night has "
            f"{len(runs)}: {', '.join(r.name for r in runs) or 'none'}",
            field="runs",
        )
    questions = list(dict.fromkeys(q for r in runs for q in r.per_query))
    index = {q: i for i, q in enumerate(questions)}

    def matrix(metric: str) -> NDArray[np.float64]:
        out = np.full((len(questions), len(runs)), np.nan)
        for j, run in enumerate(runs):
            for qid, scores in run.per_query.items():
                value = scores.get(metric)
                if value is not None:
                    out[index[qid], j] = float(value)
        return out

    answer = matrix(chosen)
    if lower_is_better(chosen):  # tau reads "higher is better" on both sides: a smaller answer value is better
        answer = -answer
        notes.append(f"{chosen}: lower is better; its values are negated before tau")
    if answered is not None:
        stale: dict[str, int] = {}
        for j, run in enumerate(runs):
            have = answered.get(run.name, set())
            for qid, i in index.items():
                if qid not in have and not np.isnan(answer[i, j]):
                    answer[i, j] = np.nan  # a score without an answer behind it (the file's run is stale)
                    stale[run.name] = stale.get(run.name, 0) + 1
        if stale:
            notes.append(
                f"{chosen} values without an answer behind them in judged_samples.jsonl, left out: "
                + ", ".join(f"{run} {count}" for run, count in stale.items())
            )
    missing = int(np.isnan(answer).sum())
    if missing:
        notes.append(
            f"{chosen}: {missing} of {answer.size} (question, run) pairs have no value (a failed or not applicable "
            "score, no answer, or a question the run lacks), left out of every metric's figures"
        )
    held = list(dict.fromkeys(m for r in runs for m in r.metrics if m != chosen))
    qrels = _default_qrels(report)
    kinds: dict[str, tuple[str, str | None]] = {}
    if metrics is not None:
        unknown = [m for m in metrics if m not in held]
        if unknown:
            raise InputError(f"the night has no metric {unknown[0]!r}; it has {held}", field="--metric")
        for m in metrics:
            kinds[m] = metric_kind(m, qrels) or ("chosen", None)
    else:
        skipped = []
        for m in held:
            kind = metric_kind(m, qrels)
            if kind is None:
                skipped.append(m)
            else:
                kinds[m] = kind
        if skipped:
            notes.append(
                "not assessed (not a retrieval, UDCG or context metric; name one with --metric to assess it): "
                + ", ".join(skipped)
            )
    if not kinds:
        raise InputError(
            f"the night has no retrieval or context metric to assess; it has {held}", field="metrics"
        )
    values = {m: matrix(m) for m in kinds}
    for m in kinds:
        if lower_is_better(m):
            values[m] = -values[m]
    return ValidityData(chosen, questions, [r.name for r in runs], answer, values, kinds, notes)
