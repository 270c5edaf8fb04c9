"""Deterministic sentence and statement splitting in any language, shared by every judge backend.

Context relevancy divides by the number of context sentences and context recall and faithfulness by the
number of statements, so both backends must cut text the same way, without a model. The rules:

- Paragraph breaks (a blank line) and list items (lines starting with -, *, • or "1." / "1)") always end a
  sentence; other line breaks are spaces. (Ours: no segmenter knows Markdown lists.)
- Inside a paragraph, break candidates come from `sentencex` (Wikimedia's rule-based segmenter, about 300
  languages, no model) in the text's language (`language` when given, else the script-based detection of
  `ragmetrics.judge.text.language`), plus three kinds it misses: a sentence ending inside brackets
  ("(Note.) Next", （注。）本文), a CJK ellipsis (待って…何) and a stop followed by a space and a capitalised
  word ("in y. If", "< 256. Bytes"). Chosen on tests/data/segmentation_cases.jsonl against the old regex
  and pysbd (benchmarks/bench_segmentation.py, figures in docs/local_judge.md).
- Every candidate is then checked by `_continues`, which drops breaks inside a sentence: after an
  abbreviation or initial ("approx.", "т.е.", "z. B.", "J. Smith"; per-language lists), before a closing
  quote or a word that continues the quoted sentence (「はい。」と答えた。, "내일 올게."라고), after a stop with no
  space ("object.__getattr__", "config.yaml"), before lowercase words, punctuation or footnote markers, and
  where no stop precedes at all. In a paragraph written without capitals (lower-cased collections), a stop
  after a word and a space is a break candidate and a lower-case word may start a sentence.
- A statement is a sentence, further cut at semicolons (";", "；", "؛") when both sides have at least
  `MIN_STATEMENT_WORDS` words (in scripts without spaces, two characters count as a word).
"""

from __future__ import annotations

import re
from functools import lru_cache

from ragmetrics.judge.text.language import detect_language

__all__ = ["MIN_STATEMENT_WORDS", "split_sentences", "split_statements"]

MIN_STATEMENT_WORDS = 3

# No sentence ends after these (lowercased, without the final "."); per language on top of the common set,
# since "str." (Straße) or "s." (siehe) end English sentences.
_ABBREVIATIONS = frozenset(
    {
        "e.g", "i.e", "etc", "vs", "cf", "al", "approx", "ca", "fig", "figs", "eq", "eqs",
        "vol", "p", "pp", "ch", "sec", "ref", "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "inc",
        "ltd", "co", "corp", "dept", "est", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
        "sept", "oct", "nov", "dec", "u.s", "u.k", "a.m", "p.m", "ph.d", "viz", "resp", "no", "nos",
    }
)  # fmt: skip
_GERMAN_ABBREVIATIONS = frozenset(
    {
        "z.b", "b", "u.a", "a", "d.h", "h", "s", "bzw", "usw", "ggf", "vgl", "nr", "abs", "evtl",
        "inkl", "kap", "mio", "mrd", "tsd", "jh", "jhd", "bd", "hrsg", "str", "tel", "zb", "dh",
    }
)  # fmt: skip
_RUSSIAN_ABBREVIATIONS = frozenset(
    {
        "т.е", "е", "т.д", "д", "т.п", "п", "ок", "рис", "см", "г", "гг", "др", "пр", "стр", "им",
        "ул", "тыс", "млн", "млрд", "руб", "коп", "проф", "акад", "ср", "т.к", "к", "т.н", "н",
    }
)  # fmt: skip
_LANGUAGE_ABBREVIATIONS = {"de": _GERMAN_ABBREVIATIONS, "ru": _RUSSIAN_ABBREVIATIONS}
# "и т.д." / "и т.п." / "и др." / "etc." end a sentence when a capitalised word follows.
_SENTENCE_FINAL_ABBREVIATIONS = (" т.д.", " т.п.", " др.", " etc.")
_CLOSING_QUOTES = "」』”“’\"'»›"
_CLOSING_BRACKETS = ")）]】"
_TERMINATORS = ".!?。！？…"
_CONTINUATION_START = frozenset("|)]}），、,;:.!?…/-")
_CJK_LETTER = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af"
# Breaks the segmenter misses, proposed here and then checked like its own (`_continues`):
# a sentence ending inside brackets ("(Note.) Next", （注。）本文), a CJK ellipsis (待って…何), and a stop after a
# word followed by a space and a capitalised word ("in y. If", "< 256. Bytes", "и т.д. Это").
_EXTRA_BREAKS = re.compile(
    r"(?<=[.!?。！？…][)）\]】])\s*(?=\S)"
    rf"|(?<=…)(?=[{_CJK_LETTER}])"
    r"|(?:(?<=[^\W_][.!?])|(?<=[\"”’)\]][.!?])|(?<=[^\W_][.!?][\"”’»“)\]]))\s+(?=[A-ZÀ-ÖØ-ÞА-ЯЁ](?:[a-zß-ÿа-яё]|\s[a-zß-ÿа-яё]))"
)
# In a paragraph without capitals: a stop after a word (not a number: "1.5", "fig. 3") and a space.
_UNCASED_BREAKS = re.compile(r"(?<=[^\W\d_]{2}[.!?])\s+(?=[^\W\d_])")
_GERMAN_ORDINAL = re.compile(r"(?:^|\s)\d{1,2}\.$")
_SEMICOLON = re.compile(r"[;；؛]")
_CJK_CHARACTER = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*•]|\d{1,3}[.)])[ \t]+")
_WORD_BEFORE = re.compile(r"(\S+)$")
_SPACES = re.compile(r"\s+")


