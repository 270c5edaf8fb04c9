"""Score one run against qrels: `evaluate` gives a `RunResult`, `score_matrix` the raw [queries x metrics] array.

`score_matrix` is the vectorised entry point for callers that loop over runs (compare): no per-query dicts.
Both take the query set from the qrels by default (a query the run lacks scores 0, trec_eval -c) or, with
``query_set="intersection"``, from the queries both share (trec_eval's default).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.options import QUERY_SETS, QuerySet
from ragmetrics.retrieval.metric_parse import MetricRequest, parse_metrics
from ragmetrics.retrieval.registry.spec import Kind
from ragmetrics.schema import GEOMETRIC_FLOOR, RunMetadata, RunResult

if TYPE_CHECKING:
    from ragmetrics.retrieval.budget import Straddle, TokenLengths
    from ragmetrics.retrieval.diversity import SubtopicQrels
    from ragmetrics.retrieval.run import Run
    from ragmetrics.retrieval.utilities import AbstentionProbabilities

TIE_RULE = "score descending, then document id descending"


class QrelsArrays(Protocol):
    """The array view of `ragmetrics.Qrels` that the kernels read."""

    @property
    def query_ids(self) -> tuple[str, ...]: ...
    @property
    def doc_vocab(self) -> NDArray[Any]: ...
    @property
    def offsets(self) -> NDArray[np.int64]: ...
    @property
    def doc_codes(self) -> NDArray[np.int64]: ...
    @property
    def grades(self) -> NDArray[np.int64]: ...


class RunArrays(Protocol):
    """The array view of `ragmetrics.Run`: entries of each query already in rank order."""

    @property
    def name(self) -> str: ...
    @property
    def query_ids(self) -> tuple[str, ...]: ...
    @property
    def doc_vocab(self) -> NDArray[Any]: ...
    @property
    def offsets(self) -> NDArray[np.int64]: ...
    @property
    def doc_codes(self) -> NDArray[np.int64]: ...


@dataclass(frozen=True)
class ScoreMatrix:
    """Per-query scores of one run: `values[i, j]` is metric `metrics[j]` on query `query_ids[i]`."""

    name: str
    query_ids: tuple[str, ...]
    metrics: tuple[str, ...]
    requests: tuple[MetricRequest, ...]
    values: NDArray[np.float64]
    query_set: QuerySet
    missing_queries: tuple[str, ...]
    extra_queries: tuple[str, ...]
    num_qrels_queries: int
    num_run_queries: int
    settings: dict[str, Any] = field(default_factory=dict)

    def column(self, metric: str) -> NDArray[np.float64]:
        """The per-query values of one metric (by the spelling used in the request)."""
        try:
            j = self.metrics.index(metric)
        except ValueError:
            raise KeyError(f"no metric {metric!r}; scored: {list(self.metrics)}") from None
        return self.values[:, j]

    def means(self) -> dict[str, float]:
        """Each metric's figure over the scored queries: the mean, or the sum or geometric mean its spec
        names (num_ret, gm_map; `MetricSpec.aggregate`), vectorised over the matrix's columns."""
        if not len(self.query_ids):
            return dict.fromkeys(self.metrics, 0.0)
        figures = self.values.mean(axis=0)
        for j, request in enumerate(self.requests):
            if request.spec.aggregate == "sum":
                figures[j] = self.values[:, j].sum()
            elif request.spec.aggregate == "geometric":
                figures[j] = np.exp(np.log(np.maximum(self.values[:, j], GEOMETRIC_FLOOR)).mean())
        return dict(zip(self.metrics, figures.tolist(), strict=True))

    def to_result(self) -> RunResult:
        """The unified-schema result (per query, aggregate, metadata)."""
        # Thousands of small lists and dicts: pause the cyclic GC so building them cannot trigger collections
        # over every object the caller holds (slow next to a million-entry input dict). The row dicts hold
        # only strings and floats, so CPython never tracks them; the row lists are freed before the GC
        # resumes, so resuming finds nothing new to collect.
        paused = gc.isenabled()
        gc.disable()
        try:
            rows = self.values.tolist()
            keys = self.metrics  # the matrix has one column per metric and one row per query
            # Copies of one dict already sized for every metric, then filled: no dict resizes as it grows.
            template: dict[str, float | None] = dict.fromkeys(keys)
            per_query: dict[str, dict[str, float | None]] = {}
            for qid, row in zip(self.query_ids, rows, strict=True):
                scores = template.copy()
                scores.update(zip(keys, row, strict=True))
                per_query[qid] = scores
            del rows
        finally:
            if paused:
                gc.enable()
        aggregate: dict[str, float | None] = dict(self.means())
        metadata = RunMetadata(
            kind="retrieval",
            metrics=list(self.metrics),
            metric_settings=dict(self.settings),
            num_queries=len(self.query_ids),
            num_qrels_queries=self.num_qrels_queries,
            num_run_queries=self.num_run_queries,
            missing_queries=list(self.missing_queries),
            extra_queries=list(self.extra_queries),
        )
        # The values are float64 checked finite in `score_matrix`; skip re-validating a million floats.
        return RunResult.model_construct(
            name=self.name,
            per_query=per_query,
            aggregate=aggregate,
            metadata=metadata,
            failures=[],
            details={},
        )


