"""Out-of-scope questions worded as the team's own: a target question with one of its terms swapped for
another corpus term that no chunk holds together with the question's most specific remaining term.

An out-of-scope attack must not be told apart from a clean question by its wording: a templated question
("{a} and {b}: how are they related?") among questions people wrote is recognisable, and a system that
refuses templated questions would look safe. Swapping one term of a real question keeps its wording; the
corpus decides that it is unanswerable, by the offline builder's rule (two corpus terms no chunk holds
together). The swapped-in term is drawn among corpus terms of similar document frequency (within a factor
of four), so the question is neither about a term the corpus barely knows nor about a stop-word-like one.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from ragmetrics.attacks.build import Target
from ragmetrics.testset.corpus import Chunk
from ragmetrics.testset.terms import chunk_language, content_terms, term_stem

__all__ = ["reworded_out_of_scope"]


def _index(corpus: Mapping[str, Chunk]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The chunks each term occurs in, and each term stem (`testset.terms.term_stem`: the builder's rule counts
    another form of a term as the term)."""
    postings: dict[str, set[str]] = defaultdict(set)
    stems: dict[str, set[str]] = defaultdict(set)
    for chunk in corpus.values():
        text = f"{chunk.title or ''} {chunk.text}"
        for term in set(content_terms(text, chunk_language(text))):
            postings[term].add(chunk.id)
            stems[term_stem(term)].add(chunk.id)
    return postings, stems


def reworded_out_of_scope(
    targets: Sequence[Target], corpus: Mapping[str, Chunk], count: int, rng: np.random.Generator
) -> list[Target]:
    """Up to `count` unanswerable questions, each a target's question with one term swapped (module
    docstring); fewer when the targets' questions have too few terms to swap."""
    if count <= 0 or not targets:
        return []
    postings, stems = _index(corpus)
    by_frequency = sorted((len(ids), term) for term, ids in postings.items() if len(term) >= 4)
    out: list[Target] = []
    for index in rng.permutation(len(targets)).tolist():
        if len(out) >= count:
            break
        target = targets[int(index)]
        language = target.language or chunk_language(target.question)
        terms = [t for t in dict.fromkeys(content_terms(target.question, language)) if t in postings]
        if len(terms) < 2:
            continue
        terms.sort(key=lambda t: len(postings[t]))
        kept, swapped = terms[0], terms[-1]  # keep the most specific term, swap the commonest
        match = re.search(rf"(?<!\w){re.escape(swapped)}(?!\w)", target.question, re.IGNORECASE)
        if match is None:
            continue
        frequency = len(postings[swapped])
        asked = {term_stem(t) for t in terms}
        candidates = [
            term
            for df, term in by_frequency
            if frequency / 4 <= df <= frequency * 4
            and term_stem(term) not in asked  # another form of a term the question already has is no swap
            and not (stems[term_stem(term)] & stems[term_stem(kept)])
            and term.isalpha()
        ]
        if not candidates:
            continue
        replacement = candidates[int(rng.integers(len(candidates)))]
        if match.group(0)[:1].isupper():
            replacement = replacement[:1].upper() + replacement[1:]
        question = target.question[: match.start()] + replacement + target.question[match.end() :]
        out.append(
            Target(
                id=f"{target.id}~{replacement}",
                question=question,
                reference=None,
                language=language,
                relevant={},
                answerable=False,
            )
        )
    return out