def _blocks(text: str) -> list[str]:
    """Paragraphs and list items, each with its inner line breaks turned into spaces."""
    blocks: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        current: list[str] = []
        for line in paragraph.split("\n"):
            if _LIST_ITEM.match(line):
                if current:
                    blocks.append(" ".join(current))
                current = [_LIST_ITEM.sub("", line, count=1)]
            else:
                current.append(line)
        if current:
            blocks.append(" ".join(current))
    return [b for b in (_SPACES.sub(" ", b).strip() for b in blocks) if b]


def _is_abbreviation(before: str, language: str) -> bool:
    """Whether `before` (text up to a final ".") ends with an abbreviation or an initial."""
    match = _WORD_BEFORE.search(before.rstrip("."))
    if match is None:
        return False
    word = match.group(1).lstrip("\"'([«“‘„")
    if len(word) == 1 and word.isupper():  # an initial: "J. Smith", "Д. И. Менделеев"
        return True
    word = word.lower()
    return word in _ABBREVIATIONS or word in _LANGUAGE_ABBREVIATIONS.get(language, frozenset())


def split_sentences(text: str, language: str | None = None) -> list[str]:
    """The sentences of `text` in order, whitespace-normalised; [] for blank text. `language` is an ISO 639-1
    code ("ja", "ru", ...); unset, each paragraph's language is detected from its script."""
    sentences: list[str] = []
    for block in _blocks(text):
        sentences.extend(_segment_block(block, language or detect_language(block)))
    return sentences


@lru_cache(maxsize=65536)
def _segment_block(block: str, language: str) -> tuple[str, ...]:
    """One paragraph's sentences (cached: contexts repeat across samples and metrics): the segmenter's breaks
    and ours (`_EXTRA_BREAKS`), each kept unless `_continues` says the sentence goes on across it."""
    from sentencex import segment

    candidates: set[int] = set()
    offset = 0
    for piece in segment(language, block):  # the pieces concatenate to the block (tested)
        offset += len(piece)
        candidates.add(offset)
    candidates.update(m.end() for m in _EXTRA_BREAKS.finditer(block))
    uncased = _is_uncased(block)
    if uncased:  # lower-cased text (public collections often are): a stop and a space may end a sentence
        candidates.update(m.end() for m in _UNCASED_BREAKS.finditer(block))
    cuts = sorted(c for c in candidates if 0 < c < len(block))
    sentences: list[str] = []
    start = 0
    for position, cut in enumerate(cuts):
        previous = block[start:cut]
        following = block[cut : cuts[position + 1] if position + 1 < len(cuts) else len(block)]
        if not previous.strip() or not following.strip():
            continue
        gap = previous[-1:].isspace() or following[:1].isspace()
        if _continues(previous.strip(), gap, following.strip(), language, uncased=uncased):
            continue
        sentences.append(previous.strip())
        start = cut
    tail = block[start:].strip()
    if tail:
        sentences.append(tail)
    return tuple(sentences)


