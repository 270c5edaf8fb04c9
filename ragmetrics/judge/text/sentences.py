"""Deterministic sentence and statement splitting, shared by every judge backend.

Context relevancy divides by the number of context sentences and context recall by the number of
reference statements, so both backends must cut text the same way, without a model and without
locale-dependent behaviour. The rules are plain and documented here:

- Paragraph breaks (a blank line) and list items (lines starting with -, *, • or "1." / "1)") always
  end a sentence; other line breaks are spaces.
- Inside a paragraph a sentence ends at ".", "!", "?" or "…" (optionally followed by closing quotes or
  brackets) when whitespace and then an uppercase letter, digit, quote, bracket or backtick follow.
- No break after common abbreviations ("e.g.", "Dr.", "approx."), capital initials ("J. Smith") or
  inside numbers and dotted names ("3.14", "os.path.join"), since those have no whitespace after the dot.
- A statement is a sentence, further cut at semicolons when both sides have at least
  `MIN_STATEMENT_WORDS` words: "X is fast; it uses C" is two claims, "a; b" is one.
"""

from __future__ import annotations

import re

__all__ = ["MIN_STATEMENT_WORDS", "split_sentences", "split_statements"]

MIN_STATEMENT_WORDS = 3

_ABBREVIATIONS = frozenset(
    {
        "e.g", "i.e", "etc", "vs", "cf", "al", "approx", "ca", "fig", "figs", "eq", "eqs",
        "vol", "p", "pp", "ch", "sec", "ref", "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "inc",
        "ltd", "co", "corp", "dept", "est", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
        "sept", "oct", "nov", "dec", "u.s", "u.k", "a.m", "p.m", "ph.d", "viz", "resp",
    }
)  # fmt: skip

_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*•]|\d{1,3}[.)])[ \t]+")
_BOUNDARY = re.compile(r"""([.!?…]+)(["')\]»”’]*)(\s+)(?=["'(\[«“‘`A-Z0-9À-ÖØ-Þ])""")
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


def _is_abbreviation(before: str, dots: str) -> bool:
    if dots != ".":
        return False
    match = _WORD_BEFORE.search(before)
    if match is None:
        return False
    word = match.group(1).lstrip("\"'([«“‘")
    if len(word) == 1 and word.isupper():  # an initial: "J. Smith"
        return True
    return word.lower() in _ABBREVIATIONS


def split_sentences(text: str) -> list[str]:
    """The sentences of `text` in order, whitespace-normalised; [] for blank text."""
    sentences: list[str] = []
    for block in _blocks(text):
        start = 0
        for match in _BOUNDARY.finditer(block):
            if _is_abbreviation(block[start : match.start()], match.group(1)):
                continue
            end = match.end(2)
            sentence = block[start:end].strip()
            if sentence:
                sentences.append(sentence)
            start = match.end()
        tail = block[start:].strip()
        if tail:
            sentences.append(tail)
    return sentences


def split_statements(text: str) -> list[str]:
    """The atomic claims of `text`: its sentences, cut at semicolons between two full clauses."""
    statements: list[str] = []
    for sentence in split_sentences(text):
        parts = [p.strip() for p in sentence.split(";")]
        merged: list[str] = []
        for part in parts:
            if not part:
                continue
            if merged and (
                len(part.split()) < MIN_STATEMENT_WORDS or len(merged[-1].split()) < MIN_STATEMENT_WORDS
            ):
                merged[-1] = f"{merged[-1]}; {part}"
            else:
                merged.append(part)
        statements.extend(merged)
    return statements
