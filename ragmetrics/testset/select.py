"""What to ask about: chunks chosen so the questions cover the corpus, in two streaming passes.

Pass 1 counts, per content term, the chunks it occurs in (document frequency), finds each chunk's language,
and flags chunks not worth a question: near-empty (fewer than `min_terms` distinct content terms), exact
duplicates (the same text as an earlier chunk, up to case and spacing: the later ones are skipped) and
boilerplate (the same text in `boilerplate_repeats` or more chunks: headers, footers, cookie notices; all
copies skipped), and chunks made almost only of the corpus's commonest terms.

Pass 2 turns each remaining chunk (or, past `max_sketched` of them, a uniform random sample of that many, which
keeps a build's cost fixed: group sizes are then estimated from the sample) into its unit-length tf-idf vector,
a sparse row (a random projection to a few hundred numbers was tried first: its cosine noise, about
1/sqrt(dimensions), is as large as the cosines between chunks of one topic). Spherical k-means over the rows
groups chunks by topic; each group gets questions in proportion to its size (largest remainders),
so a topic that is 10% of the corpus gets about 10% of the questions, and each question's chunk is drawn at
random within its group. The coverage report says how many groups, and how much of the corpus, the chosen
chunks stand for.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from ragmetrics.testset.corpus import Corpus
from ragmetrics.testset.terms import chunk_language, without_function_words, words

__all__ = ["CorpusProfile", "Selection", "profile_corpus", "select_chunks"]

COMMON_SHARE = 0.3
"""A term in more than this share of the chunks says nothing about any of them (a corpus-made stop word)."""


@dataclass
class Skipped:
    id: str
    line: int
    reason: str  # empty | near_empty | duplicate | boilerplate | common_terms_only
    detail: str


@dataclass
class CorpusProfile:
    """Pass 1 and 2 of a corpus: statistics, skipped chunks, and a sketch per chunk worth asking about."""

    source: str
    n_chunks: int
    eligible_total: int  # chunks not skipped in pass 1 (ids holds them all, or a uniform sample of them)
    df: dict[str, int]
    ids: list[str]  # eligible chunks, corpus order
    lines: list[int]
    languages: list[str]
    sketches: sparse.csr_matrix  # (len(ids), terms): unit-length tf-idf rows
    skipped: list[Skipped] = field(default_factory=list)
    language_counts: Counter[str] = field(default_factory=Counter)
    duplicate_groups: list[list[str]] = field(default_factory=list)
    """Ids of chunks with the same text up to case and spacing, one list per text held by two or more
    chunks (duplicates and boilerplate alike): a grade given to one holds for all (`testset.duplicates`)."""

    def idf(self, term: str) -> float:
        return math.log((self.n_chunks + 1) / (self.df.get(term, 0) + 0.5))

    def skipped_counts(self) -> dict[str, int]:
        return dict(Counter(s.reason for s in self.skipped))


def _signature(text: str) -> bytes:
    """The text up to case and spacing (numbers included: two pages differing only in a number differ)."""
    return hashlib.blake2b(" ".join(text.lower().split()).encode("utf-8"), digest_size=12).digest()


def profile_corpus(
    corpus: Corpus,
    *,
    min_terms: int = 5,
    boilerplate_repeats: int = 3,
    language: str | None = None,
    seed: int = 0,
    max_sketched: int = 20_000,
) -> CorpusProfile:
    """Passes 1 and 2 (module docstring). `language` forces one language for every chunk; beyond
    `max_sketched` eligible chunks, a uniform sample of that many is sketched and chosen from."""
    df: Counter[str] = Counter()
    signatures: dict[bytes, list[int]] = {}
    chunk_ids: list[str] = []
    chunk_lines: list[int] = []
    chunk_langs: list[str] = []
    near_empty: dict[int, int] = {}
    empty: list[int] = []
    for index, chunk in enumerate(corpus):
        if not chunk.text.strip():  # public collections hold such documents: kept as ids, never asked about
            empty.append(index)
            chunk_ids.append(chunk.id)
            chunk_lines.append(chunk.line)
            chunk_langs.append(language or "en")
            continue
        body = words(chunk.text)
        found = words(chunk.title) + body if chunk.title else body
        text = chunk.text
        lang = language or chunk_language(text, found)
        terms = set(without_function_words(found, lang))
        df.update(terms)
        chunk_ids.append(chunk.id)
        chunk_lines.append(chunk.line)
        chunk_langs.append(lang)
        if len(terms) < min_terms:
            near_empty[index] = len(terms)
        # The text alone decides duplicates: the same footer under different titles is still boilerplate.
        signatures.setdefault(_signature(chunk.text), []).append(index)
    n = len(chunk_ids)
    skip: dict[int, Skipped] = {
        index: Skipped(chunk_ids[index], chunk_lines[index], "empty", "the text is empty or only whitespace")
        for index in empty
    }
    for index, count in near_empty.items():
        skip[index] = Skipped(
            chunk_ids[index],
            chunk_lines[index],
            "near_empty",
            f"{count} distinct content term(s), < {min_terms}",
        )
    for copies in signatures.values():
        if len(copies) < 2:
            continue
        if len(copies) >= boilerplate_repeats:
            for index in copies:
                skip.setdefault(
                    index,
                    Skipped(
                        chunk_ids[index],
                        chunk_lines[index],
                        "boilerplate",
                        f"the same text is in {len(copies)} chunks",
                    ),
                )
        else:
            first = chunk_ids[copies[0]]
            for index in copies[1:]:
                skip.setdefault(
                    index,
                    Skipped(
                        chunk_ids[index], chunk_lines[index], "duplicate", f"the same text as chunk {first!r}"
                    ),
                )
    duplicate_groups = [[chunk_ids[i] for i in copies] for copies in signatures.values() if len(copies) > 1]
    common = {t for t, c in df.items() if n >= 20 and c > COMMON_SHARE * n}
    candidates = [i for i in range(n) if i not in skip]
    if len(candidates) > max_sketched:
        # A uniform sample stands for the rest: group sizes are estimated from it and picks drawn from it, so
        # the questions still spread over the corpus in proportion, at a fixed cost per build.
        chosen = np.random.default_rng(seed).choice(len(candidates), size=max_sketched, replace=False)
        sampled: set[int] | None = {candidates[int(i)] for i in chosen}
    else:
        sampled = None
    idf = {t: math.log((n + 1) / (c + 0.5)) for t, c in df.items()}
    column: dict[str, int] = {}
    keep: list[int] = []
    indptr: list[int] = [0]
    indices: list[int] = []
    data: list[float] = []
    for index, chunk in enumerate(corpus):
        if index in skip or (sampled is not None and index not in sampled):
            continue
        found = words(chunk.title) + words(chunk.text) if chunk.title else words(chunk.text)
        counts = Counter(t for t in without_function_words(found, chunk_langs[index]) if t not in common)
        if len(counts) < max(2, min_terms // 2):
            skip[index] = Skipped(
                chunk.id,
                chunk.line,
                "common_terms_only",
                "almost every term is among the corpus's commonest (navigation or boilerplate)",
            )
            continue
        weights = {t: (1.0 + math.log(c)) * idf[t] for t, c in counts.items()}
        norm = math.sqrt(sum(w * w for w in weights.values()))
        if norm == 0.0:
            skip[index] = Skipped(chunk.id, chunk.line, "common_terms_only", "no term tells it apart")
            continue
        keep.append(index)
        for term, weight in weights.items():
            indices.append(column.setdefault(term, len(column)))
            data.append(weight / norm)
        indptr.append(len(indices))
    sketches = sparse.csr_matrix(
        (np.asarray(data, dtype=np.float32), np.asarray(indices, dtype=np.int64), np.asarray(indptr)),
        shape=(len(keep), max(1, len(column))),
    )
    return CorpusProfile(
        source=corpus.source,
        n_chunks=n,
        eligible_total=len(candidates),
        df=dict(df),
        ids=[chunk_ids[i] for i in keep],
        lines=[chunk_lines[i] for i in keep],
        languages=[chunk_langs[i] for i in keep],
        sketches=sketches,
        skipped=sorted(skip.values(), key=lambda s: s.line),
        language_counts=Counter(chunk_langs[i] for i in keep),
        duplicate_groups=duplicate_groups,
    )


def kmeans(x: sparse.csr_matrix, k: int, seed: int, iterations: int = 25) -> NDArray[np.int64]:
    """Spherical k-means (cosine) over unit rows, k-means++ seeding; returns each row's group."""
    n = x.shape[0]
    rng = np.random.default_rng(seed)
    if k >= n:
        return np.arange(n, dtype=np.int64)
    sample = x if n <= 20000 else x[rng.choice(n, 20000, replace=False)]
    first = int(rng.integers(sample.shape[0]))
    centers = [_dense_row(sample, first)]
    best = 1.0 - sample @ centers[0]
    for _ in range(1, k):
        weights = np.maximum(best, 0.0) ** 2
        total = float(weights.sum())
        pick = (
            int(rng.integers(sample.shape[0]))
            if total <= 0
            else int(rng.choice(sample.shape[0], p=weights / total))
        )
        centers.append(_dense_row(sample, pick))
        best = np.minimum(best, 1.0 - sample @ centers[-1])
    c = np.vstack(centers).astype(np.float32)
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(iterations):
        new = np.asarray(np.argmax(x @ c.T, axis=1)).ravel().astype(np.int64)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            members = x[labels == j]
            if members.shape[0]:
                mean = np.asarray(members.sum(axis=0)).ravel()
                norm = float(np.linalg.norm(mean))
                if norm > 0:
                    c[j] = mean / norm
    return labels


