"""Is a statement supported by the passage it is most similar to, or only similar to it?

Why: embedding similarity does not see the details that make a claim true. "The Berlin Wall fell in 1991"
is as close to "The Berlin Wall fell in 1989" as a paraphrase is, so a judge that decides support by cosine
alone passes planted contradictions and, on public summaries labelled by people (QAGS), cannot tell faithful
sentences from unfaithful ones (ROC AUC 0.52). What it misses is what a reader checks first: the numbers, the
names and the polarity. A statement is unsupported when, against its best-matching passage:

- it states a number the passage does not (1991 vs 1989; "1,000" and "1000" are one number);
- it names something (a capitalised word inside the sentence, in scripts with capitals) the passage does
  not mention, so a name swapped for another fails;
- its polarity differs: it is negated where the passage's closest clause is not, or the other way round
  (negation words of each supported language), or it holds the opposite of a word the passage uses ("higher"
  where the passage says "lower"), while the two otherwise make the same claim;
- what it adds to the question is not in the passage: most of the words it does not take from the question
  ("Insulin is made by the liver" against a passage on the pancreas), or most of one clause it appends ("...
  and is powered by burning coal").

A number matches when the passage states it (in digits or, in English, in words), or rounds it: "4.5 billion"
for "4.54 billion" always, "about 8,850" for "8,849" when the statement says it is approximate ("about",
"roughly", "etwa", "около", "约", ...); a year rounded without such a word is another year.

The passage is the chunk holding the best-matching sentence: a detail stated a few sentences away still
supports the statement, while a name or number absent from the chunk does not.

The checks are lexical on purpose: they are cheap, deterministic, language-aware through small word lists,
and their reasons say exactly which detail was not found.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from ragmetrics.judge.text.signals import STOP_WORDS as _STOP_WORDS
from ragmetrics.judge.text.signals import content_units, coverage

__all__ = [
    "Conflict",
    "conflicts",
    "covers",
    "disagreements",
    "grounded_share",
    "has_negation",
    "joint_support",
    "numbers_in",
    "resolve_pronoun",
    "starts_with_pronoun",
]

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
SWAP_WORDS = 3
"""`disagreements`: a claim of at most this many new words is swapped when most are missing from the statement,
a longer one when two thirds are."""
SUPPORTED_COVER = 0.8
"""`covers`: the share of the other text's new words and numbers a statement must carry."""
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


@dataclass(frozen=True)
class Conflict:
    """One detail of the statement the passage does not bear out."""

    kind: Literal["number", "name", "negation", "antonym", "unsupported", "addition"]
    detail: str

    def __str__(self) -> str:
        if self.kind in ("negation", "antonym", "unsupported", "addition"):
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


_UNITS_EN = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]  # fmt: skip
_TENS_EN = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_NUMBER_WORD = re.compile(
    r"\b(?:(" + "|".join(_TENS_EN) + r")(?:[- ](" + "|".join(_UNITS_EN[1:10]) + r"))?|(" + "|".join(_UNITS_EN)
    + r")|(hundred|thousand|dozen))\b",
    re.IGNORECASE,
)  # fmt: skip
_WORD_VALUES = {"hundred": 100, "thousand": 1000, "dozen": 12}
_SPELLED = frozenset([*_UNITS_EN, *_TENS_EN, *_WORD_VALUES])


def _spelled_numbers(text: str) -> set[str]:
    """English numbers written in words ("eight", "twenty-one", "a dozen"); "one" only in a passage's words
    would be a pronoun as often as a number, so callers drop it from statements."""
    found: set[str] = set()
    for m in _NUMBER_WORD.finditer(text):
        tens, unit, single, big = m.groups()
        if tens:
            value = 10 * (_TENS_EN.index(tens.lower()) + 2) + (_UNITS_EN.index(unit.lower()) if unit else 0)
        elif single:
            value = _UNITS_EN.index(single.lower())
        else:
            value = _WORD_VALUES[big.lower()]
        found.add(str(value))
    return found


