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

from ragmetrics.errors import JudgeError, NotApplicable
from ragmetrics.judge import formulas
from ragmetrics.judge.backends._dispatch import Handler, PlanDispatch
from ragmetrics.judge.backends.local_model import (
    ANSWER_FEATURES,
    FittedModel,
    answer_features,
    background_texts,
    fitted_thresholds,
    model_provenance,
    models_for,
    sentence_features,
)
from ragmetrics.judge.backends.local_thresholds import (  # their home before 0.3; still imported from here
    CALIBRATED_KINDS as CALIBRATED_KINDS,
)
from ragmetrics.judge.backends.local_thresholds import (
    VERDICT_KINDS,
    LocalThresholds,
    VerdictKind,
)
from ragmetrics.judge.base import Embedder, MetricOutcome, RagSample, target_statements
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.claim_outcome import JudgedClaim, claim_inputs, claim_outcome
from ragmetrics.judge.embedding_batch import BatchingEmbedder
from ragmetrics.judge.embedding_store import StoredEmbedder
from ragmetrics.judge.registry import JudgeMetricSpec, Plan, judge_metric_names
from ragmetrics.judge.text.sentences import split_sentences, split_statements
from ragmetrics.judge.text.signals import content_units, coverage
from ragmetrics.judge.text.support import (
    conflicts,
    covers,
    disagreements,
    grounded_share,
    joint_support,
    numbers_in,
    resolve_pronoun,
    starts_with_pronoun,
)
from ragmetrics.schema import CacheStats, JudgeDetail, JudgeInfo

BACKEND = "local"
ANSWER_RELEVANCY_VARIANT = "local_cosine"
FITTED_ANSWER_VARIANT = "local_fitted"


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


def window_cosines(
    vectors: NDArray[np.float32], pairs: Sequence[tuple[int, int]], query: NDArray[np.float32]
) -> list[float]:
    """Cosine of `query` with each two-sentence window, the window's vector being the normalised sum of its
    sentences' unit vectors.

    Why not embed the joined text: it would cost twice the tokens of the sentences themselves (every sentence
    sits in two windows), two thirds of a relevance run's model time, and on the public relevance labels the
    sum grades as well (benchmarks/bench_judge_agreement.py, 200 items a set: TREC DL 2019 passage/context
    relevance 0.761/0.708 embedded, 0.765/0.706 summed; MS MARCO 0.575/0.550 and 0.589/0.565; XQuAD en
    0.946/0.886 and 0.944/0.878). By linearity the cosine is (cos_a + cos_b) / |u_a + u_b|.
    """
    if not pairs:
        return []
    left = np.asarray([a for a, _ in pairs])
    right = np.asarray([b for _, b in pairs])
    summed = vectors[left] + vectors[right]
    norms = np.maximum(np.linalg.norm(summed, axis=1), 1e-12)
    cosines: list[float] = ((summed @ query) / norms).tolist()
    return cosines


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


CONTAINED_SHARE = 0.8
"""Context precision / utilization: a chunk holding this share of the target's content words and numbers is
useful whatever its cosine (a bare-entity reference such as '1989' is far from every sentence)."""

GRADE_CUTS: tuple[float, ...] = (0.4, 0.5, 0.65)
"""Passage relevance grades 1, 2 and 3 start at these lifts (`lift`); a context sentence is relevant from grade
2's. Chosen on public labels (benchmarks/bench_judge_agreement.py: TREC DL 2019, MS MARCO, XQuAD, JSQuAD, lifts of
both bundled models): leaving any one set out picks the same cuts from the rest (docs/local_judge.md)."""


SUPPORTED_SHARE = 0.8
"""Faithfulness, context recall and answer correctness: a statement whose words and numbers one passage holds
to this share is supported below the cosine threshold, unless something in it conflicts."""

REWORDING_COSINE = 0.9
"""Answer correctness: statements this close are a rewording, so a word swapped for another ("finished" for
"completed") is not a disagreement; numbers, names and polarity are still checked."""

WEAK_MARGIN = 0.05
"""A verdict within this much of its threshold, not backed by the passage's words, says its evidence is weak."""


FITTED_GRADE_CUTS: tuple[float, ...] = (0.5, 0.7, 0.85)
"""Passage relevance from a fitted sentence model's probability (multilingual e5): grade 1 from 0.5, 2 from 0.7,
3 from 0.85."""

