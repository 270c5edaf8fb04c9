"""The local judge's models: one profile per embedding model (its batching embedder, thresholds, fitted verdict
models, background vectors), which model judges a sample, and one embedder call per unit.

Why its own module: the verdict handlers (`local_statements`, `local_relevance`) all embed through the same
profiles; `LocalJudgeBase` holds that shared state and `LocalJudge` (`local`) builds it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import JudgeError
from ragmetrics.judge.backends._dispatch import PlanDispatch
from ragmetrics.judge.backends.local_model import FittedModel, background_texts, fitted_thresholds, models_for
from ragmetrics.judge.backends.local_thresholds import VERDICT_KINDS, LocalThresholds, VerdictKind
from ragmetrics.judge.base import Embedder, RagSample
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.embedding_batch import BatchingEmbedder
from ragmetrics.judge.embedding_store import StoredEmbedder
from ragmetrics.judge.registry import JudgeMetricSpec
from ragmetrics.judge.text.sentences import split_sentences

__all__ = ["LOCAL_MODELS", "LocalJudgeBase", "LocalModel"]


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


class LocalJudgeBase(PlanDispatch):
    """What every verdict handler of the local judge shares: the profiles, the cache, the failures and which
    model judged which sample (set by `LocalJudge.__init__`)."""

    _cache: VerdictCache | None
    _given_thresholds: LocalThresholds | None
    _model: str
    _profiles: dict[str, _Profile]
    _failures: int
    _used: dict[str, set[str]]

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

    @staticmethod
    def _context_sentences(sample: RagSample) -> list[tuple[int, int, str]]:
        return [
            (k, i, s)
            for k, chunk in enumerate(sample.context_list)
            for i, s in enumerate(split_sentences(chunk, sample.language))
        ]