@lru_cache(maxsize=65536)
def numbers_in(text: str) -> frozenset[str]:
    """The numbers written in digits in `text`, canonical (see `_number_value`)."""
    return frozenset(_number_value(m.group()) for m in _NUMBER.finditer(text))


_APPROXIMATE = re.compile(
    r"\b(?:about|around|roughly|approximately|approx|nearly|almost|some|over|under|close to|more than|less than|"
    r"circa|ca|etwa|ungefähr|rund|fast|knapp|environ|près de|presque|aproximadamente|casi|unos|unas|cerca de|"
    r"circa|quasi|cerca|около|примерно|почти|более|менее)\b|[~≈]|约|大约|大約|およそ|約|ほぼ|약|대략",
    re.IGNORECASE,
)
"""Words that make a number approximate; a rounded number then matches the passage's exact one."""


def _decimals(value: str) -> int:
    return len(value.partition(".")[2])


def _number_matches(value: str, stated: frozenset[str], approximate: bool) -> bool:
    """Whether the statement's `value` is one of the passage's numbers, or a rounding of one (see module doc)."""
    if value in stated:
        return True
    try:
        mine = float(value)
    except ValueError:
        return False
    places = _decimals(value)
    zeros = len(value) - len(value.rstrip("0")) if places == 0 and value != "0" else 0
    for other in stated:
        theirs = float(other)
        if places < _decimals(other) and round(theirs, places) == mine:
            return True  # fewer decimals: 4.5 for 4.54
        if approximate and zeros and places == 0 and round(theirs, -zeros) == mine:
            return True  # about 8,850 for 8,849; about 21,200 for 21,196
        if approximate and theirs and abs(theirs - mine) / abs(theirs) <= 0.02:
            return True  # roughly 4.6 for 4.57
    return False


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


def _statement_numbers(statement: str, language: str | None) -> frozenset[str]:
    found = set(numbers_in(statement))
    if (language or "en").startswith("en"):
        found |= _spelled_numbers(statement) - {"0", "1"}  # "zero numbers", "one of them": rarely a count
    return frozenset(found)


@lru_cache(maxsize=4096)
def _passage_numbers(passage: str, language: str | None) -> frozenset[str]:
    found = set(numbers_in(passage))
    if (language or "en").startswith("en"):
        found |= _spelled_numbers(passage)
    return frozenset(found)


def grounded_share(statement: str, passage: str, language: str | None = None) -> float:
    """Share of the statement's content words and numbers that `passage` holds (words in any inflection,
    numbers as `conflicts` matches them); 0 for a statement with neither. A terse answer ("About 8 minutes and
    20 seconds.", "The pancreas.") is far from every sentence in embedding space but wholly in its passage."""
    lowered = passage.lower()
    words = _claim_units(statement)
    numbers = _statement_numbers(statement, language)
    total = len(words) + len(numbers)
    if not total:
        return 0.0
    stated = _passage_numbers(passage, language)
    approximate = _APPROXIMATE.search(statement) is not None
    hits = sum(_found(w, lowered) for w in words)
    hits += sum(_number_matches(n, stated, approximate) for n in numbers)
    return hits / total


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