def _dense_row(x: sparse.csr_matrix, row: int) -> NDArray[np.float32]:
    return np.asarray(x[row].toarray()).ravel().astype(np.float32)


def allocate(sizes: list[int], total: int) -> list[int]:
    """`total` split over groups in proportion to `sizes`, by largest remainders (ties to the larger group)."""
    n = sum(sizes)
    if n == 0 or total <= 0:
        return [0] * len(sizes)
    exact = [s * total / n for s in sizes]
    quota = [min(int(e), s) for e, s in zip(exact, sizes, strict=True)]
    order = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - int(exact[i])), -sizes[i], i))
    left = total - sum(quota)
    while left > 0:
        moved = False
        for i in order:
            if left == 0:
                break
            if quota[i] < sizes[i]:
                quota[i] += 1
                left -= 1
                moved = True
        if not moved:
            break
    return quota


@dataclass
class Selection:
    """The chunks to ask about (indices into the profile), their groups, and the coverage they give."""

    picks: list[int]
    groups: NDArray[np.int64]
    n_groups: int
    group_sizes: list[int]
    group_quota: list[int]
    order: list[int] = field(default_factory=list)
    """Every eligible chunk, stratified random order; `picks` is its first batch."""


def select_chunks(profile: CorpusProfile, size: int, *, seed: int, groups: int | None = None) -> Selection:
    """Every eligible chunk in a stratified random order (systematic sampling within topic groups: member j of
    a group of s gets the key (j + u) / s, u uniform, and the order sorts the keys), so that any prefix of it
    holds each group in proportion to its size, within two chunks; `picks` is the first `size`. A build takes
    further batches from the same order when its filters left too few questions."""
    n = len(profile.ids)
    if n == 0:
        return Selection([], np.zeros(0, np.int64), 0, [], [])
    k = groups or max(1, min(50, round(math.sqrt(n)), n))
    labels = kmeans(profile.sketches, k, seed)
    k = int(labels.max()) + 1
    sizes = [int(v) for v in np.bincount(labels, minlength=k)]
    rng = np.random.default_rng(seed)
    keys = np.empty(n, dtype=np.float64)
    for g in range(k):
        members = np.flatnonzero(labels == g)
        if not len(members):
            continue
        rng.shuffle(members)
        keys[members] = (np.arange(len(members)) + rng.random()) / len(members)
    order = [int(i) for i in np.argsort(keys, kind="stable")]
    picks = order[: min(size, n)]
    quota = [int(c) for c in np.bincount(labels[picks], minlength=k)] if picks else [0] * k
    return Selection(picks, labels, k, sizes, quota, order)
