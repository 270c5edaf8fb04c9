"""Polarity: whether a statement and a passage make the same claim with opposite polarity, a negation on one
side only ("is not" where the passage says "is") or an opposite word ("higher" where it says "lower").

Why its own module: polarity is compared clause by clause (`SAME_CLAIM_SHARE`), with negation words of each
supported language and English antonyms, which is a job of its own beside the number and name checks."""

from __future__ import annotations

import re
from functools import lru_cache

from ragmetrics.judge.text.signals import content_units, coverage
from ragmetrics.judge.text.support_conflict import Conflict

__all__ = ["SAME_CLAIM_SHARE", "has_negation"]


SAME_CLAIM_SHARE = 0.6
"""Polarity is compared clause by clause: each clause of the statement with the clause of the passage's best
sentence that shares most words with it, and only when that one holds this share of the clause's content
words (negations aside): the two then make the same claim, and a negation on one side only reverses it (a
"not" in another clause does not)."""


_NEGATIONS: dict[str, str] = {
    # Verbal negators only: "without", "none" or "nothing" rarely reverse a claim and often just describe it.
    "en": r"\b(?:not|never|cannot|without)\b|n't\b|\bno\b(?!\s+(?:more|less|later|earlier|fewer|longer|sooner|greater|"
    r"higher|lower|matter|doubt)\b)",
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


@lru_cache(maxsize=64)
def _negation_pattern(language: str | None) -> re.Pattern[str]:
    base = (language or "").split("-")[0].lower()
    pattern = _NEGATIONS.get(base)
    return re.compile(pattern, re.IGNORECASE) if pattern else _ALL_NEGATIONS


_NAME_NOT = re.compile(r"(?<=[^\s.!?:;]\s)(?:Not|No|Never)\s+(?:(?:a|an|the|of|for|to)\s+)?(?=[A-Z][a-z])")
_FIXED_NOT = re.compile(r"\bnot[\s-]+an?[\s-]+numbers?\b|\bnot\s+only\b|\bno-ops?\b", re.IGNORECASE)
_ANSWER_PARTICLE = re.compile(r"^\s*(?:no|nope|nein|non|nee|нет|não)\s*[.,!;:]\s*", re.IGNORECASE)


def _plain_negations(text: str) -> str:
    """`text` without the negation words that do not negate: fixed phrases ("Not a Number" (NaN), "not only
    ... but", "no-op"), a capitalised negator inside a sentence that starts a Title Case name ("No Child Left
    Behind"), and an answer particle opening the text ("No. It returns a copy.": the claim is what follows)."""
    text = _NAME_NOT.sub(" ", text)
    text = _FIXED_NOT.sub(" ", text)
    return _ANSWER_PARTICLE.sub(" ", text)


@lru_cache(maxsize=65536)
def has_negation(text: str, language: str | None = None) -> bool:
    """Whether `text` holds a negation word of its language (any supported language when unknown), names and
    fixed phrases that only contain one ("Not a Number", a leading "No.") aside."""
    return _negation_pattern(language).search(_plain_negations(text)) is not None


_WITHOUT = re.compile(r"\bwithout\b", re.IGNORECASE)


def _only_without(text: str, language: str | None) -> bool:
    """Whether the text's one negation is "without": a description ("works without copying"), which reverses
    the claim only where the other text does not use the word at all."""
    return bool(_WITHOUT.search(text)) and not has_negation(_WITHOUT.sub(" ", text), language)


_CLAUSE_BREAK = re.compile(r"[;:,，、；：]\s*|\s(?:but|while|whereas|aber|pero|mais|но|а)\s", re.IGNORECASE)
_ADDITION_BREAK = re.compile(
    r"[;:,，、；：]\s*|\s(?:and|but|while|whereas|which|because|so|although|though|whereby|und|aber|weil|y|pero|"
    r"porque|et|mais|car|и|но|потому)\s",
    re.IGNORECASE,
)


def _clauses(sentence: str) -> list[str]:
    """The clauses of a sentence (cut at commas, semicolons and contrastive conjunctions)."""
    return [c for c in _CLAUSE_BREAK.split(sentence) if c.strip()] or [sentence]


def _polarity_clauses(sentence: str) -> list[str]:
    """Clauses for comparing polarity: also cut at "and" and "because", so a negation in one coordinated
    clause ("... 12 characters and may not reuse ...") is not read into the other."""
    return [c for c in _ADDITION_BREAK.split(sentence) if c and c.strip()] or [sentence]


def _without_negation(text: str, language: str | None) -> frozenset[str]:
    return content_units(_negation_pattern(language).sub(" ", _plain_negations(text)))


_SUFFIX = re.compile(r"(?:ing|ed|es|s)$")


def _stem(word: str) -> str:
    """A crude stem for comparing clauses: English inflections cut, then the first five letters; other scripts
    unchanged (their clauses compare on whole words or CJK bigrams)."""
    if not word.isascii() or len(word) <= 4:
        return word
    cut = _SUFFIX.sub("", word) if len(word) > 5 else word
    return cut[:5]


def _stems(units: frozenset[str]) -> frozenset[str]:
    return frozenset(_stem(u) for u in units)


_ANTONYM_GROUPS: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(a.split()), frozenset(b.split()))
    for a, b in (
        ("higher high highest", "lower low lowest"),
        ("more most", "less least fewer fewest"),
        ("increase increases increased increasing raise raises raised rise rises rose", "decrease decreases "
         "decreased decreasing lower lowers lowered reduce reduces reduced fall falls fell drop drops dropped"),
        ("faster fast quicker quick quickly speeds speed", "slower slow slowly slows"),
        ("open opens opened", "closed close closes shut"),
        ("before earlier early", "after later late"),
        ("always", "never"),
        ("larger large largest bigger big biggest", "smaller small smallest"),
        ("above", "below"),
        ("maximum max", "minimum min"),
        ("first", "last"),
        ("allowed allows allow permitted", "forbidden forbids prohibited banned"),
        ("hot warm", "cold cool"),
        ("longer long", "shorter short"),
        ("heavier heavy", "lighter light"),
        ("cheaper cheap", "expensive"),
        ("add adds added", "remove removes removed delete deletes deleted"),
        ("enable enables enabled", "disable disables disabled"),
        ("accept accepts accepted", "reject rejects rejected"),
        ("include includes included", "exclude excludes excluded"),
        ("north northern", "south southern"),
        ("east eastern", "west western"),
        ("possible", "impossible"),
        ("required mandatory", "optional"),
        ("public", "private"),
        ("same identical", "different"),
        ("strong stronger", "weak weaker"),
        ("positive", "negative"),
        ("win wins won", "lose loses lost"),
        ("buy buys bought", "sell sells sold"),
        ("safe", "dangerous unsafe"),
        ("legal", "illegal"),
        ("success successful", "failure failed unsuccessful"),
    )
)  # fmt: skip
"""English words and their opposites: "higher" where the passage says "lower" reverses the claim as a negation
does. Not true/false nor inside/outside: technical text uses both of each in one breath (`text=True`; "only
inside a coroutine; outside one it is an error")."""


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