def conflicts(
    statement: str,
    passage: str,
    best_sentence: str,
    language: str | None = None,
    question: str | None = None,
    *,
    additions: bool = True,
) -> list[Conflict]:
    """What in `statement` its best-matching `passage` (the chunk that holds its most similar sentence) does
    not bear out (module doc). `question`, when given, is what the statement may restate without the passage
    saying it. Polarity is compared clause by clause with `best_sentence` (the whole passage when empty): in a
    long passage some clause elsewhere shares most words with any statement. `additions=False` leaves out the
    checks on words the statement adds (for a reference statement, which people write in their own words: the
    retrieved text need not share them). Empty when nothing conflicts."""
    found: list[Conflict] = []
    stated = _passage_numbers(passage, language)
    approximate = _APPROXIMATE.search(statement) is not None
    missing = sorted(
        n for n in _statement_numbers(statement, language) if not _number_matches(n, stated, approximate)
    )
    found.extend(Conflict("number", n) for n in missing)
    lowered = passage.lower()
    asked = frozenset(_words(question or ""))
    english = (language or "en").startswith("en")
    for name in _names(statement, asked, initial=english):
        stem = _POSSESSIVE.sub("", name.lower())
        if len(stem) >= 3 and stem[: max(3, len(stem) - 2)] not in lowered:
            found.append(Conflict("name", name))
    polarity = _polarity(statement, best_sentence or passage, language, passage)
    if polarity is not None:
        found.append(polarity)
    if found or not additions:
        return found
    asked_text = (question or "").lower()
    new = [u for u in _claim_units(statement) if not (asked_text and _found(u, asked_text))]
    absent = [u for u in new if not _found(u, lowered)]
    if new and len(absent) / len(new) > 0.5:
        listed = ", ".join(repr(u) for u in sorted(absent)[:4])
        found.append(Conflict("unsupported", f"most of what it adds is not in the passage: {listed}"))
        return found
    addition = _added_part(statement, lowered, asked_text)
    if addition is not None:
        found.append(addition)
    return found


def _added_part(statement: str, lowered: str, asked_text: str) -> Conflict | None:
    """A part after the statement's first (cut at commas and conjunctions) most of whose words beyond the
    question the lowercased text lacks: "... and is powered by burning coal"."""
    parts = [p for p in _ADDITION_BREAK.split(statement) if p and p.strip()]
    for part in parts[1:]:  # the first part is the main claim, checked with the whole statement
        units = _claim_units(part)
        own = [u for u in units if not (asked_text and _found(u, asked_text))]
        missing_words = [u for u in own if not _found(u, lowered)]
        if len(units) >= 2 and missing_words and len(missing_words) / len(own) > 0.5:
            return Conflict("addition", f"the part {part.strip()!r} is not in the passage")
    return None


def _new_units(text: str, question: str) -> set[str]:
    asked = question.lower()
    return {u for u in _claim_units(text) if not (asked and _found(u, asked))}


def disagreements(
    statement: str,
    other: str,
    language: str | None = None,
    question: str | None = None,
    *,
    rewording: bool = False,
) -> list[Conflict]:
    """Where `statement` says otherwise than `other` (an answer's statement against the reference, or the
    reference's against the answer), tolerating what either adds: answer correctness asks whether the two
    agree, not whether one is contained in the other.

    A disagreement is a polarity or opposite word on the same claim (as in `conflicts`), or a swap: each side
    holds numbers, names or (beyond the question's words) content words the other lacks, and most of the
    other's are missing from the statement ("2 billion" where the reference says "4.54 billion"; "the liver"
    where it says "the pancreas"). A statement that adds a detail the other does not mention ("in London")
    while keeping the other's ("Fleming, 1928") is no disagreement. With `rewording` (the two are near in
    embedding space) words swapped for others are taken as synonyms; numbers, names and polarity still count."""
    found: list[Conflict] = []
    polarity = _polarity(statement, other, language)
    if polarity is not None:
        found.append(polarity)
    approximate = _APPROXIMATE.search(statement) is not None or _APPROXIMATE.search(other) is not None
    mine_numbers, their_numbers = _statement_numbers(statement, language), _passage_numbers(other, language)
    extra = sorted(n for n in mine_numbers if not _number_matches(n, their_numbers, approximate))
    lacking = [n for n in _statement_numbers(other, language)
               if not _number_matches(n, _passage_numbers(statement, language), approximate)]  # fmt: skip
    if extra and lacking and len(lacking) / max(1, len(_statement_numbers(other, language))) > 0.5:
        found.append(Conflict("number", f"{extra[0]!r} where the other says {sorted(lacking)[0]!r}"))
    english = (language or "en").startswith("en")
    asked = frozenset(_words(question or ""))
    mine_names = [n for n in _names(statement, asked, initial=english) if n.lower() not in other.lower()]
    their_names = [n for n in _names(other, asked, initial=english) if n.lower() not in statement.lower()]
    if (
        mine_names
        and their_names
        and len(their_names) / max(1, len(_names(other, asked, initial=english))) > 0.5
    ):
        found.append(Conflict("name", f"{mine_names[0]!r} where the other says {their_names[0]!r}"))
    if not found and not rewording:
        theirs = _new_units(other, question or "")
        mine = _new_units(statement, question or "")
        # A short claim has a slot one word fills ("the pancreas"); a longer one is swapped only when two thirds
        # of its words are missing, since a reworded one keeps some.
        lowered = statement.lower()
        absent = sum(not _found(u, lowered) for u in theirs) / len(theirs) if theirs else 0.0
        swapped = absent > 0.5 if len(theirs) <= SWAP_WORDS else absent > 2 / 3
        if swapped and any(not _found(u, other.lower()) for u in mine):
            missing = sorted(u for u in theirs if not _found(u, statement.lower()))[:3]
            added = sorted(u for u in mine if not _found(u, other.lower()))[:3]
            found.append(
                Conflict("unsupported", f"says {', '.join(added)} where the other says {', '.join(missing)}")
            )
    if not found:
        addition = _added_part(statement, other.lower(), (question or "").lower())
        if addition is not None:
            found.append(addition)
    return found


