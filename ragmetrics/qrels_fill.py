"""Judge-filled qrels: grade the documents the runs retrieved that the qrels never judged.

Why: a new retriever evaluated on qrels judged for old ones is scored on holes, since an unjudged document
counts as non-relevant (`judged@k` says how many). TREC's RAG track fills such holes with an LLM assessor
(UMBRELA); this does it end to end: every unjudged (query, document) pair in the runs' top `top_k` is graded
0-3 by the judge's `passage_relevance` metric (an LLM through any OpenAI-compatible endpoint, or the local
judge), with the judge's cache, concurrency and failure handling, and the result keeps judge grades apart from
human ones. The judge also grades the human-judged pairs of the same pool, so the agreement it reaches there
says what its filled grades are worth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ragmetrics.errors import InputError
from ragmetrics.judge.base import Judge, RagSample
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.formulas import GRADE_SCALE
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run
from ragmetrics.schema import MetricAgreement, SampleFailure
from ragmetrics.trust import agreement_model
from ragmetrics.trust.agreement import agreement

__all__ = ["FilledQrels", "fill_qrels"]

METRIC = "passage_relevance"


@dataclass
class FilledQrels:
    """Human grades, judge grades for the holes, and how the judge did on the human-judged pairs."""

    human: Qrels
    judge_grades: dict[str, dict[str, int]]
    reasons: dict[tuple[str, str], str]
    failures: list[SampleFailure] = field(default_factory=list)
    agreement: MetricAgreement | None = None
    pool_pairs: int = 0
    human_in_pool: int = 0
    judge_on_human: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def filled(self) -> int:
        return sum(len(docs) for docs in self.judge_grades.values())

    def agreement_with(self, reference: Qrels) -> MetricAgreement | None:
        """How the judge's filled grades agree with `reference` grades of the same pairs (for instance judgments
        held back to test the judge); None when they share no pair."""
        truth = reference.to_dict()
        pairs = [
            (q, d, g)
            for q, docs in self.judge_grades.items()
            for d, g in docs.items()
            if d in truth.get(q, {})
        ]
        if not pairs:
            return None
        return _agreement([g for _, _, g in pairs], [truth[q][d] for q, d, _ in pairs], truth)

    def combined(self, *, scale: int | None = None) -> Qrels:
        """Human grades plus the judge's for the holes (human grades win where both exist). `scale`, when the
        human grades use another top grade (e.g. 2), maps the judge's 0-3 onto 0..scale by rounding."""
        merged = {q: dict(d) for q, d in self.human.to_dict().items()}
        for qid, docs in self.judge_grades.items():
            for doc, grade in docs.items():
                value = grade if scale is None else round(grade * scale / GRADE_SCALE)
                merged.setdefault(qid, {}).setdefault(doc, value)
        return Qrels.from_dict(merged, source=f"{self.human.source} + judge")

    def write(self, path: str | Path, *, scale: int | None = None) -> tuple[Path, Path]:
        """Write the combined qrels (TREC) to `path` and the judge-made grades with their reasons to
        `<path>.judge.tsv` (query, document, grade, reason), so judge grades are never mixed in silently."""
        target = Path(path)
        self.combined(scale=scale).to_trec(target)
        marks = target.with_name(target.name + ".judge.tsv")
        lines = ["query_id\tdoc_id\tjudge_grade\tqrels_grade\treason"]
        for qid, docs in sorted(self.judge_grades.items()):
            for doc, grade in sorted(docs.items()):
                written = grade if scale is None else round(grade * scale / GRADE_SCALE)
                reason = self.reasons.get((qid, doc), "").replace("\t", " ").replace("\n", " ")
                lines.append(f"{qid}\t{doc}\t{grade}\t{written}\t{reason}")
        marks.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return target, marks


def fill_qrels(
    qrels: Qrels,
    runs: Sequence[Run],
    queries: Mapping[str, str],
    passages: Mapping[str, str],
    judge: Judge,
    *,
    top_k: int = 10,
    check_agreement: bool = True,
    progress: bool = False,
) -> FilledQrels:
    """Grade the unjudged documents of the runs' top `top_k` (module doc). `queries` and `passages` give the
    texts: a pair whose query or document text is missing is an InputError naming it, never skipped."""
    if top_k < 1:
        raise InputError(f"top_k must be >= 1, got {top_k}", field="top_k")
    if not runs:
        raise InputError("no runs to pool", field="runs")
    human = qrels.to_dict()
    pool: dict[tuple[str, str], None] = {}
    for run in runs:
        for qid, ranking in run.to_dict().items():
            for doc in list(ranking)[:top_k]:
                pool[(qid, doc)] = None
    holes = [(q, d) for q, d in pool if d not in human.get(q, {})]
    judged = [(q, d) for q, d in pool if d in human.get(q, {})] if check_agreement else []
    for qid, doc in [*holes, *judged]:
        if qid not in queries:
            raise InputError(f"no text for query {qid!r} (retrieved by a run)", field="queries")
        if doc not in passages:
            raise InputError(f"no text for document {doc!r} (retrieved for query {qid!r})", field="passages")
    pairs = [*holes, *judged]
    samples = [
        RagSample(id=f"pair-{n}", question=queries[q], contexts=[passages[d]])
        for n, (q, d) in enumerate(pairs)
    ]
    result = evaluate_rag(samples, [METRIC], judge, name="fill-qrels", progress=progress) if samples else None
    grades: dict[tuple[str, str], int] = {}
    reasons: dict[tuple[str, str], str] = {}
    failures: list[SampleFailure] = []
    if result is not None:
        by_id = {f"pair-{n}": pair for n, pair in enumerate(pairs)}
        for failure in result.failures:
            q, d = by_id[failure.query_id]
            failures.append(failure.model_copy(update={"query_id": f"{q}\t{d}"}))
        for sample_id, scores in result.per_query.items():
            value = scores.get(METRIC)
            if value is None:
                continue
            pair = by_id[sample_id]
            grades[pair] = round(value * GRADE_SCALE)
            detail = result.details.get(sample_id, {}).get(METRIC)
            if detail is not None and detail.reason is not None:
                reasons[pair] = detail.reason
    judge_grades: dict[str, dict[str, int]] = {}
    for q, d in holes:
        if (q, d) in grades:
            judge_grades.setdefault(q, {})[d] = grades[(q, d)]
    on_human = {pair: grades[pair] for pair in judged if pair in grades}
    metric_agreement = None
    if on_human:
        metric_agreement = _agreement(list(on_human.values()), [human[q][d] for q, d in on_human], human)
    return FilledQrels(
        human=qrels,
        judge_grades=judge_grades,
        reasons=reasons,
        failures=failures,
        agreement=metric_agreement,
        pool_pairs=len(pool),
        human_in_pool=len(judged),
        judge_on_human=on_human,
    )


def _agreement(
    judge: list[int], people: list[int], qrels: Mapping[str, Mapping[str, int]]
) -> MetricAgreement:
    """Judge grades (0-3) against human grades on the qrels' own scale, both scaled to [0, 1], positive from
    half the scale up (judge 2 or 3; human 1 of 1, or 1-2 of 2, ...)."""
    top = max((g for docs in qrels.values() for g in docs.values()), default=1) or 1
    stats = agreement(
        np.array([g / GRADE_SCALE for g in judge]),
        np.array([max(0, g) / top for g in people]),
        kind="binary" if top == 1 else "graded",
        threshold=0.5,
        seed=0,
    )
    return agreement_model(METRIC, stats)
