"""The built-in local judge: verdicts by sentence-embedding similarity, offline and deterministic.

It answers the same questions as the LLM judge (is this chunk useful for the reference, is this
reference statement supported by the context, is this context sentence about the question) by
comparing MiniLM embeddings against thresholds calibrated on the labelled set in tests/data (see
docs/local_judge.md). It is a cheap, reproducible proxy, not an LLM's reading: every result says
backend 'local', and answer relevancy is a local variant, cosine(question, answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import JudgeError
from ragmetrics.judge import formulas
from ragmetrics.judge.backends._dispatch import Handler, PlanDispatch
from ragmetrics.judge.base import JUDGE_METRICS, Embedder, MetricOutcome, RagSample, target_statements
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.embedding_batch import BatchingEmbedder
from ragmetrics.judge.embedding_store import StoredEmbedder
from ragmetrics.judge.registry import JudgeMetricSpec, Plan, spec
from ragmetrics.judge.text.sentences import split_sentences, split_statements
from ragmetrics.schema import CacheStats, JudgeDetail, JudgeInfo

BACKEND = "local"
ANSWER_RELEVANCY_VARIANT = "local_cosine"
VerdictKind = Literal[
    "context_precision", "context_utilization", "context_recall", "context_relevancy", "faithfulness"
]
VERDICT_KINDS: tuple[VerdictKind, ...] = (
    "context_precision",
    "context_utilization",
    "context_recall",
    "context_relevancy",
    "faithfulness",
)
CALIBRATED_KINDS: tuple[VerdictKind, ...] = VERDICT_KINDS[:4]
"""Verdict types with their own labelled pairs (tests/data/local_judge_pairs.jsonl). Faithfulness compares an
answer statement with context sentences exactly as context recall compares a reference statement, so it
borrows context recall's threshold until it has labelled pairs of its own."""


@dataclass(frozen=True)
class LocalThresholds:
    """Cosine at or above which a verdict is positive, per verdict type.

    Defaults are each metric's `local_threshold` in `judge.registry`, chosen to maximise balanced accuracy
    on tests/data/local_judge_pairs.jsonl (benchmarks/calibrate_local_judge.py); docs/local_judge.md records
    the accuracy they reach.
    """

    context_precision: float = spec("context_precision").local_threshold or 0.0
    context_utilization: float = spec("context_utilization").local_threshold or 0.0
    context_recall: float = spec("context_recall").local_threshold or 0.0
    context_relevancy: float = spec("context_relevancy").local_threshold or 0.0
    faithfulness: float = (
        spec("faithfulness").local_threshold or 0.0
    )  # context recall's, see CALIBRATED_KINDS

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not -1.0 <= value <= 1.0:
                raise ValueError(f"threshold {name} must be a cosine in [-1, 1], not {value}")

    def for_kind(self, kind: VerdictKind) -> float:
        value: float = getattr(self, kind)
        return value


@dataclass(frozen=True)
class Match:
    """The best-scoring pair of text units behind one verdict."""

    cosine: float
    left: int
    right: int


def units(kind: VerdictKind, side: Literal["a", "b"], text: str, language: str | None = None) -> list[str]:
    """The text units compared for a verdict type; side 'a' is the judged item, 'b' what it is judged against.

    context_precision / context_utilization: a = chunk (its sentences), b = reference / answer (its
    sentences and, when it has several, also the whole text). context_recall: a = one reference statement,
    b = context (its sentences). context_relevancy: a = question (whole), b = one context sentence (whole).
    """
    if kind in ("context_precision", "context_utilization"):
        sentences = split_sentences(text, language)
        if side == "a":
            return sentences
        return [*sentences, text.strip()] if len(sentences) > 1 else sentences
    if kind in ("context_recall", "faithfulness"):
        return [text.strip()] if side == "a" else split_sentences(text, language)
    if kind == "context_relevancy":
        return [text.strip()] if text.strip() else []
    raise ValueError(f"unknown verdict kind {kind!r}; expected one of {VERDICT_KINDS}")


def best_match(left: NDArray[np.float32], right: NDArray[np.float32]) -> Match | None:
    """Highest cosine between any row of `left` and any row of `right` (unit vectors); None if either is empty."""
    if not len(left) or not len(right):
        return None
    sims = left @ right.T
    flat = int(np.argmax(sims))  # first maximum in row-major order: ties resolve deterministically
    i, j = divmod(flat, sims.shape[1])
    return Match(cosine=float(sims[i, j]), left=i, right=j)


