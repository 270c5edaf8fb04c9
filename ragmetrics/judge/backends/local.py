"""The built-in local judge: verdicts by sentence-embedding similarity, offline and deterministic.

It answers the same questions as the LLM judge (is this chunk useful for the reference, is this
reference statement supported by the context, is this context sentence about the question) by
comparing MiniLM embeddings against thresholds calibrated on the labelled set in tests/data (see
docs/local_judge.md). It is a cheap, reproducible proxy, not an LLM's reading: every result says
backend 'local', and answer relevancy is a local variant, cosine(question, answer).
"""

from __future__ import annotations

from dataclasses import asdict

from ragmetrics.errors import NotApplicable
from ragmetrics.judge.backends._dispatch import Handler
from ragmetrics.judge.backends.local_model import model_provenance
from ragmetrics.judge.backends.local_profile import LOCAL_MODELS, LocalJudgeBase, LocalModel, _Profile
from ragmetrics.judge.backends.local_relevance import (
    ANSWER_RELEVANCY_VARIANT,
    FITTED_ANSWER_VARIANT,
    FITTED_GRADE_CUTS,
    GRADE_CUTS,
    LIFT_MODELS,
    RelevanceScale,
    RelevanceVerdicts,
    lift,
)
from ragmetrics.judge.backends.local_similarity import (
    Match,
    best_match,
    pair_similarities,
    units,
    window_cosines,
)
from ragmetrics.judge.backends.local_statements import (
    CONTAINED_SHARE,
    REWORDING_COSINE,
    SUPPORTED_SHARE,
    WEAK_MARGIN,
    StatementVerdicts,
)
from ragmetrics.judge.backends.local_thresholds import (  # their home before 0.3; still imported from here
    CALIBRATED_KINDS as CALIBRATED_KINDS,
)
from ragmetrics.judge.backends.local_thresholds import LocalThresholds
from ragmetrics.judge.backends.local_thresholds import VerdictKind as VerdictKind
from ragmetrics.judge.base import Embedder, MetricOutcome, RagSample
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.registry import JudgeMetricSpec, Plan, judge_metric_names
from ragmetrics.schema import CacheStats, JudgeInfo

__all__ = [  # noqa: RUF022 (in the order they were written, for the API reference)
    "BACKEND",
    "ANSWER_RELEVANCY_VARIANT",
    "FITTED_ANSWER_VARIANT",
    "Match",
    "units",
    "best_match",
    "window_cosines",
    "pair_similarities",
    "CONTAINED_SHARE",
    "GRADE_CUTS",
    "SUPPORTED_SHARE",
    "REWORDING_COSINE",
    "WEAK_MARGIN",
    "FITTED_GRADE_CUTS",
    "LIFT_MODELS",
    "RelevanceScale",
    "lift",
    "LocalModel",
    "LOCAL_MODELS",
    "LocalJudge",
]

BACKEND = "local"


class LocalJudge(StatementVerdicts, RelevanceVerdicts, LocalJudgeBase):
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

    async def _rubric(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """Not applicable, never a number: similarity of embeddings cannot read a team's criterion."""
        raise NotApplicable(
            f"{spec.name} is a rubric metric: it needs an LLM judge (judge.backend: openai); the local judge "
            "compares embeddings and cannot read a criterion"
        )
