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

from ragmetrics.judge.text.support_conflict import Conflict
from ragmetrics.judge.text.support_numbers import (
    _APPROXIMATE,
    _number_matches,
    _passage_numbers,
    _statement_numbers,
    numbers_in,
)
from ragmetrics.judge.text.support_polarity import (
    _ADDITION_BREAK,
    _polarity,
    _words,
    has_negation,
)
from ragmetrics.judge.text.support_words import (
    _POSSESSIVE,
    _claim_units,
    _found,
    _names,
    resolve_pronoun,
    starts_with_pronoun,
)

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

SWAP_WORDS = 3
"""`disagreements`: a claim of at most this many new words is swapped when most are missing from the statement,
a longer one when two thirds are."""
SUPPORTED_COVER = 0.8
"""`covers`: the share of the other text's new words and numbers a statement must carry."""


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