def covers(statement: str, other: str, language: str | None = None, question: str | None = None) -> bool:
    """Whether `statement` carries most of what `other` adds to the question (its new content words and
    numbers): an answer sentence with the reference's fact and more besides covers it."""
    theirs = _new_units(other, question or "")
    numbers = _statement_numbers(other, language)
    total = len(theirs) + len(numbers)
    if not total:
        return False
    lowered = statement.lower()
    approximate = _APPROXIMATE.search(statement) is not None or _APPROXIMATE.search(other) is not None
    stated = _passage_numbers(statement, language)
    hits = sum(_found(u, lowered) for u in theirs) + sum(
        _number_matches(n, stated, approximate) for n in numbers
    )
    return hits / total >= SUPPORTED_COVER


JOINT_SHARE = 0.8
"""`joint_support`: the share of a part's content words and numbers the one chunk that supports it must hold."""


def joint_support(
    statement: str,
    chunks: list[str] | tuple[str, ...],
    language: str | None = None,
    question: str | None = None,
    *,
    additions: bool = True,
) -> list[int] | None:
    """The chunks (0-based) that support `statement` together, or None when they do not: RAGAS asks whether
    the context supports a statement, and the context is every chunk, so "Paris is the capital of France and
    the Seine flows through it" is supported by a chunk on each half.

    The statement is cut into its parts (at commas, semicolons and conjunctions, as `conflicts` cuts what it
    adds); every part that claims something must have one chunk holding `JOINT_SHARE` of its words and numbers
    (`grounded_share`) with nothing in the part conflicting with that chunk (`conflicts`), and the parts must
    need at least two chunks. Word by word over all the chunks at once would let a fabricated statement
    collect its words from here and there; part by part, each claim is still checked where it is made."""
    parts = [p for p in _ADDITION_BREAK.split(statement) if p and _claim_units(p) | numbers_in(p)]
    if len(parts) < 2 or len(chunks) < 2:
        return None
    used: list[int] = []
    for part in parts:
        holders = [
            k
            for k, chunk in enumerate(chunks)
            if grounded_share(part, chunk, language) >= JOINT_SHARE
            and not conflicts(part, chunk, "", language, question, additions=additions)
        ]
        if not holders:
            return None
        used.append(next((k for k in holders if k in used), holders[0]))
    together = sorted(set(used))
    return together if len(together) >= 2 else None