def _is_uncased(block: str) -> bool:
    """Whether a paragraph of a cased script is written without capitals (three or more words, none capitalised):
    its sentences cannot be told by the capital that starts them."""
    letters = [ch for ch in block if ch.isalpha() and (ch.islower() or ch.isupper())]
    return len(block.split()) >= 3 and bool(letters) and not any(ch.isupper() for ch in letters)


def _continues(previous: str, gap: bool, following: str, language: str, *, uncased: bool = False) -> bool:
    """Whether a proposed break lies inside a sentence (each rule names what it fixes); in an `uncased` block a
    lower-case word after a stop and a space starts a sentence."""
    first = following[:1]
    if previous.endswith(".") and _is_abbreviation(previous, language):
        # "Dr. Smith", "т.е. это", but "... и т.д. Это" ends a sentence
        return not (previous.endswith(_SENTENCE_FINAL_ABBREVIATIONS) and first.isupper())
    if language == "de" and _GERMAN_ORDINAL.search(previous) and first.isupper():
        return True  # "Der 1. Platz", "am 3. Oktober"
    if not gap and previous[-1:] in ".?!" and first.isascii() and first not in _CLOSING_QUOTES:
        return True  # "object.__getattr__", "config.yaml", "<params>?<query>": no space, no end
    if previous[-1:] not in _TERMINATORS + _CLOSING_QUOTES + _CLOSING_BRACKETS:
        return True  # "Character named *name* in the |" then "(5) |": no sentence ends without a stop
    if first in _CONTINUATION_START or not any(ch.isalnum() for ch in following):
        return True  # ". [2]" then ".", "numbers. | +---", "f(...) ------": no sentence starts so
    if not gap and first in _CLOSING_QUOTES:
        return True  # '"x(arg1, ...)' then '" roughly': the quote closes what came before
    if not gap and len(previous) >= 2 and previous[-1] in _CLOSING_QUOTES and previous[-2] in _TERMINATORS:
        if language == "ja":  # 「はい。」と答えた: a particle (hiragana) continues the sentence
            return "\u3040" <= first <= "\u309f"
        if language == "zh":  # “我明天来。”我们等他: a new sentence
            return False
        return first.isalpha()  # "내일 올게."라고, and lowercase continuations elsewhere
    stop = previous.rstrip(_CLOSING_QUOTES + _CLOSING_BRACKETS)[
        -1:
    ]  # "(not recommended!) for", "f(...) yields"
    return bool(gap and first.islower() and stop in ".!?" and language not in ("ja", "zh") and not uncased)


def split_statements(text: str, language: str | None = None) -> list[str]:
    """The atomic claims of `text`: its sentences, cut at semicolons (";", "；", "؛") between two full
    clauses (`MIN_STATEMENT_WORDS` words each; in Chinese and Japanese two characters count as a word)."""
    statements: list[str] = []
    for sentence in split_sentences(text, language):
        spans: list[list[int]] = []  # [start, end) of each statement in the sentence
        start = 0
        for end in [m.start() for m in _SEMICOLON.finditer(sentence)] + [len(sentence)]:
            part = sentence[start:end]
            if part.strip():
                if spans and (
                    _words(part) < MIN_STATEMENT_WORDS
                    or _words(sentence[spans[-1][0] : spans[-1][1]]) < MIN_STATEMENT_WORDS
                ):
                    spans[-1][1] = end
                else:
                    spans.append([start, end])
            elif spans:
                spans[-1][1] = end
            start = end + 1
        statements.extend(sentence[a:b].strip() for a, b in spans)
    return statements


def _words(text: str) -> int:
    """Words in `text`; in scripts written without spaces (Chinese, Japanese) every two characters count as
    one, so "缓存可以减少延迟" (8 characters) is 4 words."""
    count = 0
    for token in text.split():
        cjk = len(_CJK_CHARACTER.findall(token))
        count += (cjk + 1) // 2 + (1 if len(token) > cjk and not cjk else 0)
    return count
