"""Statements cut where an answer's copied spans change source, so no judge sees two chunks' text as one claim.

Why: an extractive answer often copies a chunk that ends without a full stop and then the next chunk. The
sentence splitter (`text.sentences`) then makes one statement of both, and a judge that checks a statement
against one chunk at a time (the local judge's passages, the per-chunk columns of RAGChecker's claim matrices,
an LLM told to name the chunk that supports it) finds no chunk that holds it: a 100 % copied answer scored 0,
while the same text with a full stop between the copies, or in one context, scored 1. Where sentences break
must not decide faithfulness.

The rule: a text's words are matched, in order, against the words of every context (casefolded, NFKC, so case,
width, whitespace, punctuation and Markdown marks do not matter; each Chinese or Japanese character is a word of
its own, since those scripts put no spaces between words). Greedily from the left, each position takes the
longest run of words that some context holds contiguously (on a tie, the chunk of the run before, then a run
that starts a sentence). A run of at least `MIN_RUN_WORDS` words is a copied span. Between two copied spans
from different chunks the text is cut when the first ends where a sentence (or paragraph, or the chunk) of its
chunk ends, the second starts where one of its chunk's starts, and what lies between them is only punctuation
or at most `MAX_GAP_WORDS` function words ("and", "und", "и"): glue the answer added.

The sentence edges tell copying from writing: an answer written in its own words shares three-word runs with
the chunks by chance ("Default values are" | "evaluated once, when ..."), but those start and end mid-sentence
(the built-in collection's 128 hand-written answers and references against their top-10 passages: cut nowhere
with the edges required, 14 cut without, most mid-clause). Anything else between two spans (a word no context
holds) keeps the text whole, so an answer that adds a claim of its own is judged as written; two spans of one
chunk are never cut apart (that chunk holds both, and a word the answer dropped between them, such as a
negation, stays judged).

The cut is made at the first space between the two spans (else where the second starts), so the pieces are the
answer's own text. The whole text is cut before its sentences are (`statements_against`): a copied list item
"3. If ..." then starts its own piece instead of leaving "3." to the sentence before.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ragmetrics.judge.text.sentences import split_statements
from ragmetrics.judge.text.signals import STOP_WORDS

__all__ = [
    "MAX_GAP_WORDS",
    "MIN_RUN_WORDS",
    "CopiedSpan",
    "copied_spans",
    "copy_pieces",
    "statements_against",
]

MIN_RUN_WORDS = 3.0
"""A run of words the contexts hold contiguously counts as a copied span from this length (a Chinese or
Japanese character counts half a word): shorter runs ("of the", "是一个") occur anywhere by chance."""
MAX_GAP_WORDS = 2
"""At most this many function words may join two copied spans for the statement to be cut between them."""

_CJK_CHAR = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK_CHAR}]|[^\W_{_CJK_CHAR}]+")
_GLUE = STOP_WORDS | frozenset(["et", "ou", "mais", "donc", "y", "o", "pero", "e", "ma", "dann", "sowie", "а", "также", "和", "与", "及", "と", "や"])  # fmt: skip
"""Function words an answer puts between two copied spans without adding a claim."""


@dataclass(frozen=True)
class _Token:
    norm: str
    start: int
    end: int
    cjk: bool


@dataclass(frozen=True)
class CopiedSpan:
    """Statement words [first, last) copied from context `chunk`, starting at its word `at`."""

    first: int
    last: int
    chunk: int
    at: int


_ONE_CJK = re.compile(rf"[{_CJK_CHAR}]")


def _tokens(text: str) -> list[_Token]:
    """Words (casefolded, NFKC) with their offsets; a Chinese or Japanese character is a word of its own."""
    return [
        _Token(unicodedata.normalize("NFKC", m.group()).casefold(), m.start(), m.end(),
               _ONE_CJK.fullmatch(m.group()) is not None)
        for m in _TOKEN.finditer(text)
    ]  # fmt: skip


_SENTENCE_GAP = re.compile(r"[.!?。！？…]|\n\s*\n")


@dataclass(frozen=True)
class _Chunk:
    """A context's words, and which of them start or end one of its sentences (or the context itself)."""

    words: tuple[str, ...]
    starts: frozenset[int]
    ends: frozenset[int]