_ANTONYM_WORDS = frozenset(w for left, right in _ANTONYM_GROUPS for w in left | right)


def _antonym(ours: set[str] | frozenset[str], other: set[str] | frozenset[str]) -> tuple[str, str] | None:
    """A word of `ours` whose opposite `other` uses (and `ours` does not); both are word sets."""
    for left, right in _ANTONYM_GROUPS:
        for a, b in ((left, right), (right, left)):
            said, opposite = ours & a, other & b
            if said and opposite and not (ours & b) and not (other & a):
                return min(said), min(opposite)
    return None


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


@lru_cache(maxsize=4096)
def _fine_clauses(passage: str, language: str | None) -> tuple[tuple[str, bool, frozenset[str]], ...]:
    """Each clause of the passage (cut at "and" too) with its polarity and stems; cached per passage."""
    return tuple(
        (clause, has_negation(clause, language), _stems(_without_negation(clause, language)))
        for sentence in _SENTENCE_END.split(passage)
        for clause in _polarity_clauses(sentence)
    )


@lru_cache(maxsize=4096)
def _coarse_clauses(passage: str, language: str | None) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """The clauses of the passage (cut at commas and contrastive words) that use a word with an opposite, each
    as (its words, its stems); cached per passage."""
    out = []
    for sentence in _SENTENCE_END.split(passage):
        for clause in _clauses(sentence):
            words = frozenset(_words(clause))
            if words & _ANTONYM_WORDS:
                out.append((words, _stems(_without_negation(clause, language))))
    return tuple(out)


