"""The words a support check compares: names (capitalised words inside sentences), the content words that carry
a claim, whether a word occurs in a passage in any English inflection, and a statement's leading pronoun.

Why its own module: what counts as a name or as a claim's word is one set of word lists and rules, shared by
the support, agreement and coverage checks of `support`."""

from __future__ import annotations

import bisect
import re
from functools import lru_cache

from ragmetrics.judge.text.signals import STOP_WORDS as _STOP_WORDS
from ragmetrics.judge.text.signals import content_units
from ragmetrics.judge.text.support_numbers import _SPELLED

__all__ = ["resolve_pronoun", "starts_with_pronoun"]


# Cased scripts only: Latin, Greek, Cyrillic. A word of 2+ letters starting with a capital.
_NAME = re.compile(r"(?<![\w'’-])[A-ZÀ-ÖØ-ÞĀ-ſΑ-ΩА-ЯЁ][\w'’-]+")


_OPENERS = frozenset(
    [
        "according",
        "after",
        "although",
        "as",
        "because",
        "before",
        "both",
        "but",
        "during",
        "each",
        "either",
        "every",
        "few",
        "finally",
        "first",
        "for",
        "however",
        "in",
        "instead",
        "it",
        "its",
        "many",
        "most",
        "neither",
        "no",
        "none",
        "on",
        "once",
        "overall",
        "second",
        "several",
        "since",
        "so",
        "some",
        "still",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "though",
        "thus",
        "to",
        "today",
        "until",
        "unless",
        "unlike",
        "usually",
        "when",
        "where",
        "whereas",
        "which",
        "while",
        "with",
        "within",
        "without",
        "yes",
        "yet",
        "between",
        "from",
        "by",
        "about",
        "at",
        "an",
        "a",
        "all",
        "any",
        "also",
        "another",
        "because",
        "only",
        "just",
        "even",
    ]
)
"""First words of a sentence that are capitalised for being first, never for being names."""


_SUBJECT_VERB = re.compile(
    r"\s+(?:is|was|are|were|has|had|have|will|would|can|could|did|does|may|might|must|should|became|"
    r"[a-z]{2,}(?:ed|es|s))\b"
)
"""What follows a sentence-initial name in subject position: an auxiliary or a verb in -s or -ed."""


def _names(text: str, question_words: frozenset[str] = frozenset(), initial: bool = False) -> list[str]:
    """Capitalised words inside sentences; with `initial`, also a sentence's first word when it is not a
    function word, an adverb in -ly, or a word the question uses in lower case, and a verb follows it ("Venus
    is known as the Red Planet" names Venus; "Sunlight takes ..." does not name sunlight when the question says
    "sunlight"; "Use json.loads()" is an imperative)."""
    found = []
    for m in _NAME.finditer(text):
        before = text[: m.start()].rstrip()
        if not before or before[-1] in ".!?:;\"'“”«»(–—-":
            word = m.group().lower()
            if not initial or word in _OPENERS or word in _STOP_WORDS or word.endswith("ly"):
                continue  # a sentence's (or a quotation's) first word is capitalised anyway
            if word in question_words or len(word) < 3 or not _SUBJECT_VERB.match(text, m.end()):
                continue  # an imperative ("Use json.loads()") or a common noun the question names
        found.append(m.group())
    return found


_POSSESSIVE = re.compile(r"['’]s?$")


_LIGHT_WORDS = frozenset(
    [
        "get",
        "gets",
        "got",
        "make",
        "makes",
        "made",
        "need",
        "needs",
        "take",
        "takes",
        "took",
        "give",
        "gives",
        "gave",
        "go",
        "goes",
        "went",
        "come",
        "comes",
        "came",
        "put",
        "puts",
        "let",
        "lets",
        "keep",
        "keeps",
        "called",
        "call",
        "see",
        "seen",
        "way",
        "thing",
        "things",
        "kind",
        "lot",
        "used",
        "use",
        "uses",
        "using",
        "like",
        "well",
        "still",
        "even",
        "able",
        "one",
        "ones",
        "per",
        "via",
        "known",
    ]
)
"""Verbs and nouns so general that an answer may add them without adding a claim."""


_ASCII_WORD = re.compile(r"[a-z]+")


@lru_cache(maxsize=4096)
def _word_starts(passage: str) -> tuple[str, ...]:
    """The lowercased passage's ASCII letter runs, sorted: a prefix is found by bisection, not by a regex
    compiled per word (judging a run checks every statement against every chunk)."""
    return tuple(sorted(set(_ASCII_WORD.findall(passage))))


def _found(unit: str, passage: str) -> bool:
    """Whether `unit` (a lowercased content word, or a CJK bigram) occurs in the lowercased `passage`, in any
    English inflection: its first max(4, n-2) letters at a word start."""
    if not unit.isascii() or not unit.isalpha():
        return unit in passage
    words = _word_starts(passage)
    for stem in _stems_of(unit):
        at = bisect.bisect_left(words, stem)
        if at < len(words) and words[at].startswith(stem):
            return True
    return False


def _stems_of(unit: str) -> tuple[str, ...]:
    """The prefixes an English inflection of `unit` starts with: its first max(4, n-2) letters, and for a
    plural or third person the singular's ("copies" -> "copy", "sums" -> "sum", "indices" -> "index")."""
    stems = [unit[: max(4, len(unit) - 2)] if len(unit) > 4 else unit]
    if unit.endswith("ies") and len(unit) > 4:
        stems.append(unit[:-3] + "y")
    elif unit.endswith("s") and not unit.endswith("ss") and len(unit) > 3:
        stems.append(unit[:-1])
    if unit.endswith(("ex", "ix")) and len(unit) > 4:  # index / indices, matrix / matrices
        stems.append(unit[:-2] + "ic")
    return tuple(stems)


def _claim_units(text: str) -> frozenset[str]:
    """Content words that carry a claim: numbers (checked as numbers), number words, sentence openers and
    light words left out."""
    return frozenset(
        u for u in content_units(text)
        if not u[0].isdigit() and u not in _LIGHT_WORDS and u not in _OPENERS and u not in _SPELLED
    )  # fmt: skip


_PRONOUN_START = re.compile(
    r"^\s*(?:it|its|they|their|this|these|that|those|he|she|his|her|es|sie|er|il|elle|ils|elles|ello|ella|"
    r"они|он|она|оно|это)\b",
    re.IGNORECASE,
)


def starts_with_pronoun(statement: str) -> bool:
    """Whether a statement leans on a pronoun for its subject ("It rebinds a variable ..."): embedded alone it
    has lost what it is about, so the judge also reads it after the question."""
    return _PRONOUN_START.search(statement) is not None


def resolve_pronoun(answer: str, question: str) -> str:
    """`answer` with a leading subject pronoun ("It", "They", "This") replaced by the question's content words,
    in the question's order: "It rebinds a variable" for "What does nonlocal do?" reads "nonlocal rebinds a
    variable". Unchanged when it does not start with one or the question has no content words."""
    match = _SUBJECT_PRONOUN.match(answer)
    if match is None:
        return answer
    words = [w for w in re.findall(r"[\w.()'-]+", question) if w.lower() in content_units(w.lower())]
    if not words:
        return answer
    return " ".join(words) + answer[match.end() :]


_SUBJECT_PRONOUN = re.compile(r"\s*(?:it|they|this|these|he|she)\b", re.IGNORECASE)
