"""Subtopic qrels (the TREC diversity format) and the intent-aware metrics over them.

A diversity qrels file reads ``query subtopic document grade`` per line, the second column naming the
subtopic (intent) where an ad hoc qrels file has 0 (TREC Web track 2009-2014, NTCIR INTENT). `SubtopicQrels`
holds it; `evaluate_diversity` scores a run on the intent-aware metrics (`kernels.diversity`), and
`ragmetrics.evaluate` accepts a `SubtopicQrels` too, scoring the ad hoc metrics on its collapsed form (a
document's grade: its highest over the subtopics, as ndeval's MAP takes a document relevant to any
subtopic as relevant) beside the intent-aware ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragmetrics.errors import InputError
from ragmetrics.options import QUERY_SETS
from ragmetrics.retrieval._lazy import numba_for
from ragmetrics.retrieval.kernels.diversity import (
    covered_share,
    discounted,
    greedy_ideal,
    intent_aware_ap,
    intent_aware_precision,
    novelty_gains,
    rank_biased,
)
from ragmetrics.retrieval.metric_parse import MetricRequest, parse_metrics
from ragmetrics.retrieval.registry.spec import Kind
from ragmetrics.schema import RunMetadata, RunResult

if TYPE_CHECKING:
    from ragmetrics.retrieval.qrels import Qrels
    from ragmetrics.retrieval.run import Run

__all__ = ["SubtopicQrels", "evaluate_diversity"]


@dataclass(frozen=True)
class SubtopicQrels:
    """query -> subtopic -> document -> grade."""

    judgments: Mapping[str, Mapping[str, Mapping[str, int]]]
    source: str = "dict"
    _collapsed: list[Qrels] = field(default_factory=list, repr=False, compare=False)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, str, int]], *, source: str = "rows") -> SubtopicQrels:
        judgments: dict[str, dict[str, dict[str, int]]] = {}
        for line, (qid, subtopic, doc, grade) in enumerate(rows, start=1):
            docs = judgments.setdefault(str(qid), {}).setdefault(str(subtopic), {})
            if str(doc) in docs:
                raise InputError(
                    f"document {doc!r} judged twice for query {qid!r}, subtopic {subtopic!r}",
                    source=source,
                    line=line,
                )
            docs[str(doc)] = int(grade)
        if not judgments:
            raise InputError("no subtopic judgment", source=source)
        return cls(judgments, source=source)

    @classmethod
    def from_trec(cls, path: str | Path) -> SubtopicQrels:
        """Read ``query subtopic document grade`` lines (whitespace-separated; # comments and blank lines
        skipped)."""
        from ragmetrics._textfile import read_utf8

        rows: list[tuple[str, str, str, int]] = []
        for number, line in enumerate(read_utf8(str(path)).splitlines(), start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            parts = text.split()
            if len(parts) != 4:
                raise InputError(
                    f"expected 4 fields (query subtopic document grade), got {len(parts)}",
                    source=str(path),
                    line=number,
                )
            try:
                grade = int(parts[3])
            except ValueError:
                raise InputError(
                    f"grade {parts[3]!r} is not an integer", source=str(path), line=number
                ) from None
            if not -(2**63) <= grade < 2**63:
                raise InputError(
                    f"grade {parts[3]} does not fit a 64-bit integer", source=str(path), line=number
                )
            rows.append((parts[0], parts[1], parts[2], grade))
        return cls.from_rows(rows, source=str(path))

    @classmethod
    def from_dict(cls, judgments: Mapping[str, Mapping[str, Mapping[str, int]]]) -> SubtopicQrels:
        return cls.from_rows(
            (q, s, d, g) for q, subs in judgments.items() for s, docs in subs.items() for d, g in docs.items()
        )

    @property
    def query_ids(self) -> tuple[str, ...]:
        return tuple(sorted(self.judgments))

    def collapsed(self) -> Qrels:
        """Ad hoc qrels: each document's highest grade over the subtopics."""
        if not self._collapsed:
            from ragmetrics.retrieval.qrels import Qrels

            best: dict[str, dict[str, int]] = {}
            for qid, subs in self.judgments.items():
                docs = best.setdefault(qid, {})
                for judged in subs.values():
                    for doc, grade in judged.items():
                        docs[doc] = max(grade, docs.get(doc, grade))
            self._collapsed.append(Qrels.from_dict(best, source=self.source))
        return self._collapsed[0]


