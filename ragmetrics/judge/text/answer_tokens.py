"""Answer tokens for the deterministic answer metrics: SQuAD's normalisation, and words in any script.

Why two tokenisers: exact match and token F1 are defined by the official SQuAD evaluation script (lower-case,
drop ASCII punctuation, drop the English articles a/an/the, split on whitespace), and a team comparing with
published figures needs exactly that. ROUGE-L is defined by Google's `rouge-score` (lower-case, every run of
characters other than a-z and 0-9 is a separator). Both were written for English and give nothing useful for
Japanese or Chinese (no spaces) or for a script outside a-z. So, for text in any language:

- on text without Chinese, Japanese or Korean characters and, for ROUGE, within ASCII, the result is exactly
  the reference implementation's (tested on random texts against both);
- Chinese, Japanese (kana too) and Korean (Hangul syllables) characters are one token each, as MLQA's and
  KorQuAD's evaluation scripts do, and Unicode punctuation is dropped with the ASCII one;
- ROUGE's separators are every character that is not a letter or digit in any script (so "café" is one
  token, where rouge-score would read "caf").
"""

from __future__ import annotations

import re
import string
import unicodedata

__all__ = ["normalize_answer", "rouge_tokens", "squad_tokens"]

_ASCII_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CJK = re.compile(
    r"([\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff])"
)
_NOT_ALNUM_ASCII = re.compile(r"[^a-z0-9]+")


def _is_punctuation(ch: str) -> bool:
    return ch in _ASCII_PUNCTUATION or (ord(ch) > 127 and unicodedata.category(ch).startswith("P"))


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower-case, punctuation removed, English articles removed, whitespace collapsed.

    Non-ASCII punctuation is removed too only when the text has Chinese, Japanese or Korean characters, so
    that any other text normalises exactly as the official script does.
    """
    lowered = text.lower()
    if _CJK.search(lowered):
        no_punct = "".join(ch for ch in lowered if not _is_punctuation(ch))
    else:
        no_punct = "".join(ch for ch in lowered if ch not in _ASCII_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", no_punct).split())


def squad_tokens(text: str) -> list[str]:
    """Tokens for SQuAD's exact match and F1: whitespace-separated after `normalize_answer`, and every
    Chinese, Japanese or Korean character a token of its own."""
    normalized = normalize_answer(text)
    if _CJK.search(normalized):
        normalized = _CJK.sub(r" \1 ", normalized)
    return normalized.split()


def rouge_tokens(text: str) -> list[str]:
    """Tokens for ROUGE-L: lower-cased runs of letters and digits (rouge-score's rule on ASCII text), every
    Chinese, Japanese or Korean character a token of its own."""
    lowered = text.lower()
    if lowered.isascii():
        return _NOT_ALNUM_ASCII.sub(" ", lowered).split()
    spaced = "".join(ch if ch.isalnum() else " " for ch in lowered)
    return _CJK.sub(r" \1 ", spaced).split()