def _as_qrels(qrels: QrelsArrays | Mapping[str, Mapping[str, int]]) -> QrelsArrays:
    if isinstance(qrels, Mapping):
        from ragmetrics.retrieval.qrels import Qrels

        return Qrels.from_dict(qrels)
    if not hasattr(qrels, "grades"):
        raise TypeError(
            f"qrels must be a ragmetrics.Qrels or a {{query: {{doc: grade}}}} dict, not {type(qrels).__name__}"
        )
    return qrels


def _as_run(run: RunArrays | Mapping[str, Mapping[str, float]], name: str | None) -> RunArrays:
    if isinstance(run, Mapping):
        from ragmetrics.retrieval.run import Run

        return Run.from_dict(run, name=name or "run")
    if not hasattr(run, "doc_codes") or hasattr(run, "grades"):
        raise TypeError(
            f"run must be a ragmetrics.Run or a {{query: {{doc: score}}}} dict, not {type(run).__name__}"
        )
    return run


def _code_points(vocab: NDArray[Any]) -> NDArray[np.uint32]:
    """Strings as rows of zero-padded UCS-4 code points (row order = string order); a view of a str array."""
    fixed = np.ascontiguousarray(np.asarray(vocab, dtype=str))
    return fixed.view(np.uint32).reshape(len(fixed), fixed.dtype.itemsize // 4)


def translate_docs(qrels_vocab: NDArray[Any], run_vocab: NDArray[Any]) -> NDArray[np.int32]:
    """For each run vocabulary entry, its code in the qrels vocabulary, or -1 (both vocabularies sorted).

    One merge pass over the two sorted vocabularies (numba), instead of a binary search per string.
    """
    from ragmetrics.retrieval._lazy import numba_for
    from ragmetrics.retrieval.kernels import match_sorted_rows

    if qrels_vocab is run_vocab:
        return np.arange(len(run_vocab), dtype=np.int32)
    if len(qrels_vocab) == 0 or len(run_vocab) == 0:
        return np.full(len(run_vocab), -1, dtype=np.int32)
    if len(qrels_vocab) >= 2**31 - 1:
        raise InputError("more than 2^31 distinct judged documents are not supported", field="qrels")
    with numba_for(len(qrels_vocab) + len(run_vocab)):
        mapping: NDArray[np.int32] = match_sorted_rows(_code_points(run_vocab), _code_points(qrels_vocab))
    return mapping


@dataclass(frozen=True)
class _Alignment:
    """How one run's queries and documents line up with one qrels' (independent of the metrics)."""

    missing: tuple[str, ...]
    extra: tuple[str, ...]
    doc_map: NDArray[np.int32]
    run_index: NDArray[np.int64]
    """For each qrels query (in its order), the run's row of it, -1 where the run lacks it."""


_ALIGNED: dict[tuple[int, int], tuple[weakref.ref[Any], weakref.ref[Any], _Alignment]] = {}
_ALIGNED_KEPT = 8


def _aligned(q: QrelsArrays, r: RunArrays) -> _Alignment:
    """The run's query rows and its document codes in the qrels' vocabulary, remembered for the last few
    (qrels, run) pairs: evaluating the same pair again (more metrics, a comparison, a search over fusion
    settings) skips the string merge and the query lookups. Both containers are immutable and held weakly,
    compared by identity, so a reused id of a freed container never returns a stale alignment."""
    key = (id(q), id(r))
    held = _ALIGNED.get(key)
    if held is not None and held[0]() is q and held[1]() is r:
        return held[2]
    run_rows = {qid: i for i, qid in enumerate(r.query_ids)}
    qrels_ids = set(q.query_ids)
    alignment = _Alignment(
        missing=tuple(qid for qid in q.query_ids if qid not in run_rows),
        extra=tuple(qid for qid in r.query_ids if qid not in qrels_ids),
        doc_map=translate_docs(q.doc_vocab, r.doc_vocab),
        run_index=np.asarray([run_rows.get(qid, -1) for qid in q.query_ids], dtype=np.int64),
    )
    try:
        refs = (weakref.ref(q), weakref.ref(r))
    except TypeError:  # a container of another library without weak references: not remembered
        return alignment
    if len(_ALIGNED) >= _ALIGNED_KEPT:
        _ALIGNED.pop(next(iter(_ALIGNED)))
    _ALIGNED[key] = (*refs, alignment)
    return alignment


def _check_finite(
    values: NDArray[np.float64],
    requests: tuple[MetricRequest, ...],
    query_ids: tuple[str, ...],
    q: QrelsArrays,
) -> None:
    """Only dcg_burges can overflow (2^grade - 1 beyond float64 from grade 1024): an input error naming
    the query and its grade. Anything else non-finite is a bug, never a score."""
    if np.isfinite(values).all():
        return
    bad_rows, bad_cols = np.nonzero(~np.isfinite(values))
    if bad_rows.shape[0] == 0:
        return
    row, col = int(bad_rows[0]), int(bad_cols[0])
    request = requests[col]
    if request.spec.kind == Kind.DCG_BURGES:
        qrow = list(q.query_ids).index(query_ids[row])
        grades = q.grades[q.offsets[qrow] : q.offsets[qrow + 1]]
        raise InputError(
            f"{request.spelling}: query {query_ids[row]!r} has grade {int(grades.max())}, whose gain 2^grade - 1 "
            "is beyond float64 (grades up to 1023 fit); use ndcg_burges (scaled, never overflows) or dcg",
            field="qrels",
        )
    raise RuntimeError("internal error: a retrieval kernel produced a non-finite score")


def _settings(
    requests: tuple[MetricRequest, ...], query_set: QuerySet, utilities: AbstentionProbabilities | None
) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "query_set": query_set,
        "tie_rule": TIE_RULE,
        "relevance_level": {r.spelling: r.level for r in requests},
        "metrics": {r.spelling: r.settings() for r in requests},
    }
    if any(r.spec.kind == Kind.UDCG for r in requests):  # where udcg's u_i came from: a file, or none (u = 1)
        settings["utilities"] = (
            None
            if utilities is None
            else {"source": utilities.source, "passages": len(utilities), "missing": utilities.missing}
        )
    aggregation = {r.spelling: r.spec.aggregate for r in requests if r.spec.aggregate != "mean"}
    if aggregation:  # read by RunResult.recompute_aggregate, so a merged or reloaded result keeps them
        settings["aggregation"] = aggregation
    return settings


