"""The sweep's quality score of a configuration on a question: a retrieval metric, or a judge metric.

A retrieval metric is computed on the configuration's top-k passages against the qrels (free). A judge metric is
judged on the question with those passages as its contexts (no answer is generated, so only metrics that read
the question, contexts and reference are allowed): every judgment is a call paid for, so it is counted, and two
configurations that pass the same passages for a question share one judgment (same question, same contexts,
same verdict), which is counted apart as a saving of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmetrics.errors import ConfigError
from ragmetrics.sweep.grid import Configuration
from ragmetrics.sweep.stages import Stages

__all__ = ["Objective", "Scores"]

Scores = dict[str, dict[str, float | None]]
"""Configuration name -> question id -> score (None: the judge failed on it; its cause is in `failures`)."""


@dataclass
class Objective:
    """Scores configurations on questions, on demand and batch by batch, counting what the judge was asked."""

    metric: str
    stages: Stages
    questions: Mapping[str, str]
    passages: Mapping[str, Mapping[str, str]]
    """chunking label -> passage id -> text."""
    relevance: Mapping[str, Mapping[str, Mapping[str, int]]]
    """chunking label -> question id -> judged id -> grade."""
    references: Mapping[str, str | None] = field(default_factory=dict)
    judge: Any = None
    """A `ragmetrics.judge.base.Judge` for a judge metric; None for a retrieval metric."""
    units_asked: int = 0
    """(configuration, question) scores asked for."""
    judge_calls: int = 0
    """Judgments made: the units asked for, less those another configuration's identical contexts answered."""
    failures: dict[str, dict[str, str]] = field(default_factory=dict)
    _verdicts: dict[tuple[str, tuple[str, ...]], float | None] = field(default_factory=dict)

    @property
    def judged(self) -> bool:
        return self.judge is not None

    def score(self, configs: Sequence[Configuration], qids: Sequence[str]) -> Scores:
        self.units_asked += len(configs) * len(qids)
        if self.judge is None:
            return {c.name: self._retrieval(c, qids) for c in configs}
        return self._judged(configs, qids)

    def _retrieval(self, config: Configuration, qids: Sequence[str]) -> dict[str, float | None]:
        from ragmetrics.retrieval.evaluate import score_matrix

        qrels = {q: dict(self.relevance[config.chunking][q]) for q in qids}
        run = {q: dict(self.stages.top(config, q)) for q in qids}
        matrix = score_matrix(qrels, run, [self.metric], query_set="qrels", name="sweep", allow_disjoint=True)
        column = matrix.column(self.metric)
        return {q: float(v) for q, v in zip(matrix.query_ids, column.tolist(), strict=True)}

    def _judged(self, configs: Sequence[Configuration], qids: Sequence[str]) -> Scores:
        from ragmetrics.judge.base import RagSample
        from ragmetrics.judge.evaluate import evaluate_rag

        wanted: dict[tuple[str, tuple[str, ...]], tuple[Configuration, str]] = {}
        for config in configs:
            for qid in qids:
                ids = tuple(f"{config.chunking}\x1f{pid}" for pid, _ in self.stages.top(config, qid))
                key = (qid, ids)
                if key not in self._verdicts and key not in wanted:
                    wanted[key] = (config, qid)
        if wanted:
            samples = []
            keys = list(wanted)
            for n, key in enumerate(keys):
                config, qid = wanted[key]
                texts = self.passages[config.chunking]
                ranking = self.stages.top(config, qid)
                samples.append(
                    RagSample(
                        id=f"u{n}",
                        question=self.questions[qid],
                        contexts=[texts[pid] for pid, _ in ranking],
                        context_ids=[pid for pid, _ in ranking],
                        reference=self.references.get(qid),
                    )
                )
            result = evaluate_rag(samples, [self.metric], self.judge, name="sweep", progress=False)
            self.judge_calls += len(samples)
            causes = {f.query_id: f"{f.cause}: {f.message}" for f in result.failures}
            causes.update({n.query_id: f"not applicable: {n.reason}" for n in result.not_applicable})
            for n, key in enumerate(keys):
                value = result.per_query.get(f"u{n}", {}).get(self.metric)
                self._verdicts[key] = value
                if value is None:
                    config, qid = wanted[key]
                    reason = causes.get(f"u{n}", "no score recorded")
                    self.failures.setdefault(config.name, {})[qid] = reason
        out: Scores = {}
        for config in configs:
            row: dict[str, float | None] = {}
            for qid in qids:
                ids = tuple(f"{config.chunking}\x1f{pid}" for pid, _ in self.stages.top(config, qid))
                row[qid] = self._verdicts[(qid, ids)]
            out[config.name] = row
        return out


def check_metric(metric: str, retrieval_metrics: Sequence[str], judge_metrics: Sequence[str]) -> str:
    """'retrieval' or 'judge': where `sweep.metric` is listed; a judge metric must not need an answer."""
    if metric in retrieval_metrics:
        return "retrieval"
    if metric in judge_metrics:
        from ragmetrics.judge.registry import resolve_judge_metric, spec

        canonical = resolve_judge_metric(metric)
        if canonical is not None and "answer" in spec(canonical).required:
            raise ConfigError(
                f"sweep.metric: {metric!r} judges an answer, and a sweep generates none; choose a metric of the "
                "question and contexts (context_recall, context_relevancy, context_precision, context_sufficiency)"
            )
        return "judge"
    raise ConfigError(
        f"sweep.metric: {metric!r} is listed in neither retrieval.metrics ({', '.join(retrieval_metrics) or 'none'}) "
        f"nor judge.metrics ({', '.join(judge_metrics) or 'none'})"
    )