async def pair_similarities(
    embedder: Embedder, kind: VerdictKind, pairs: Sequence[tuple[str, str]]
) -> list[float | None]:
    """Best cosine for each (a, b) pair as the judge computes it; None where a side has no text. For calibration."""
    split = [(units(kind, "a", a), units(kind, "b", b)) for a, b in pairs]
    flat = [u for left, right in split for u in (*left, *right)]
    vectors = await embedder.embed(flat) if flat else np.zeros((0, 0), dtype=np.float32)
    out: list[float | None] = []
    pos = 0
    for left, right in split:
        lv = vectors[pos : pos + len(left)]
        pos += len(left)
        rv = vectors[pos : pos + len(right)]
        pos += len(right)
        match = best_match(lv, rv)
        out.append(None if match is None else match.cosine)
    return out


def _verdict_kind(spec: JudgeMetricSpec) -> VerdictKind:
    """The thresholded verdict type of a metric: its name, when the local judge calibrates one for it."""
    if spec.name not in VERDICT_KINDS:
        raise JudgeError(
            f"the local judge has no calibrated verdict for {spec.name}", cause="unsupported_metric"
        )
    return spec.name


def _r(x: float) -> float:
    return round(x, 4)


class LocalJudge(PlanDispatch):
    """Judge protocol over an embedder. The default embedder is the bundled int8 MiniLM (see ragmetrics.embeddings)."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        thresholds: LocalThresholds | None = None,
        *,
        cache: VerdictCache | None = None,
    ) -> None:
        if embedder is None:
            from ragmetrics.embeddings.minilm import MiniLMEmbedder

            embedder = MiniLMEmbedder()
        self._cache = cache
        if cache is not None and cache.enabled:
            # Vectors, not verdicts, are what cost time here; stored, a rerun never runs the model again.
            from ragmetrics.embeddings.seeds import seed_vectors

            embedder = StoredEmbedder(embedder, cache, seeds=seed_vectors(embedder.name))
        # Units in flight each ask for a few texts; one model call (and one cache transaction) serves them all.
        self._embedder = BatchingEmbedder(embedder)
        self._thresholds = thresholds or LocalThresholds()
        self._failures = 0

    @property
    def backend(self) -> str:
        return BACKEND

    @property
    def preferred_units_in_flight(self) -> int:
        """Many units at once: their texts are embedded together, so the model sees large batches while
        Python turns the previous batch into verdicts."""
        return 512

    @property
    def thresholds(self) -> LocalThresholds:
        return self._thresholds

    def supported_metrics(self) -> tuple[str, ...]:
        return JUDGE_METRICS

    def info(self) -> JudgeInfo:
        return JudgeInfo(
            backend=BACKEND,
            model=self._embedder.name,
            embedding_model=self._embedder.name,
            settings={
                "note": "built-in local judge: verdicts by embedding similarity against calibrated "
                "thresholds, not by an LLM",
                "thresholds": asdict(self._thresholds),
                "answer_relevancy": f"{ANSWER_RELEVANCY_VARIANT}: local variant, cosine(question, answer) "
                "clipped to [0, 1]; not the generated-question method",
                "sentence_splitter": "ragmetrics.judge.text.sentences",
            },
            cache=self._cache.stats() if self._cache is not None else CacheStats(enabled=False),
            failures=self._failures,
        )

    async def aclose(self) -> None:
        if self._cache is not None:
            self._cache.close()  # reopened on next use, so the judge stays usable

    def handlers(self) -> dict[Plan, Handler]:
        return {
            "chunk_usefulness": self._chunk_usefulness,
            "statement_attribution": self._statement_attribution,
            "sentence_relevance": self._sentence_relevance,
            "question_generation": self._answer_cosine,
            "embedding_similarity": self._embedding_similarity,
            "statement_classification": self._statement_classification,
        }

    async def _embedding_similarity(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        a_vec, r_vec = await self._embed_groups(
            [[str(sample.answer).strip()], [str(sample.reference).strip()]]
        )
        value = formulas.answer_similarity_score(a_vec[0].tolist(), r_vec[0].tolist())
        return MetricOutcome(
            value=value,
            detail=JudgeDetail(
                verdicts=[{"cosine": _r(value), "reason": "cosine of the answer and reference embeddings"}],
                reason=f"embedding similarity of answer and reference = {value:.4f} (local model)",
            ),
        )

    async def _statement_classification(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        threshold = spec.local_threshold or 0.0
        answer_statements = split_statements(str(sample.answer), sample.language)
        reference_statements = split_statements(str(sample.reference), sample.language)
        if not reference_statements:
            raise JudgeError(
                f"sample {sample.id!r}: the reference contains no statements", cause="missing_field"
            )
        a_vecs, r_vecs, whole_a, whole_r = await self._embed_groups(
            [
                answer_statements,
                reference_statements,
                [str(sample.answer).strip()],
                [str(sample.reference).strip()],
            ]
        )
        verdicts: list[dict[str, Any]] = []
        tp = fp = 0
        for n, statement in enumerate(answer_statements):
            match = best_match(a_vecs[n : n + 1], r_vecs)
            present = match is not None and match.cosine >= threshold
            tp, fp = (tp + 1, fp) if present else (tp, fp + 1)
            verdicts.append({"side": "answer", "statement": statement, "verdict": present,
                             "class": "TP" if present else "FP",
                             "cosine": None if match is None else _r(match.cosine)})  # fmt: skip
        fn = 0
        for n, statement in enumerate(reference_statements):
            match = best_match(r_vecs[n : n + 1], a_vecs) if len(a_vecs) else None
            present = match is not None and match.cosine >= threshold
            fn += 0 if present else 1
            verdicts.append({"side": "reference", "statement": statement, "verdict": present,
                             "class": None if present else "FN",
                             "cosine": None if match is None else _r(match.cosine)})  # fmt: skip
        similarity = formulas.answer_similarity_score(whole_a[0].tolist(), whole_r[0].tolist())
        value = spec.score(tp, fp, fn, similarity)
        reason = (f"TP {tp}, FP {fp}, FN {fn} (local judge, threshold {threshold:.2f}): "
                  f"F1 {formulas.statement_f1(tp, fp, fn):.4f}; similarity {similarity:.4f}")  # fmt: skip
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))

    async def _embed_groups(self, groups: list[list[str]]) -> list[NDArray[np.float32]]:
        """One embedder call for all groups, split back per group.

        Only the embedder's own errors become `embedder_error`: a bug in this module should surface as one
        (evaluate_rag records it as `internal_error` with a logged traceback), not pass for an embedder fault.
        A short or ragged answer is an error too, since slicing it would silently shorten a group.
        """
        flat = [t for g in groups for t in g]
        if not flat:
            return [np.zeros((0, 0), dtype=np.float32) for _ in groups]
        try:
            vectors = await self._embedder.embed(flat)
        except JudgeError:
            raise
        except Exception as exc:  # a pluggable embedder may raise anything
            raise JudgeError(
                f"embedder {self._embedder.name!r} failed: {type(exc).__name__}: {exc}",
                cause="embedder_error",
            ) from exc
        if vectors.ndim != 2 or vectors.shape[0] != len(flat):
            raise JudgeError(
                f"embedder {self._embedder.name!r} returned shape {vectors.shape} for {len(flat)} texts",
                cause="embedder_error",
            )
        out = []
        pos = 0
        for g in groups:
            out.append(vectors[pos : pos + len(g)])
            pos += len(g)
        return out

    async def _chunk_usefulness(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        kind = _verdict_kind(spec)
        threshold = self._thresholds.for_kind(kind)
        against = str(spec.target)
        target = str(getattr(sample, against))
        target_units = units(kind, "b", target, sample.language)
        if not target_units:  # otherwise every chunk would read as "empty chunk" and score 0
            raise JudgeError(
                f"sample {sample.id!r}: the {against} contains no sentences", cause="missing_field"
            )
        chunk_units = [units(kind, "a", chunk, sample.language) for chunk in sample.contexts]
        target_vecs, *chunk_vecs = await self._embed_groups([target_units, *chunk_units])
        verdicts: list[dict[str, Any]] = []
        for k, vecs in enumerate(chunk_vecs):
            match = best_match(vecs, target_vecs)
            if match is None:
                verdicts.append({"chunk": k, "verdict": False, "cosine": None, "reason": "empty chunk"})
                continue
            useful = match.cosine >= threshold
            where = (
                f"whole {against}"
                if match.right == len(target_units) - 1 and len(target_units) > 1
                else f"{against} sentence {match.right + 1}"
            )
            verdicts.append({
                "chunk": k,
                "verdict": useful,
                "cosine": _r(match.cosine),
                "sentence_index": match.left,
                "matched": where,
                "reason": f"best cosine {match.cosine:.2f} {'>=' if useful else '<'} {threshold:.2f} "
                f"between sentence {match.left + 1} of chunk {k + 1} and {where}",
            })  # fmt: skip
        value = spec.score([v["verdict"] for v in verdicts])
        useful_count = sum(1 for v in verdicts if v["verdict"])
        reason = f"{useful_count} of {len(verdicts)} chunks useful for the {against} (local judge, threshold {threshold:.2f})"
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))

    @staticmethod
    def _context_sentences(sample: RagSample) -> list[tuple[int, int, str]]:
        return [
            (k, i, s)
            for k, chunk in enumerate(sample.contexts)
            for i, s in enumerate(split_sentences(chunk, sample.language))
        ]

    async def _statement_attribution(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        threshold = self._thresholds.for_kind(_verdict_kind(spec))
        target_field = str(spec.target)
        statements = target_statements(spec, sample)  # as in the LLM judge: never a 0 over no statements
        sentences = self._context_sentences(sample)
        stmt_vecs, sent_vecs = await self._embed_groups([statements, [s for _, _, s in sentences]])
        verdicts: list[dict[str, Any]] = []
        for n, statement in enumerate(statements):
            match = best_match(stmt_vecs[n : n + 1], sent_vecs)
            if match is None:
                verdicts.append({"statement": statement, "verdict": False, "cosine": None,
                                 "reason": "the context has no sentences"})  # fmt: skip
                continue
            chunk, index, _ = sentences[match.right]
            attributed = match.cosine >= threshold
            verdicts.append({
                "statement": statement,
                "verdict": attributed,
                "cosine": _r(match.cosine),
                "chunk": chunk,
                "sentence_index": index,
                "reason": f"best cosine {match.cosine:.2f} {'>=' if attributed else '<'} {threshold:.2f} "
                f"with sentence {index + 1} of chunk {chunk + 1}",
            })  # fmt: skip
        value = spec.score([v["verdict"] for v in verdicts])
        hits = sum(1 for v in verdicts if v["verdict"])
        how = "supported by" if spec.verdict_flag == "supported" else "attributed to"
        reason = f"{hits} of {len(verdicts)} {target_field} statements {how} the context (local judge, threshold {threshold:.2f})"
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))

    async def _sentence_relevance(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        threshold = self._thresholds.for_kind(_verdict_kind(spec))
        sentences = self._context_sentences(sample)
        if not sentences:
            raise JudgeError(
                f"sample {sample.id!r}: the contexts contain no sentences", cause="missing_field"
            )
        q_vec, sent_vecs = await self._embed_groups([[sample.question.strip()], [s for _, _, s in sentences]])
        sims = sent_vecs @ q_vec[0]
        verdicts: list[dict[str, Any]] = []
        for (chunk, index, sentence), sim in zip(sentences, sims.tolist(), strict=True):
            relevant = sim >= threshold
            verdicts.append({
                "chunk": chunk,
                "sentence_index": index,
                "sentence": sentence,
                "verdict": relevant,
                "cosine": _r(sim),
                "reason": f"sentence {index + 1} of chunk {chunk + 1}: cosine with the question {sim:.2f} {'>=' if relevant else '<'} {threshold:.2f}",
            })  # fmt: skip
        value = spec.score([v["verdict"] for v in verdicts])
        hits = sum(1 for v in verdicts if v["verdict"])
        reason = f"{hits} of {len(verdicts)} context sentences relevant to the question (local judge, threshold {threshold:.2f})"
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))

    async def _answer_cosine(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        q_vec, a_vec = await self._embed_groups([[sample.question.strip()], [str(sample.answer).strip()]])
        cos = float(q_vec[0] @ a_vec[0])
        value = min(1.0, max(0.0, cos))
        verdicts = [{"variant": ANSWER_RELEVANCY_VARIANT, "cosine": _r(cos), "value": _r(value),
                     "reason": f"cosine(question, answer) = {cos:.2f}, clipped to [0, 1]"}]  # fmt: skip
        reason = (f"local variant of answer relevancy: cosine of question and answer = {value:.2f} "
                  "(no generated questions, no noncommittal check)")  # fmt: skip
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))