ERR_MAX_GRADE = 4
"""gdeval's highest grade, the default g_max of err and nerr (a higher grade in the qrels raises it)."""


def _weights(requests: tuple[MetricRequest, ...]) -> NDArray[np.float64]:
    """[metrics, 2]: udcg's relevant and irrelevant weights (0 for every other metric)."""
    out = np.zeros((len(requests), 2), dtype=np.float64)
    for j, request in enumerate(requests):
        if request.spec.kind == Kind.UDCG:
            out[j] = (request.relevant_weight, request.irrelevant_weight)
    return out


def _utilities(
    requests: tuple[MetricRequest, ...],
    utilities: AbstentionProbabilities | None,
    r: RunArrays,
    q: QrelsArrays,
    query_ids: tuple[str, ...],
    run_index: NDArray[np.int64],
    depths: NDArray[np.int64] | None,
) -> NDArray[np.float64]:
    """Each run entry's utility u = 1 - p_abstain for the udcg kernel (`kernels.utility`).

    Empty when no udcg is asked for; all ones without utilities (udcg over the relevance labels alone).
    Otherwise only the entries some udcg request reads (its cutoff, or the query's token-budget depth) are
    looked up, and one without a probability is an InputError naming the query, document and rank, unless
    the utilities say ``missing="skip"`` (then u = 0: it adds nothing but counts, as in the reference).
    A query of the utilities that the qrels lack is an error: the files do not belong together.
    """
    columns = [j for j, request in enumerate(requests) if request.spec.kind == Kind.UDCG]
    entries = int(r.doc_codes.shape[0])
    if not columns:
        return np.empty(0, dtype=np.float64)
    if utilities is None:
        return np.ones(entries, dtype=np.float64)
    known = set(q.query_ids)
    unknown = sorted(qid for qid in utilities.by_query if qid not in known)
    if unknown:
        more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        raise InputError(
            f"abstention probabilities for {len(unknown)} query id(s) the qrels do not hold: "
            f"{', '.join(map(repr, unknown[:3]))}{more}; are these the utilities of this collection?",
            source=utilities.source,
            field="query_id",
        )
    useful = np.zeros(entries, dtype=np.float64)
    for i, qid in enumerate(query_ids):
        row = int(run_index[i])
        if row < 0:
            continue
        lo, hi = int(r.offsets[row]), int(r.offsets[row + 1])
        need = 0
        for j in columns:
            if depths is not None and depths[i, j] >= 0:  # a token budget: that query's depth
                cut = int(depths[i, j])
            else:
                cut = requests[j].cutoff or hi - lo
            need = max(need, min(cut, hi - lo))
        probabilities = utilities.by_query.get(qid, {})
        for rank, code in enumerate(r.doc_codes[lo : lo + need].tolist(), start=1):
            doc = str(r.doc_vocab[code])
            p = probabilities.get(doc)
            if p is not None:
                useful[lo + rank - 1] = 1.0 - p
            elif utilities.missing == "error":
                raise InputError(
                    f"{requests[columns[0]].spelling}: no abstention probability for document {doc!r} of query "
                    f"{qid!r} (rank {rank}); every passage udcg reads needs one (or read the utilities with "
                    "missing='skip', the reference's behaviour: such a passage adds nothing but counts)",
                    source=utilities.source,
                    field="p_abstain",
                )
    return useful