@lru_cache(maxsize=4096)
def _chunk(context: str) -> _Chunk:
    tokens = _tokens(context)
    gaps = [context[a.end : b.start] for a, b in itertools.pairwise(tokens)]
    breaks = {n + 1 for n, gap in enumerate(gaps) if _SENTENCE_GAP.search(gap)}
    return _Chunk(
        tuple(t.norm for t in tokens),
        frozenset({0} | breaks),
        frozenset({len(tokens) - 1} | {b - 1 for b in breaks}),
    )


def _weight(tokens: Sequence[_Token]) -> float:
    return sum(0.5 if t.cjk else 1.0 for t in tokens)


def copied_spans(statement: str, contexts: Sequence[str]) -> list[CopiedSpan]:
    """The statement's copied spans (module doc), left to right; words between them belong to none."""
    tokens = _tokens(statement)
    chunks = [_chunk(c) for c in contexts]
    words = [c.words for c in chunks]
    where: dict[str, list[tuple[int, int]]] = {}
    for k, chunk_words in enumerate(words):
        for p, w in enumerate(chunk_words):
            where.setdefault(w, []).append((k, p))
    spans: list[CopiedSpan] = []
    i = 0
    while i < len(tokens):
        # (length, in the chunk of the span before, at a sentence start) of the best run from here
        best: tuple[int, bool, bool] | None = None
        found = (0, 0)
        for k, p in where.get(tokens[i].norm, ()):
            chunk_words = words[k]
            n = 1
            while (
                i + n < len(tokens) and p + n < len(chunk_words) and tokens[i + n].norm == chunk_words[p + n]
            ):
                n += 1
            # On a tie: the chunk of the span before (no cut where one chunk holds both), then a sentence start.
            rank = (n, bool(spans) and k == spans[-1].chunk, p in chunks[k].starts)
            if best is None or rank > best:
                best, found = rank, (k, p)
        if best is not None and _weight(tokens[i : i + best[0]]) >= MIN_RUN_WORDS:
            spans.append(CopiedSpan(i, i + best[0], found[0], found[1]))
            i += best[0]
        else:
            i += 1
    return spans


def _cut(
    statement: str, tokens: Sequence[_Token], left: CopiedSpan, right: CopiedSpan, chunks: Sequence[_Chunk]
) -> int | None:
    """Where to cut between two copied spans, or None when one chunk holds both, something other than glue lies
    between them, or neither meets its chunk's sentence edge (module doc)."""
    if left.chunk == right.chunk:
        return None
    gap = tokens[left.last : right.first]
    if len(gap) > MAX_GAP_WORDS or any(t.norm not in _GLUE for t in gap):
        return None
    left_ends = left.at + (left.last - left.first) - 1 in chunks[left.chunk].ends
    if not (left_ends and right.at in chunks[right.chunk].starts):
        return None
    end_of_left = tokens[left.last - 1].end
    between = statement[end_of_left : tokens[right.first].start]
    space = re.search(r"\s", between)
    return end_of_left + space.start() if space is not None else tokens[right.first].start


def copy_pieces(text: str, contexts: Sequence[str]) -> list[str]:
    """`text` cut where its copied spans change source (module doc), in order; [text] when nothing is cut."""
    if not contexts:
        return [text]
    spans = copied_spans(text, contexts)
    tokens = _tokens(text)
    chunks = [_chunk(c) for c in contexts]
    cuts = [c for a, b in itertools.pairwise(spans) if (c := _cut(text, tokens, a, b, chunks)) is not None]
    pieces = []
    start = 0
    for cut in [*cuts, len(text)]:
        if text[start:cut].strip():
            pieces.append(text[start:cut])
        start = cut
    return pieces or [text]


def statements_against(text: str, contexts: Sequence[str], language: str | None = None) -> list[str]:
    """The statements of `text` as judged against `contexts`: the text cut where copies of different chunks
    meet (`copy_pieces`), each piece cut into statements (`split_statements`). A statement with no word in it
    (a stray quote and stop left where a piece was cut) claims nothing and joins the statement before it."""
    statements: list[str] = []
    for piece in copy_pieces(text, contexts):
        for statement in split_statements(piece, language):
            if statements and not _tokens(statement):
                statements[-1] = f"{statements[-1]} {statement}"
            else:
                statements.append(statement)
    return statements
