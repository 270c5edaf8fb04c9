"""The BM25 tokenizer: bm25s's rules (lowercase, `\\b\\w\\w+\\b` words, stop words dropped before stemming), applied
one text at a time so a corpus is tokenised as a stream.

Kept identical to `bm25s.tokenize` on purpose: the persisted index and the in-memory bm25s index it replaces
must rank alike, and a test holds them to it. What decides the tokens (pattern, the stop-word list itself, the
stemmer) is spelled out by `Tokenizer.identity`, which is part of every BM25 index key.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from ragmetrics.errors import ConfigError

__all__ = ["TOKEN_PATTERN", "Tokenizer"]

TOKEN_PATTERN = r"(?u)\b\w\w+\b"


def _stopword_list(stopwords: str | Sequence[str] | None) -> tuple[str, ...]:
    if stopwords is None:
        return ()
    if isinstance(stopwords, str):
        try:
            from bm25s.tokenization import _infer_stopwords
        except ImportError as exc:
            raise ConfigError(
                "bm25 stopwords by language need the 'examples' extra (bm25s's lists): pip install bm25s, or "
                "give the stop words as a list"
            ) from exc
        try:
            return tuple(_infer_stopwords(stopwords))
        except ValueError as exc:
            raise ConfigError(f"bm25: stopwords {stopwords!r}: {exc}") from None
    return tuple(stopwords)


class Tokenizer:
    """Text -> tokens under fixed settings; `identity` names everything that decides the tokens."""

    def __init__(self, *, stopwords: str | Sequence[str] | None = "en", stem: bool = False) -> None:
        self._stopwords = frozenset(_stopword_list(stopwords))
        self._split = re.compile(TOKEN_PATTERN).findall
        self._stemmer: Any = None
        stemmer_id = "none"
        if stem:
            try:
                import Stemmer
            except ImportError as exc:
                raise ConfigError("bm25 option stem: true needs PyStemmer: pip install PyStemmer") from exc
            self._stemmer = Stemmer.Stemmer("english")
            stemmer_id = f"PyStemmer english {getattr(Stemmer, '__version__', '?')}"
        self._stems: dict[str, str] = {}
        words = "\n".join(sorted(self._stopwords)).encode("utf-8")
        self.identity = (f"pattern={TOKEN_PATTERN} lower=1 stopwords={hashlib.sha256(words).hexdigest()[:16]} "
                         f"stemmer={stemmer_id}")  # fmt: skip

    def tokens(self, text: str) -> list[str]:
        words = [w for w in self._split(text.lower()) if w not in self._stopwords]
        if self._stemmer is None:
            return words
        out: list[str] = []
        for word in words:
            stem = self._stems.get(word)
            if stem is None:
                stem = self._stems[word] = self._stemmer.stemWord(word)
            out.append(stem)
        return out