def _params(requests: tuple[MetricRequest, ...], q: QrelsArrays) -> NDArray[np.float64]:
    """Each metric's real parameter for the kernels: rbp's persistence, iprec's and rprec_mult's point, and
    err's g_max (`ERR_MAX_GRADE`, or the qrels' highest grade when that is higher)."""
    g_max = float(max(ERR_MAX_GRADE, int(q.grades.max()) if len(q.grades) else 0))
    return np.asarray(
        [g_max if x.spec.kind in (Kind.ERR, Kind.NERR) else x.param for x in requests], dtype=np.float64
    )


def score_matrix(
    qrels: QrelsArrays | Mapping[str, Mapping[str, int]],
    run: RunArrays | Mapping[str, Mapping[str, float]],
    metrics: Iterable[str] | str,
    *,
    query_set: QuerySet | str = "qrels",
    name: str | None = None,
    allow_disjoint: bool = False,
    lengths: Mapping[str, int] | TokenLengths | None = None,
    straddle: str = "exclude",
    utilities: AbstentionProbabilities | Mapping[str, Mapping[str, float]] | None = None,
) -> ScoreMatrix:
    """Score `run` on every requested metric; rows follow the qrels' (sorted) query order. Token-budget
    metrics (``recall@512tok``) need `lengths` (document id -> tokens; `ragmetrics.retrieval.budget`);
    udcg reads `utilities` (per-passage abstention probabilities, an `AbstentionProbabilities` or a plain
    ``{query: {doc: p_abstain}}`` dict; without them every utility is 1)."""
    from ragmetrics.retrieval.kernels import score_queries

    requests = parse_metrics(metrics)
    intent_aware = [r.spelling for r in requests if r.spec.subtopics]
    if intent_aware:
        raise InputError(
            f"{', '.join(intent_aware)}: intent-aware, needs subtopic qrels (ragmetrics.SubtopicQrels, the TREC "
            "diversity format) passed to ragmetrics.evaluate",
            field="metrics",
        )
    if query_set not in QUERY_SETS:
        raise InputError(
            f"unknown query set {query_set!r}; choose 'qrels' (trec_eval -c) or 'intersection'",
            field="query_set",
        )
    q = _as_qrels(qrels)
    r = _as_run(run, name)
    run_name = name or r.name
    if len(q.query_ids) == 0:
        raise InputError("the qrels hold no query; nothing to evaluate", field="qrels")

    alignment = _aligned(q, r)
    missing, extra = alignment.missing, alignment.extra
    if len(extra) == len(r.query_ids) and len(r.query_ids) and not allow_disjoint:
        raise InputError(
            f"run {run_name!r} shares no query id with the qrels (run: {', '.join(map(repr, r.query_ids[:3]))}"
            f"{', ...' if len(r.query_ids) > 3 else ''}; qrels: {', '.join(map(repr, q.query_ids[:3]))}"
            f"{', ...' if len(q.query_ids) > 3 else ''}): every score would be 0. Are these the right files? "
            "(allow_disjoint=True, or --allow-disjoint, scores it anyway)",
            field="query_id",
        )
    if query_set == "qrels":
        query_ids = tuple(q.query_ids)
        qrels_rows = np.arange(len(q.query_ids), dtype=np.int64)
        run_index = alignment.run_index
    else:
        qrels_rows = np.flatnonzero(alignment.run_index >= 0).astype(np.int64)
        if not len(qrels_rows):
            raise InputError(
                f"run {run_name!r} shares no query with the qrels; nothing to average over "
                "(query_set='qrels' scores the missing queries 0)",
                field="query_set",
            )
        query_ids = tuple(q.query_ids[i] for i in qrels_rows.tolist())
        run_index = alignment.run_index[qrels_rows]

    from ragmetrics.retrieval.budget import budget_depths

    depths = budget_depths(cast("Run", r), run_index, requests, lengths, cast("Straddle", straddle))
    from ragmetrics.retrieval.utilities import AbstentionProbabilities

    if isinstance(utilities, Mapping):
        utilities = AbstentionProbabilities.from_dict(utilities)
    elif utilities is not None and not isinstance(utilities, AbstentionProbabilities):
        raise TypeError(
            "utilities must be a ragmetrics.AbstentionProbabilities or a {query: {doc: p_abstain}} dict, "
            f"not {type(utilities).__name__}"
        )
    useful = _utilities(requests, utilities, r, q, query_ids, run_index, depths)
    doc_map = alignment.doc_map
    values = score_queries(
        (
            np.ascontiguousarray(q.offsets, dtype=np.int64),
            np.ascontiguousarray(q.doc_codes, dtype=np.int64),
            np.ascontiguousarray(q.grades, dtype=np.int64),
        ),
        (
            np.ascontiguousarray(r.offsets, dtype=np.int64),
            np.ascontiguousarray(r.doc_codes, dtype=np.int64),
            doc_map,
            useful,
        ),
        qrels_rows,
        run_index,
        (
            np.asarray([int(x.spec.kind) for x in requests], dtype=np.int64),
            np.asarray([x.cutoff for x in requests], dtype=np.int64),
            np.asarray([x.level for x in requests], dtype=np.int64),
            _params(requests, q),
            _weights(requests),
        ),
        depths,
    )
    _check_finite(values, requests, query_ids, q)
    return ScoreMatrix(
        name=run_name,
        query_ids=query_ids,
        metrics=tuple(x.spelling for x in requests),
        requests=requests,
        values=values,
        query_set=cast(QuerySet, query_set),
        missing_queries=missing,
        extra_queries=extra,
        num_qrels_queries=len(q.query_ids),
        num_run_queries=len(r.query_ids),
        settings=_settings(requests, cast(QuerySet, query_set), utilities),
    )