_NOT_WORD = re.compile(r"[\W_]+")


@lru_cache(maxsize=4096)
def _plain_text(text: str) -> str:
    """`text` as its lowercased words, one space apart: how a copied clause is found in its chunk, whatever the
    punctuation, Markdown or line breaks around or inside it (a full stop the answer dropped included)."""
    return _NOT_WORD.sub(" ", text.lower()).strip()


def _polarity(
    statement: str, passage: str, language: str | None, whole: str | None = None
) -> Conflict | None:
    """A clause of the statement that makes the same claim as a clause of the passage (SAME_CLAIM_SHARE of its
    words, negations aside) with the opposite polarity or an opposite word; not when a clause of `whole` (the
    chunk the sentence is from) makes the claim at least as closely with the statement's polarity (a chunk
    that says "treats NaNs as zero" and then "does not change when NaNs occur")."""
    theirs = _fine_clauses(passage, language)
    everywhere = _fine_clauses(whole, language) if whole and whole != passage else theirs
    english = (language or "en").startswith("en")
    verbatim = f" {_plain_text(whole or passage)} "
    for part in _polarity_clauses(statement):
        mine = _stems(_without_negation(part, language))
        if not mine or f" {_plain_text(part)} " in verbatim:
            continue  # a clause the chunk holds word for word has the chunk's polarity, however either is cut
        clause, negated, words = max(theirs, key=lambda c: len(mine & c[2]))
        same = coverage(mine, words)
        mine_negated = has_negation(part, language)
        if mine_negated != negated and same >= SAME_CLAIM_SHARE:
            if (mine_negated and _only_without(part, language) and _WITHOUT.search(passage)) or (
                negated and _only_without(clause, language) and _WITHOUT.search(statement)
            ):
                continue  # both texts say "without" (in clauses cut differently): a description, not a flip
            if any(n == mine_negated and coverage(mine, w) >= same for _, n, w in everywhere):
                continue  # the chunk states the claim as closely with the statement's polarity elsewhere
            return Conflict(
                "negation",
                "the statement is negated where the passage is not"
                if mine_negated
                else "the passage is negated where the statement is not",
            )
    if not english:
        return None
    coarse = _coarse_clauses(passage, language)
    for part in _clauses(statement):
        ours = _words(part)
        if not ours & _ANTONYM_WORDS:
            continue
        mine = _stems(_without_negation(part, language))
        if mine:
            for other, other_words in coarse:
                flipped = _antonym(ours, other)
                if flipped is None:
                    continue
                flipped_stems = {_stem(w) for w in flipped}
                rest, other_rest = mine - flipped_stems, other_words - flipped_stems
                same_claim = bool(rest) and coverage(rest, other_words) >= 0.5
                restated = bool(other_rest) and other_rest <= mine  # "closed on Mondays" in "open on Mondays"
                if same_claim or restated:
                    return Conflict(
                        "antonym", f"the statement says {flipped[0]!r} where the passage says {flipped[1]!r}"
                    )
    return None
