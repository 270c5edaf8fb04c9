"""Questions split into a selection half and a confirmation half: seeded, and stratified by question kind.

Why hold half out: the configuration with the best score on some questions is, in part, the one that got lucky
on them; scoring it again on questions the choice never saw gives an unbiased figure, and the drop between the
two is the winner's curse. Stratifying keeps each kind of question (factoid, multi-hop, unanswerable, ...) in
the same proportion in both halves, so a kind that is easy for one retriever cannot fall mostly in one half.
Within each stratum the questions are shuffled by a generator seeded with (seed, stratum), and the first
round(share * n) go to selection, so a stratum's split does not change when another stratum gains a question.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragmetrics.errors import ConfigError

__all__ = ["Split", "relevant_strata", "split_questions"]


@dataclass(frozen=True)
class Split:
    """The two halves (each in a seeded random order: the order selection questions are scored in)."""

    selection: tuple[str, ...]
    confirmation: tuple[str, ...]
    strata: dict[str, str]
    """Question id -> its stratum."""
    strata_source: str
    """Where the strata came from: a column name, 'relevant documents', or 'none'."""

    def counts(self) -> dict[str, tuple[int, int]]:
        """Stratum -> (selection, confirmation) question counts."""
        chosen = set(self.selection)
        out: dict[str, list[int]] = {}
        for qid, stratum in self.strata.items():
            out.setdefault(stratum, [0, 0])[0 if qid in chosen else 1] += 1
        return {s: (a, b) for s, (a, b) in sorted(out.items())}


def _stream(seed: int, stratum: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}\x1f{stratum}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def relevant_strata(
    relevance: Mapping[str, Mapping[str, int]], question_ids: Sequence[str]
) -> dict[str, str]:
    """A stratum per question from its number of relevant documents (grade >= 1): '0', '1', '2', '3+'.

    The fallback for collections without a question kind (the built-in one, CISI): how many documents answer
    a question is what separates single-passage from multi-passage questions, the kinds a test-set builder
    writes."""
    out: dict[str, str] = {}
    for qid in question_ids:
        n = sum(1 for grade in relevance.get(qid, {}).values() if grade >= 1)
        out[qid] = str(n) if n < 3 else "3+"
    return out


def split_questions(
    question_ids: Sequence[str], strata: Mapping[str, str], *, seed: int, share: float, source: str
) -> Split:
    """Split `question_ids` per stratum: round(share * n) of each stratum to selection (at least one question to
    each half when the stratum has two or more), the rest to confirmation."""
    if not 0.0 < share < 1.0:
        raise ConfigError(f"sweep.split.selection_share must lie in (0, 1), got {share}")
    if len(set(question_ids)) != len(question_ids):
        raise ConfigError("sweep: question ids must be unique to be split")
    if len(question_ids) < 4:
        raise ConfigError(
            f"sweep: {len(question_ids)} questions cannot be split into two halves worth comparing"
        )
    missing = [q for q in question_ids if q not in strata]
    if missing:
        raise ConfigError(f"sweep.split.strata: question {missing[0]!r} has no stratum")
    groups: dict[str, list[str]] = {}
    for qid in sorted(question_ids):
        groups.setdefault(strata[qid], []).append(qid)
    selection: list[str] = []
    confirmation: list[str] = []
    for stratum, members in sorted(groups.items()):
        order = [members[i] for i in _stream(seed, stratum).permutation(len(members))]
        take = int(np.floor(share * len(order) + 0.5))
        if len(order) >= 2:
            take = min(max(take, 1), len(order) - 1)
        selection.extend(order[:take])
        confirmation.extend(order[take:])
    mix = _stream(seed, "\x00order")
    selection = [selection[i] for i in mix.permutation(len(selection))]
    confirmation = [confirmation[i] for i in mix.permutation(len(confirmation))]
    return Split(tuple(selection), tuple(confirmation), {q: strata[q] for q in question_ids}, source)