def evaluate(
    qrels: QrelsArrays | Mapping[str, Mapping[str, int]] | SubtopicQrels,
    run: RunArrays | Mapping[str, Mapping[str, float]],
    metrics: Iterable[str] | str,
    *,
    query_set: QuerySet | str = "qrels",
    name: str | None = None,
    allow_disjoint: bool = False,
    lengths: Mapping[str, int] | TokenLengths | None = None,
    straddle: str = "exclude",
    utilities: AbstentionProbabilities | Mapping[str, Mapping[str, float]] | None = None,
) -> RunResult:
    """Score one run: `RunResult` with per-query values keyed by the metric spelling used, and their means.

    A run that shares no query id with the qrels is an InputError (its scores would all be 0, which is
    almost always a mix-up of files) unless `allow_disjoint`.

    `qrels` and `run` are `Qrels`/`Run` (or plain nested dicts, converted with `from_dict`). By default the
    mean is over every qrels query and a query the run lacks scores 0 (trec_eval -c); ``"intersection"``
    averages over the queries both have. Queries only the run has are listed in `metadata.extra_queries`.
    Unknown metrics and bad cutoffs raise `InputError`. `utilities` (`AbstentionProbabilities`) gives udcg
    each passage's probability that the generator abstains on it alone; without them udcg uses u = 1.
    """
    from ragmetrics.retrieval.diversity import SubtopicQrels, evaluate_diversity

    if not isinstance(qrels, SubtopicQrels):
        return score_matrix(
            qrels,
            run,
            metrics,
            query_set=query_set,
            name=name,
            allow_disjoint=allow_disjoint,
            lengths=lengths,
            straddle=straddle,
            utilities=utilities,
        ).to_result()
    # Subtopic qrels: the intent-aware metrics on the subtopics, the others on the collapsed qrels.
    requests = parse_metrics(metrics)
    plain = [r.spelling for r in requests if not r.spec.subtopics]
    aware = [r.spelling for r in requests if r.spec.subtopics]
    r = _as_run(run, name)
    parts: list[RunResult] = []
    if plain:
        parts.append(
            score_matrix(
                qrels.collapsed(), r, plain, query_set=query_set, name=name, allow_disjoint=allow_disjoint,
                lengths=lengths, straddle=straddle, utilities=utilities,
            ).to_result()
        )  # fmt: skip
    if aware:
        parts.append(
            evaluate_diversity(
                qrels,
                cast("Run", r),
                aware,
                query_set=str(query_set),
                name=name or r.name,
                allow_disjoint=allow_disjoint,
            )
        )
    result = parts[0] if len(parts) == 1 else parts[0].merge(parts[1])
    result.metadata.metrics = [x.spelling for x in requests]
    return result
