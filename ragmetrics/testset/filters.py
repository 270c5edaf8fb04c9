"""The checks a draft question must pass to be kept, each counted with examples in the report.

- `near_duplicate`: its text is too close to a question already kept: cosine of character-trigram counts of
  the lowercased, space-normalised texts (works in every script) at or above `max_similarity`. Kept questions
  are compared with every earlier kept one, so no two kept questions exceed the threshold.
- `copies_chunk`: it lifts its chunk's wording: its content words appear in the chunk as one contiguous run of
  at least `copy_run` words, or it is made almost entirely of one such run. A question lifted from the text
  tests only exact match.
- `not_answered` (a judge check): the judge's `passage_relevance` grade of a source chunk for the question
  is below `min_grade` (every source of a two-chunk question must be at least on topic, and one must answer).
- `unsupported_reference` (a judge check): the judge's `faithfulness` of the reference against the source
  chunks is below `min_support`. Offline references are sentences of their own source, supported by
  construction, so only written references (the LLM's) are checked.
- `answered_anyway` (unanswerable questions, when a pool was judged): a pooled chunk was graded as answering
  the question, so it is not unanswerable.
The judge checks use whichever judge the build has: the LLM judge through its endpoint, or the local judge.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ragmetrics.testset.terms import words

__all__ = ["NearDuplicates", "copies_chunk"]

_DIM = 1 << 12


def _trigram_vector(text: str) -> NDArray[np.float32]:
    norm = " " + re.sub(r"\s+", " ", text.lower()).strip() + " "
    vector = np.zeros(_DIM, dtype=np.float32)
    for i in range(max(1, len(norm) - 2)):
        vector[zlib.crc32(norm[i : i + 3].encode("utf-8")) & (_DIM - 1)] += 1.0
    length = float(np.linalg.norm(vector))
    return vector / length if length else vector


class NearDuplicates:
    """Kept questions' trigram vectors; `check` says which kept question a new one is too close to."""

    def __init__(self, max_similarity: float) -> None:
        self.max_similarity = max_similarity
        self._vectors: list[NDArray[np.float32]] = []
        self._matrix: NDArray[np.float32] | None = None
        self._ids: list[str] = []

    def closest(self, question: str) -> tuple[str | None, float]:
        """The kept question most similar to `question` and the similarity (None, 0.0 when none is kept)."""
        if not self._vectors:
            return None, 0.0
        if self._matrix is None or self._matrix.shape[0] != len(self._vectors):
            self._matrix = np.vstack(self._vectors)
        sims = self._matrix @ _trigram_vector(question)
        best = int(np.argmax(sims))
        return self._ids[best], float(sims[best])

    def add(self, item_id: str, question: str) -> None:
        self._vectors.append(_trigram_vector(question))
        self._ids.append(item_id)

    @staticmethod
    def similarity(a: str, b: str) -> float:
        return float(_trigram_vector(a) @ _trigram_vector(b))


def _longest_common_run(question: Sequence[str], chunk: Sequence[str]) -> int:
    """Length of the longest run of consecutive question words that appears consecutively in the chunk."""
    if not question or not chunk:
        return 0
    positions: dict[str, list[int]] = {}
    for i, word in enumerate(chunk):
        positions.setdefault(word, []).append(i)
    best = 0
    previous: dict[int, int] = {}
    for word in question:
        current: dict[int, int] = {}
        for i in positions.get(word, ()):
            current[i] = previous.get(i - 1, 0) + 1
            best = max(best, current[i])
        previous = current
    return best


def copies_chunk(question: str, chunk_text: str, copy_run: int) -> int | None:
    """The length of the lifted run when `question` copies `chunk_text` (module docstring), else None."""
    q_words = words(question)
    run = _longest_common_run(q_words, words(chunk_text))
    if run >= copy_run or (len(q_words) >= 4 and run >= 0.8 * len(q_words)):
        return run
    return None