LIFT_MODELS: frozenset[str] = frozenset({"all-MiniLM-L6-v2-onnx-int8"})
"""Bundled models whose relevance verdicts use the lift over background with windows. Chosen per model on public
labels: for MiniLM the lift beats its fitted sentence model on every set (TREC DL 2019 0.683 -> 0.765 passage
relevance, 0.635 -> 0.706 context relevancy; MS MARCO; XQuAD English), while multilingual e5's fitted model
stays ahead on XQuAD and JSQuAD in other languages (context relevancy 0.80-0.96 against 0.74-0.89 by the lift)."""


@dataclass(frozen=True)
class RelevanceScale:
    """Per context sentence, the score relevance is decided on; the grade cuts and the cut for 'relevant' on
    that score's scale, and its name for reasons."""

    scores: list[float]
    grade_cuts: tuple[float, ...]
    relevant_cut: float
    name: str


def lift(cosine: float, background: float) -> float:
    """How far a text's cosine with the question rises above the question's mean cosine with unrelated text,
    as a share of the way to 1. Raw cosines sit in different ranges per model and language (multilingual e5
    puts unrelated German text near 0.7, MiniLM unrelated English near 0); the lift does not."""
    return (cosine - background) / max(1e-6, 1.0 - background)


def _verdict_kind(spec: JudgeMetricSpec) -> VerdictKind:
    """The thresholded verdict type of a metric: its name, when the local judge calibrates one for it."""
    if spec.name not in VERDICT_KINDS:
        raise JudgeError(
            f"the local judge has no calibrated verdict for {spec.name}", cause="unsupported_metric"
        )
    return spec.name


def _r(x: float) -> float:
    return round(x, 4)


LocalModel = Literal["auto", "minilm", "e5"]
LOCAL_MODELS: tuple[LocalModel, ...] = ("auto", "minilm", "e5")


@dataclass
class _Profile:
    """One embedding model with what the judge decides by on its cosines."""

    embedder: BatchingEmbedder
    thresholds: LocalThresholds
    models: dict[str, FittedModel] | None
    background: NDArray[np.float32] | None = None

    @property
    def name(self) -> str:
        return self.embedder.name


