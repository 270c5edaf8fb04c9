"""The numbers a statement or passage states, and whether one matches another (`support`'s module doc).

Why its own module: a number is compared as a value, not as a word ("1,000" and "1000" are one number, "4.5
billion" rounds "4.54 billion", "about 8,850" rounds "8,849"), and every check of `support` (support, agreement,
coverage) reads numbers the same way from here."""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["numbers_in"]


# Digits with optional thousands groups and decimals: 1,000,000 / 1.000.000 / 2.5 / 2,5 / 6½.
_NUMBER = re.compile(r"(?<![\d.,])\d+(?:[.,  ]\d{3})*(?:[.,]\d+)?")
_GROUPS = re.compile(r"(?<=\d)[,.  ](?=\d{3}(?!\d))")


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
