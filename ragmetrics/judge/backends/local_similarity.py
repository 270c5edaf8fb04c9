"""The local judge's cosines: which text units a verdict compares, the best-matching pair of them, two-sentence
windows, and the pair similarities calibration reads.

Why its own module: these are the judge's measurements, shared by every verdict and by calibration
(benchmarks/calibrate_local_judge.py), apart from the decisions taken on them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ragmetrics.judge.backends.local_thresholds import VERDICT_KINDS, VerdictKind
from ragmetrics.judge.base import Embedder
from ragmetrics.judge.text.sentences import split_sentences

__all__ = ["Match", "best_match", "pair_similarities", "units", "window_cosines"]


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