class LocalJudge(PlanDispatch):
    """Judge protocol over an embedder.

    By default (`model="auto"`) English samples are judged with the bundled int8 MiniLM and samples in any
    other language with multilingual-e5-small (see ragmetrics.embeddings), each with thresholds and fitted
    verdict models of its own; a sample's language is `RagSample.language`, else its question's script.
    `model="minilm"` or `"e5"` uses one model for every sample; an explicit `embedder` does too.
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        thresholds: LocalThresholds | None = None,
        *,
        cache: VerdictCache | None = None,
        model: LocalModel = "auto",
    ) -> None:
        if model not in LOCAL_MODELS:
            raise ValueError(f"local model must be one of {LOCAL_MODELS}, not {model!r}")
        self._cache = cache
        self._given_thresholds = thresholds
        self._model = model if embedder is None else "given"
        self._profiles: dict[str, _Profile] = {}
        if embedder is not None:
            self._profiles["given"] = self._make_profile(embedder)
        self._failures = 0
        self._used: dict[str, set[str]] = {}  # model -> ids of the samples it judged

    def _make_profile(self, embedder: Embedder) -> _Profile:
        if self._cache is not None and self._cache.enabled:
            # Vectors, not verdicts, are what cost time here; stored, a rerun never runs the model again.
            from ragmetrics.embeddings.seeds import seed_vectors

            embedder = StoredEmbedder(embedder, self._cache, seeds=seed_vectors(embedder.name))
        thresholds = self._given_thresholds or fitted_thresholds(embedder.name) or LocalThresholds()
        # Units in flight each ask for a few texts; one model call (and one cache transaction) serves them all.
        return _Profile(BatchingEmbedder(embedder), thresholds, models_for(embedder.name))

    def _profile_named(self, key: str) -> _Profile:
        profile = self._profiles.get(key)
        if profile is None:
            if key == "e5":
                from ragmetrics.embeddings.e5 import E5Embedder

                profile = self._make_profile(E5Embedder())
            else:
                from ragmetrics.embeddings.minilm import MiniLMEmbedder

                profile = self._make_profile(MiniLMEmbedder())
            self._profiles[key] = profile
        return profile

    def _profile(self, sample: RagSample) -> _Profile:
        """The model a sample is judged with (class doc)."""
        if self._model == "given":
            key = "given"
        elif self._model == "auto":
            key = "minilm" if sample.question_language.split("-")[0] == "en" else "e5"
        else:
            key = self._model
        profile = self._profile_named(key)
        self._used.setdefault(profile.name, set()).add(sample.id)
        return profile

    async def _background(self, profile: _Profile) -> NDArray[np.float32]:
        if profile.background is None:
            (vectors,) = await self._embed_groups(profile, [list(background_texts())])
            profile.background = vectors
        return profile.background

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
        """The thresholds of the English model (or of the given embedder)."""
        return self._profile_named("given" if self._model == "given" else self._default_key).thresholds

    @property
    def _default_key(self) -> str:
        return "e5" if self._model == "e5" else "minilm"

    def supported_metrics(self) -> tuple[str, ...]:
        return judge_metric_names()

    def info(self) -> JudgeInfo:
        profiles = list(self._profiles.values()) or [self._profile_named(self._default_key)]
        names = [p.name for p in profiles]
        return JudgeInfo(
            backend=BACKEND,
            model=" + ".join(names),
            embedding_model=" + ".join(names),
            settings={
                "note": "built-in local judge: verdicts by embedding similarity and lexical signals, not by "
                "an LLM",
                "local_model": self._model,
                "samples_per_model": {name: len(ids) for name, ids in self._used.items()},
                "thresholds": {p.name: asdict(p.thresholds) for p in profiles},
                "fitted_verdicts": {
                    p.name: model_provenance(p.name) if p.models is not None else "none: cosine thresholds"
                    for p in profiles
                },
                "answer_relevancy": {
                    p.name: (
                        f"{FITTED_ANSWER_VARIANT}: probability the answer addresses the question, from a "
                        "fitted model (cosines, word overlap, novelty, refusal, hedging); not the "
                        "generated-question method"
                        if p.models is not None
                        else f"{ANSWER_RELEVANCY_VARIANT}: cosine(question, answer) clipped to [0, 1]"
                    )
                    for p in profiles
                },
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
            "graded_relevance": self._graded_relevance,
            "question_generation": self._answer_relevance,
            "embedding_similarity": self._embedding_similarity,
            "statement_classification": self._statement_classification,
            "rubric": self._rubric,
            "claim_entailment": self._claim_entailment,
            "context_sufficiency": self._context_sufficiency,
        }

    async def _claim_entailment(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """The weaker variant of the claim matrix: a claim counts as entailed by a chunk (or by the other
        answer) when its best cosine with a sentence there reaches faithfulness's threshold and no number
        or name in the claim conflicts with that text. Similarity is not entailment: a claim that changes a
        detail the checks do not catch still counts as entailed, so the LLM judge's matrix is the one to
        act on, and the detail says which judge built it."""
        inputs = claim_inputs(sample)
        profile = self._profile(sample)
        threshold = profile.thresholds.faithfulness
        sentences = self._context_sentences(sample)
        answer_statements = inputs.answer_claims
        a_vecs, r_vecs, s_vecs = await self._embed_groups(
            profile, [answer_statements, inputs.reference_claims, [s for _, _, s in sentences]]
        )
        language = sample.language or sample.question_language
        chunks = sample.context_list

        def judged(claim: str, vec: NDArray[np.float32], others: list[str], other_vecs: NDArray[np.float32],
                   other_text: str, other_name: str) -> JudgedClaim:  # fmt: skip
            match = best_match(vec[None, :], other_vecs)
            in_other = (
                match is not None
                and match.cosine >= threshold
                and not conflicts(claim, other_text, others[match.right], language, sample.question)
            )
            entailing: list[int] = []
            best_by_chunk: dict[int, tuple[float, str]] = {}
            for (k, _, sentence), cosine in zip(sentences, (s_vecs @ vec).tolist() if len(sentences) else [],
                                                strict=True):  # fmt: skip
                if k not in best_by_chunk or cosine > best_by_chunk[k][0]:
                    best_by_chunk[k] = (cosine, sentence)
            for k, (cosine, sentence) in sorted(best_by_chunk.items()):
                if cosine >= threshold and not conflicts(
                    claim, chunks[k], sentence, language, sample.question
                ):
                    entailing.append(k)
            if not entailing:  # the chunks together, each part of the claim from one of them
                entailing = joint_support(claim, chunks, language, sample.question) or []
            cos = "none" if match is None else f"{match.cosine:.2f}"
            reason = (f"best cosine with the {other_name} {cos} ({'>=' if in_other else 'below or conflicting with'} "
                      f"{threshold:.2f}); chunks at or above it: {', '.join(str(k + 1) for k in entailing) or 'none'}")  # fmt: skip
            return JudgedClaim(bool(in_other), entailing, reason)

        answer = [
            judged(c, a_vecs[i], inputs.reference_claims, r_vecs, str(sample.reference), "reference")
            for i, c in enumerate(answer_statements)
        ]
        reference = [
            judged(c, r_vecs[j], answer_statements, a_vecs, str(sample.answer or ""), "answer")
            for j, c in enumerate(inputs.reference_claims)
        ]
        return claim_outcome(spec, sample, inputs, answer, reference, cached=False, judge="local")

    async def _rubric(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """Not applicable, never a number: similarity of embeddings cannot read a team's criterion."""
        raise NotApplicable(
            f"{spec.name} is a rubric metric: it needs an LLM judge (judge.backend: openai); the local judge "
            "compares embeddings and cannot read a criterion"
        )

    async def _embedding_similarity(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        a_vec, r_vec = await self._embed_groups(
            self._profile(sample), [[str(sample.answer).strip()], [str(sample.reference).strip()]]
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
        """Answer statements against the reference's and back: a statement is present on the other side when
        its best cosine there reaches the threshold, or the other side holds nearly all its words and numbers
        (`SUPPORTED_SHARE`), and nothing in it conflicts with the other side (`text.support.conflicts`:
        numbers, names, polarity, words it adds). Faithfulness's checks, so "2 billion" is not "4.6 billion"
        here either."""
        threshold = spec.local_threshold or 0.0
        answer_text, reference_text = str(sample.answer), str(sample.reference)
        # A statement that leans on a pronoun is read with the question's subject in its place (resolve_pronoun).
        answer_statements = [
            resolve_pronoun(st, sample.question) for st in split_statements(answer_text, sample.language)
        ]
        reference_statements = [
            resolve_pronoun(st, sample.question) for st in split_statements(reference_text, sample.language)
        ]
        if not reference_statements:
            raise JudgeError(
                f"sample {sample.id!r}: the reference contains no statements", cause="missing_field"
            )
        a_vecs, r_vecs, whole_a, whole_r = await self._embed_groups(
            self._profile(sample),
            [answer_statements, reference_statements, [answer_text.strip()], [reference_text.strip()]],
        )
        language = sample.language or sample.question_language
        question = sample.question

        def present(statement: str, vec: NDArray[np.float32], other: NDArray[np.float32], other_text: str,
                    other_statements: list[str]) -> tuple[bool, float | None, list[str]]:  # fmt: skip
            match = best_match(vec[None, :], other) if len(other) else None
            similar = match is not None and match.cosine >= threshold
            if not similar and not covers(statement, other_text, language, question):
                return False, None if match is None else match.cosine, []
            # Compared with the other side's closest statement: the rest of it says other things.
            closest = other_statements[match.right] if similar and match is not None else other_text
            rewording = match is not None and match.cosine >= REWORDING_COSINE
            found = disagreements(statement, closest, language, question, rewording=rewording)
            return not found, None if match is None else match.cosine, [str(c) for c in found]

        verdicts: list[dict[str, Any]] = []
        tp = fp = 0
        for n, statement in enumerate(answer_statements):
            hit, cosine, found = present(statement, a_vecs[n], r_vecs, reference_text, reference_statements)
            tp, fp = (tp + 1, fp) if hit else (tp, fp + 1)
            verdicts.append({"side": "answer", "statement": statement, "verdict": hit,
                             "class": "TP" if hit else "FP", "cosine": None if cosine is None else _r(cosine),
                             **({"conflicts": found} if found else {})})  # fmt: skip
        fn = 0
        for n, statement in enumerate(reference_statements):
            hit, cosine, found = present(statement, r_vecs[n], a_vecs, answer_text, answer_statements)
            fn += 0 if hit else 1
            verdicts.append({"side": "reference", "statement": statement, "verdict": hit,
                             "class": None if hit else "FN", "cosine": None if cosine is None else _r(cosine),
                             **({"conflicts": found} if found else {})})  # fmt: skip
        similarity = formulas.answer_similarity_score(whole_a[0].tolist(), whole_r[0].tolist())
        value = spec.score(tp, fp, fn, similarity)
        reason = (f"TP {tp}, FP {fp}, FN {fn} (local judge, threshold {threshold:.2f}, with number, name and "
                  f"polarity checks): F1 {formulas.statement_f1(tp, fp, fn):.4f}; similarity {similarity:.4f}")  # fmt: skip
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))

    async def _embed_groups(self, profile: _Profile, groups: list[list[str]]) -> list[NDArray[np.float32]]:
        """One embedder call for all groups, split back per group.

        Only the embedder's own errors become `embedder_error`: a bug in this module should surface as one
        (evaluate_rag records it as `internal_error` with a logged traceback), not pass for an embedder fault.
        A short or ragged answer is an error too, since slicing it would silently shorten a group.
        """
        flat = [t for g in groups for t in g]
        if not flat:
            return [np.zeros((0, 0), dtype=np.float32) for _ in groups]
        try:
            vectors = await profile.embedder.embed(flat)
        except JudgeError:
            raise
        except Exception as exc:  # a pluggable embedder may raise anything
            raise JudgeError(
                f"embedder {profile.name!r} failed: {type(exc).__name__}: {exc}",
                cause="embedder_error",
            ) from exc
        if vectors.ndim != 2 or vectors.shape[0] != len(flat):
            raise JudgeError(
                f"embedder {profile.name!r} returned shape {vectors.shape} for {len(flat)} texts",
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
        profile = self._profile(sample)
        threshold = profile.thresholds.for_kind(kind)
        against = str(spec.target)
        target = str(getattr(sample, against))
        target_units = units(kind, "b", target, sample.language)
        if not target_units:  # otherwise every chunk would read as "empty chunk" and score 0
            raise JudgeError(
                f"sample {sample.id!r}: the {against} contains no sentences", cause="missing_field"
            )
        chunk_units = [units(kind, "a", chunk, sample.language) for chunk in sample.context_list]
        target_vecs, *chunk_vecs = await self._embed_groups(profile, [target_units, *chunk_units])
        # A short target (a bare name, date or figure) is far from any sentence in embedding space; a chunk
        # that holds nearly all of the target's words and numbers bears it out whatever the cosine says.
        target_words = content_units(target)
        verdicts: list[dict[str, Any]] = []
        for k, vecs in enumerate(chunk_vecs):
            match = best_match(vecs, target_vecs)
            if match is None:
                verdicts.append({"chunk": k, "verdict": False, "cosine": None, "reason": "empty chunk"})
                continue
            contained = coverage(target_words, content_units(sample.context_list[k]))
            useful = match.cosine >= threshold or contained >= CONTAINED_SHARE
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
                "contained": _r(contained),
                "reason": f"best cosine {match.cosine:.2f} {'>=' if match.cosine >= threshold else '<'} "
                f"{threshold:.2f} between sentence {match.left + 1} of chunk {k + 1} and {where}; chunk "
                f"holds {contained:.0%} of the {against}'s words",
            })  # fmt: skip
        value = spec.score([v["verdict"] for v in verdicts])
        useful_count = sum(1 for v in verdicts if v["verdict"])
        reason = f"{useful_count} of {len(verdicts)} chunks useful for the {against} (local judge, threshold {threshold:.2f})"
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))

    @staticmethod
    def _context_sentences(sample: RagSample) -> list[tuple[int, int, str]]:
        return [
            (k, i, s)
            for k, chunk in enumerate(sample.context_list)
            for i, s in enumerate(split_sentences(chunk, sample.language))
        ]

    async def _statement_attribution(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """Each statement is supported when its best cosine with a context sentence reaches the threshold and
        nothing in it conflicts with that sentence's chunk (`text.support.conflicts`: numbers, names,
        polarity, words it adds), or, below the threshold, when one chunk holds nearly all its words and
        numbers (`SUPPORTED_SHARE`) with no conflict: a terse answer is far from every sentence in embedding
        space. A statement that starts with a pronoun is also read after the question ("What does nonlocal
        do? It rebinds ..."), since alone it has lost its subject; the better cosine counts. One that no chunk
        supports alone is supported when the chunks together do, each of its parts by one chunk
        (`text.support.joint_support`); its verdict then lists them as `chunks`. (An answer copied across
        chunk boundaries never gets here as one statement: `target_statements` cuts it where the copies meet.)"""
        profile = self._profile(sample)
        threshold = profile.thresholds.for_kind(_verdict_kind(spec))
        target_field = str(spec.target)
        statements = target_statements(spec, sample)  # as in the LLM judge: never a 0 over no statements
        sentences = self._context_sentences(sample)
        question = sample.question.strip()
        leaning = [n for n, st in enumerate(statements) if starts_with_pronoun(st)]
        stmt_vecs, sent_vecs, read_after_question = await self._embed_groups(
            profile,
            [statements, [s for _, _, s in sentences], [f"{question} {statements[n]}" for n in leaning]],
        )
        chunks = sample.context_list
        language = sample.language or sample.question_language
        # What an answer adds must be in the context (faithfulness); a reference is people's own wording of
        # the fact, so for context recall only its numbers, names and polarity are checked.
        answer_side = target_field == "answer"
        verdicts: list[dict[str, Any]] = []
        for n, statement in enumerate(statements):
            match = best_match(stmt_vecs[n : n + 1], sent_vecs)
            if match is None:
                verdicts.append({"statement": statement, "verdict": False, "cosine": None,
                                 "reason": "the context has no sentences"})  # fmt: skip
                continue
            if n in leaning:
                alt = best_match(read_after_question[leaning.index(n) : leaning.index(n) + 1], sent_vecs)
                if alt is not None and alt.cosine > match.cosine:
                    match = alt
            chunk, index, best = sentences[match.right]
            similar = match.cosine >= threshold
            held, held_chunk = max(
                (grounded_share(statement, text, language), k) for k, text in enumerate(chunks)
            )
            if not similar and held >= SUPPORTED_SHARE:
                chunk, index, best = held_chunk, -1, chunks[held_chunk]
            # Numbers and names are looked for in the whole chunk of the best sentence: in documentation a
            # detail is often stated sentences away from the sentence most like the statement.
            checked = similar or held >= SUPPORTED_SHARE
            found = (
                conflicts(statement, chunks[chunk], best, language, question, additions=answer_side)
                if checked
                else []
            )
            attributed = checked and not found
            together = (
                None
                if attributed
                else joint_support(statement, chunks, language, question, additions=answer_side)
            )
            if together is not None:
                attributed, found, chunk, index = True, [], together[0], -1
                reason = (f"no one chunk holds it, but chunks {', '.join(str(k + 1) for k in together)} "
                          "together do, each part without conflict")  # fmt: skip
            elif similar:
                reason = (f"best cosine {match.cosine:.2f} >= {threshold:.2f} with sentence {index + 1} of "
                          f"chunk {chunk + 1}")  # fmt: skip
            elif checked:
                reason = (f"best cosine {match.cosine:.2f} < {threshold:.2f}, but chunk {chunk + 1} holds "
                          f"{held:.0%} of its words and numbers")  # fmt: skip
            else:
                reason = (f"best cosine {match.cosine:.2f} < {threshold:.2f} with sentence {index + 1} of chunk "
                          f"{chunk + 1}, and no chunk holds most of its words (at most {held:.0%})")  # fmt: skip
            if found:
                reason += "; but " + "; ".join(str(c) for c in found)
            elif attributed and match.cosine < threshold + WEAK_MARGIN and held < SUPPORTED_SHARE:
                reason += "; weak evidence: close to the threshold and few of its words in the chunk"
            verdicts.append({
                "statement": statement,
                "verdict": attributed,
                "cosine": _r(match.cosine),
                "chunk": chunk,
                "sentence_index": index,
                "held": _r(held),
                **({"chunks": together} if together is not None else {}),
                **({"conflicts": [str(c) for c in found]} if found else {}),
                "reason": reason,
            })  # fmt: skip
        value = spec.score([v["verdict"] for v in verdicts])
        hits = sum(1 for v in verdicts if v["verdict"])
        how = "supported by" if spec.verdict_flag == "supported" else "attributed to"
        reason = f"{hits} of {len(verdicts)} {target_field} statements {how} the context (local judge, threshold {threshold:.2f})"
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))

    async def _relevance_scores(
        self, profile: _Profile, sample: RagSample
    ) -> tuple[list[tuple[int, int, str]], list[float], RelevanceScale]:
        """Every context sentence with its cosine to the question, and the scale relevance is decided on.

        With MiniLM (`LIFT_MODELS`) the score is the lift (`lift`) of the sentence or of a two-sentence window
        holding it (`window_cosines`; windows never span two chunks), whichever is higher: a window lets a
        sentence that continues the answering one count with it, and the lift is on one scale whatever the
        question. With multilingual e5 it is the probability of
        its fitted sentence model. With an embedder of your own, whose scale nobody has calibrated, it is the
        sentence's cosine, relevant from your `context_relevancy` threshold, which is also where grade 2
        starts.
        """
        sentences = self._context_sentences(sample)
        if not sentences:
            raise JudgeError(
                f"sample {sample.id!r}: the contexts contain no sentences", cause="missing_field"
            )
        question = sample.question.strip()
        texts = [s for _, _, s in sentences]
        if profile.models is None or profile.name not in LIFT_MODELS:
            q_vec, sent_vecs = await self._embed_groups(profile, [[question], texts])
            cosines = (sent_vecs @ q_vec[0]).tolist()
            if profile.models is None:
                threshold = profile.thresholds.context_relevancy
                cuts = tuple(c - GRADE_CUTS[1] + threshold for c in GRADE_CUTS)
                return sentences, cosines, RelevanceScale(cosines, cuts, threshold, "cosine")
            model = profile.models["context_relevancy"]
            background = float((await self._background(profile) @ q_vec[0]).mean())
            features = sentence_features(
                question, q_vec[0], background, texts, sent_vecs, [k for k, _, _ in sentences],
                list(sample.context_list),
            )  # fmt: skip
            scale = RelevanceScale(
                model.probability(features).tolist(), FITTED_GRADE_CUTS, model.threshold, "P(relevant)"
            )
            return sentences, cosines, scale
        q_vec, sent_vecs = await self._embed_groups(profile, [[question], texts])
        background = float((await self._background(profile) @ q_vec[0]).mean())
        cosines = (sent_vecs @ q_vec[0]).tolist()
        best = list(cosines)
        pairs = [(n, n + 1) for n in range(len(sentences) - 1) if sentences[n][0] == sentences[n + 1][0]]
        for (a, b), cos in zip(pairs, window_cosines(sent_vecs, pairs, q_vec[0]), strict=True):
            best[a], best[b] = max(best[a], cos), max(best[b], cos)
        lifts = [lift(c, background) for c in best]
        return sentences, cosines, RelevanceScale(lifts, GRADE_CUTS, GRADE_CUTS[1], "lift over background")

    async def _sentence_relevance(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """A sentence is relevant when its score reaches the scale's cut (`_relevance_scores`); with the lift,
        grade 2 of passage relevance: it answers the question at least in part."""
        profile = self._profile(sample)
        sentences, cosines, scale = await self._relevance_scores(profile, sample)
        cut, how = scale.relevant_cut, scale.name
        verdicts: list[dict[str, Any]] = []
        for (chunk, index, sentence), cos, score in zip(sentences, cosines, scale.scores, strict=True):
            relevant = score >= cut
            verdicts.append({
                "chunk": chunk,
                "sentence_index": index,
                "sentence": sentence,
                "verdict": relevant,
                "cosine": _r(cos),
                "score": _r(score),
                "reason": f"sentence {index + 1} of chunk {chunk + 1}: {how} {score:.2f} "
                f"{'>=' if relevant else '<'} {cut:.2f}",
            })  # fmt: skip
        value = spec.score([v["verdict"] for v in verdicts])
        hits = sum(1 for v in verdicts if v["verdict"])
        reason = (f"{hits} of {len(verdicts)} context sentences relevant to the question (local judge, "
                  f"{profile.name}, {how} >= {cut:.2f})")  # fmt: skip
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))

    async def _graded_relevance(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """Each context graded 0-3 by its best sentence or window (`_relevance_scores`), so a long passage is
        judged by the part that answers, not by the share of such parts; the value is the best grade / 3, as
        for the LLM judge."""
        profile = self._profile(sample)
        sentences, _, scale = await self._relevance_scores(profile, sample)
        cuts, how = scale.grade_cuts, scale.name
        best_of: dict[int, tuple[float, int]] = {}
        for (chunk, index, _), score in zip(sentences, scale.scores, strict=True):
            if chunk not in best_of or score > best_of[chunk][0]:
                best_of[chunk] = (score, index)
        verdicts: list[dict[str, Any]] = []
        for chunk in range(len(sample.context_list)):
            best, index = best_of.get(chunk, (-1.0, -1))
            grade = sum(best >= cut for cut in cuts)
            verdicts.append({
                "chunk": chunk,
                "grade": grade,
                "score": _r(best),
                "reason": f"best at sentence {index + 1}: {how} {best:.2f}, grade {grade} of 3 (cuts "
                f"{', '.join(f'{c:.2f}' for c in cuts)}; local judge)",
            })  # fmt: skip
        top = max(verdicts, key=lambda v: v["grade"])
        reason = f"best grade {top['grade']} of 3 (chunk {top['chunk'] + 1}; local judge)"
        return MetricOutcome(
            value=spec.score(top["grade"]), detail=JudgeDetail(verdicts=verdicts, reason=reason)
        )

    async def _context_sufficiency(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """A PROXY for the paper's rater, labelled so in every verdict: the contexts are pooled (a multi-hop
        answer joins several) and called sufficient when they contain the threshold share of the question's
        content words and every number the question states. Overlap cannot tell whether the asked fact is
        there ("How tall is X?" over a passage about X's history passes), so it errs towards sufficient on
        on-topic contexts; the LLM judge is the one to act on, and reports say which judge rated."""
        question = sample.question.strip()
        asked = content_units(question)
        if not asked:
            raise NotApplicable(
                f"sample {sample.id!r}: the question has no content words for the local sufficiency proxy"
            )
        pooled = "\n".join(sample.context_list)
        covered = coverage(asked, content_units(pooled))
        missing_numbers = sorted(numbers_in(question) - numbers_in(pooled))
        cut = spec.local_threshold if spec.local_threshold is not None else 1.0
        sufficient = covered >= cut and not missing_numbers
        said = "sufficient" if sufficient else "insufficient"
        why = f"{covered:.2f} of the question's content words in the contexts (cut {cut:.2f})"
        if missing_numbers:
            why += f"; number(s) {', '.join(missing_numbers)} of the question missing"
        verdicts = [{"sufficient": sufficient, "coverage": _r(covered), "missing_numbers": missing_numbers,
                     "variant": "proxy", "reason": f"local proxy: {why}"}]  # fmt: skip
        return MetricOutcome(
            value=spec.score(sufficient),
            detail=JudgeDetail(
                verdicts=verdicts,
                reason=f"context {said} by the local PROXY (word coverage, not the paper's rater): {why}",
            ),
        )

    async def _answer_relevance(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        profile = self._profile(sample)
        question = sample.question.strip()
        # "It rebinds a variable ..." answers "What does nonlocal do?" about nonlocal: the pronoun stands for
        # the question's subject, so the signals are read with the question's content words in its place.
        answer = resolve_pronoun(str(sample.answer).strip(), question)
        statements = split_statements(answer, sample.language) or [answer]
        q_vec, a_vec, st_vecs = await self._embed_groups(profile, [[question], [answer], statements])
        cos = float(q_vec[0] @ a_vec[0])
        model = profile.models["answer_relevancy"] if profile.models is not None else None
        if model is None:
            value = min(1.0, max(0.0, cos))
            verdicts = [{"variant": ANSWER_RELEVANCY_VARIANT, "cosine": _r(cos), "value": _r(value),
                         "reason": f"cosine(question, answer) = {cos:.2f}, clipped to [0, 1]"}]  # fmt: skip
            reason = (f"local variant of answer relevancy: cosine of question and answer = {value:.2f} "
                      "(no generated questions, no noncommittal check)")  # fmt: skip
            return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))
        bg_vecs = await self._background(profile)
        background, answer_background = float((bg_vecs @ q_vec[0]).mean()), float((bg_vecs @ a_vec[0]).mean())
        features = answer_features(
            question, answer, statements, q_vec[0], a_vec[0], st_vecs, background, answer_background
        )
        value = float(model.probability(features)[0])
        named = dict(zip(ANSWER_FEATURES, features[0].tolist(), strict=True))
        verdicts = [{
            "variant": FITTED_ANSWER_VARIANT,
            "value": _r(value),
            "cosine": _r(cos),
            "signals": {k: _r(v) for k, v in named.items()},
            "reason": f"P(the answer addresses the question) = {value:.2f} from cosine {cos:.2f}, "
            f"question words covered {named['question_coverage']:.2f}, new words {named['novelty']:.2f}"
            + (", a refusal" if named["refusal"] else "")
            + (f", {named['hedges']:.1f} hedges per statement" if named["hedges"] else ""),
        }]  # fmt: skip
        reason = (f"local variant of answer relevancy ({profile.name}): probability from a fitted model = "
                  f"{value:.2f} (no generated questions)")  # fmt: skip
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))