def _query_metrics(
    judged: Mapping[str, Mapping[str, int]],
    ranking: Sequence[str],
    requests: Sequence[MetricRequest],
    alpha: float,
    beta: float,
) -> list[float]:
    subtopics = sorted(judged)
    level_rows: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}
    out: list[float] = []
    for request in requests:
        level = request.level
        if level not in level_rows:
            docs = sorted(
                {d for s in subtopics for d in judged[s]}, reverse=True
            )  # id descending: ideal ties
            index = {d: i for i, d in enumerate(docs)}
            table = np.zeros((len(docs), len(subtopics)), dtype=np.int64)
            for j, s in enumerate(subtopics):
                for doc, grade in judged[s].items():
                    table[index[doc], j] = 1 if grade >= level else 0
            rel = np.zeros((len(ranking), len(subtopics)), dtype=np.int64)
            for i, doc in enumerate(ranking):
                row = index.get(doc)
                if row is not None:
                    rel[i] = table[row]
            order = np.empty(len(docs), dtype=np.int64)
            greedy_ideal(table, alpha, order)
            present = int((table.sum(axis=0) > 0).sum())
            level_rows[level] = (rel, table[order], table.sum(axis=0), present)
        rel, ideal, per_subtopic, present = level_rows[level]
        if present == 0:
            out.append(0.0)
            continue
        gains = np.empty(rel.shape[0])
        novelty_gains(rel, alpha, gains)
        ideal_gains = np.empty(ideal.shape[0])
        novelty_gains(ideal, alpha, ideal_gains)
        kind = request.spec.kind
        k = request.cutoff or max(rel.shape[0], ideal.shape[0], 1)
        if kind == Kind.ALPHA_NDCG:
            best = discounted(ideal_gains, k, False)
            out.append(discounted(gains, k, False) / best if best > 0 else 0.0)
        elif kind == Kind.ERR_IA:
            everywhere = sum(present * (1 - alpha) ** i / (i + 1) for i in range(k))
            out.append(discounted(gains, k, True) / everywhere)
        elif kind == Kind.NERR_IA:
            best = discounted(ideal_gains, k, True)
            out.append(discounted(gains, k, True) / best if best > 0 else 0.0)
        elif kind in (Kind.NRBP, Kind.NNRBP):
            value = (1 - (1 - alpha) * beta) / present * rank_biased(gains, beta)
            if kind == Kind.NNRBP:
                best = (1 - (1 - alpha) * beta) / present * rank_biased(ideal_gains, beta)
                value = value / best if best > 0 else 0.0
            out.append(value)
        elif kind == Kind.P_IA:
            out.append(intent_aware_precision(rel, k, present))
        elif kind == Kind.STREC:
            out.append(covered_share(rel, k, present))
        else:  # MAP_IA
            out.append(intent_aware_ap(rel, per_subtopic, present))
    return out


def evaluate_diversity(
    qrels: SubtopicQrels,
    run: Run | Mapping[str, Mapping[str, float]],
    metrics: Iterable[str] | str,
    *,
    alpha: float = 0.5,
    beta: float = 0.5,
    query_set: str = "qrels",
    name: str | None = None,
    allow_disjoint: bool = False,
) -> RunResult:
    """Score `run` on intent-aware metrics (alpha_ndcg@k, err_ia@k, nerr_ia@k, nrbp, nnrbp, p_ia@k, strec@k,
    map_ia). Rankings follow ragmetrics' rule (score descending, ties by document id descending, as ndeval);
    by default every qrels query is scored (one the run lacks scores 0), or with ``query_set="intersection"``
    only those both have. A run sharing no query with the qrels is refused unless `allow_disjoint`, as in
    `ragmetrics.evaluate`."""
    from ragmetrics.retrieval.run import Run

    if not isinstance(qrels, SubtopicQrels):
        raise InputError("intent-aware metrics need subtopic qrels (ragmetrics.SubtopicQrels)", field="qrels")
    if not 0 <= alpha < 1 or not 0 <= beta < 1:
        raise InputError(f"alpha and beta must lie in [0, 1), got {alpha} and {beta}", field="alpha")
    if query_set not in QUERY_SETS:
        raise InputError(
            f"unknown query set {query_set!r}; choose 'qrels' or 'intersection'", field="query_set"
        )
    requests = parse_metrics(metrics)
    plain = [r.spelling for r in requests if not r.spec.subtopics]
    if plain:
        raise InputError(
            f"{', '.join(plain)}: not intent-aware; ragmetrics.evaluate scores them on the collapsed qrels",
            field="metrics",
        )
    ranked = (run if isinstance(run, Run) else Run.from_dict(run, name=name or "run")).to_dict()
    if ranked and not any(q in qrels.judgments for q in ranked) and not allow_disjoint:
        raise InputError(
            "the run shares no query id with the subtopic qrels: every score would be 0. Are these the right "
            "files? (allow_disjoint=True scores it anyway)",
            field="query_id",
        )
    queries = [q for q in qrels.query_ids if query_set == "qrels" or q in ranked]
    per_query: dict[str, dict[str, float | None]] = {}
    entries = sum(len(docs) for docs in ranked.values())
    with numba_for(entries):  # large inputs run the compiled kernels, small ones the same code in Python
        for qid in queries:
            values = _query_metrics(qrels.judgments[qid], list(ranked.get(qid, {})), requests, alpha, beta)
            per_query[qid] = dict(zip((r.spelling for r in requests), values, strict=True))
    result = RunResult(
        name=name or (run.name if isinstance(run, Run) else "run"),
        per_query=per_query,
        metadata=RunMetadata(
            kind="retrieval",
            metrics=[r.spelling for r in requests],
            metric_settings={
                "query_set": query_set,
                "alpha": alpha,
                "beta": beta,
                "metrics": {r.spelling: r.settings() for r in requests},
            },
            num_queries=len(queries),
            missing_queries=[q for q in qrels.query_ids if q not in ranked],
            extra_queries=[q for q in ranked if q not in qrels.judgments],
        ),
    )
    result.recompute_aggregate()
    return result
