"""Is a statement supported by the passage it is most similar to, or only similar to it?

Why: embedding similarity does not see the details that make a claim true. "The Berlin Wall fell in 1991"
is as close to "The Berlin Wall fell in 1989" as a paraphrase is, so a judge that decides support by cosine
alone passes planted contradictions and, on public summaries labelled by people (QAGS), cannot tell faithful
sentences from unfaithful ones (ROC AUC 0.52). What it misses is what a reader checks first: the numbers, the
names and the polarity. A statement is unsupported when, against its best-matching passage:

- it states a number the passage does not (1991 vs 1989; "1,000" and "1000" are one number);
- it names something (a capitalised word inside the sentence, in scripts with capitals) the passage does
  not mention, so a name swapped for another fails;
- its polarity differs: it is negated where the passage's best sentence is not, or the other way round
  (negation words of each supported language), while the two otherwise make the same claim.

The passage is the chunk holding the best-matching sentence: a detail stated a few sentences away still
supports the statement, while a name or number absent from the chunk does not.

The checks are lexical on purpose: they are cheap, deterministic, language-aware through small word lists,
and their reasons say exactly which detail was not found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from ragmetrics.judge.text.signals import content_units, coverage

__all__ = ["Conflict", "conflicts", "has_negation", "numbers_in"]

# Digits with optional thousands groups and decimals: 1,000,000 / 1.000.000 / 2.5 / 2,5 / 6½.
_NUMBER = re.compile(r"(?<![\d.,])\d+(?:[.,  ]\d{3})*(?:[.,]\d+)?")
_GROUPS = re.compile(r"(?<=\d)[,.  ](?=\d{3}(?!\d))")
# Cased scripts only: Latin, Greek, Cyrillic. A word of 2+ letters starting with a capital.
_NAME = re.compile(r"(?<![\w'’-])[A-ZÀ-ÖØ-ÞĀ-ſΑ-ΩА-ЯЁ][\w'’-]+")
SAME_CLAIM_SHARE = 0.6
"""Polarity is compared clause by clause: each clause of the statement with the clause of the passage's best
sentence that shares most words with it, and only when that one holds this share of the clause's content
words (negations aside): the two then make the same claim, and a negation on one side only reverses it (a
"not" in another clause does not)."""
_NEGATIONS: dict[str, str] = {
    # Verbal negators only: "without", "none" or "nothing" rarely reverse a claim and often just describe it.
    "en": r"\b(?:not|never|cannot)\b|n't\b|\bno longer\b",
    "de": r"\b(?:nicht|kein|keine|keinen|keinem|keiner|keines|nie|niemals)\b",
    "fr": r"\b(?:ne|n'|pas|jamais)\b",
    "es": r"\b(?:no|nunca|jamás)\b",
    "pt": r"\b(?:não|nunca|jamais)\b",
    "it": r"\b(?:non|mai)\b",
    "nl": r"\b(?:niet|geen|nooit)\b",
    "ru": r"(?<!\w)(?:не|нет|никогда)(?!\w)",
    "uk": r"(?<!\w)(?:не|немає|ніколи)(?!\w)",
    "pl": r"(?<!\w)(?:nie|nigdy)(?!\w)",
    "tr": r"(?<!\w)(?:değil|yok|asla)(?!\w)",
    "vi": r"(?<!\w)(?:không|chưa|chẳng|chả)(?!\w)",
    "el": r"(?<!\w)(?:δεν|μην|ποτέ)(?!\w)",
    "ro": r"(?<!\w)(?:nu|niciodată)(?!\w)",
    "ar": r"(?<!\w)(?:لا|لم|لن|ليس|ليست)(?!\w)",
    "hi": r"(?<!\w)(?:नहीं|मत)(?!\w)",
    "zh": r"不|没|沒|未|无|無|非|别|別",
    "ja": r"ない|ません|ず[、。に]|なかった|無い",
    "ko": r"않|없|못|아니|안 ",
    "th": r"ไม่|มิ|ไม่ได้",
}
_ALL_NEGATIONS = re.compile("|".join(f"(?:{p})" for p in _NEGATIONS.values()), re.IGNORECASE)


@dataclass(frozen=True)
class Conflict:
    """One detail of the statement the passage does not bear out."""

    kind: Literal["number", "name", "negation"]
    detail: str

    def __str__(self) -> str:
        if self.kind == "negation":
            return self.detail
        return f"{self.kind} {self.detail!r} is not in the passage"


def _number_value(token: str) -> str:
    """Canonical form of a number token: thousands separators dropped, a decimal comma read as a point."""
    plain = _GROUPS.sub("", token)
    plain = plain.replace(",", ".")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    whole, dot, fraction = plain.partition(".")
    return (whole.lstrip("0") or "0") + dot + fraction


@lru_cache(maxsize=65536)
def numbers_in(text: str) -> frozenset[str]:
    """The numbers written in digits in `text`, canonical (see `_number_value`)."""
    return frozenset(_number_value(m.group()) for m in _NUMBER.finditer(text))


def _negation_pattern(language: str | None) -> re.Pattern[str]:
    base = (language or "").split("-")[0].lower()
    pattern = _NEGATIONS.get(base)
    return re.compile(pattern, re.IGNORECASE) if pattern else _ALL_NEGATIONS


@lru_cache(maxsize=65536)
def has_negation(text: str, language: str | None = None) -> bool:
    """Whether `text` holds a negation word of its language (any supported language when unknown)."""
    return _negation_pattern(language).search(text) is not None


def _names(text: str) -> list[str]:
    found = []
    for m in _NAME.finditer(text):
        before = text[: m.start()].rstrip()
        if not before or before[-1] in ".!?:;\"'“”«»(–—-":
            continue  # a sentence's (or a quotation's) first word is capitalised anyway
        found.append(m.group())
    return found


_POSSESSIVE = re.compile(r"['’]s?$")


_CLAUSE_BREAK = re.compile(r"[;:,，、；：]\s*|\s(?:but|while|whereas|aber|pero|mais|но|а)\s", re.IGNORECASE)


def _clauses(sentence: str) -> list[str]:
    """The clauses of a sentence (cut at commas, semicolons and contrastive conjunctions)."""
    return [c for c in _CLAUSE_BREAK.split(sentence) if c.strip()] or [sentence]


def _without_negation(text: str, language: str | None) -> frozenset[str]:
    return content_units(_negation_pattern(language).sub(" ", text))


def conflicts(
    statement: str, passage: str, best_sentence: str, language: str | None = None
) -> list[Conflict]:
    """What in `statement` its best-matching `passage` (the chunk that holds its most similar sentence) does
    not bear out; the clause of `best_sentence` closest to it decides polarity, and only when the two say the
    same thing apart from negation (see SAME_CLAIM_SHARE). Empty when nothing conflicts."""
    found: list[Conflict] = []
    missing = sorted(numbers_in(statement) - numbers_in(passage))
    found.extend(Conflict("number", n) for n in missing)
    lowered = passage.lower()
    for name in _names(statement):
        stem = _POSSESSIVE.sub("", name.lower())
        if len(stem) >= 3 and stem[: max(3, len(stem) - 2)] not in lowered:
            found.append(Conflict("name", name))
    theirs = [(has_negation(c, language), _without_negation(c, language)) for c in _clauses(best_sentence)]
    for part in _clauses(statement):
        mine = _without_negation(part, language)
        if not mine:
            continue
        negated, words = max(theirs, key=lambda clause: len(mine & clause[1]))
        said = has_negation(part, language)
        if said != negated and coverage(mine, words) >= SAME_CLAIM_SHARE:
            found.append(
                Conflict(
                    "negation",
                    "the statement is negated where the passage is not"
                    if said
                    else "the passage is negated where the statement is not",
                )
            )
            break
    return found
