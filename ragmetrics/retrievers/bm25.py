"""BM25 over passages with `bm25s` (the `examples` extra), deterministic down to ties.

Tokens are lowercased words of two or more characters with bm25s's English stop words removed; stemming
is used only when asked for and PyStemmer is installed, so results never depend silently on what
happens to be installed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmetrics.errors import ConfigError
from ragmetrics.retrievers._inputs import Corpus
from ragmetrics.retrievers._ranking import id_order, top_k

if TYPE_CHECKING:
    from ragmetrics.index.corpus import BuildCounts
    from ragmetrics.index.store import IndexStore

Ranking = list[tuple[str, float]]

BM25_PARAMS: frozenset[str] = frozenset({"k1", "b", "method", "stem", "stopwords", "top_k"})


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError as exc:
        raise ConfigError(
            "the bm25 retrievers need the 'examples' extra: pip install '.[examples]' in a clone of ragmetrics, "
            "or pip install bm25s"
        ) from exc
    return bm25s


def _stemmer(stem: bool) -> Any:
    if not stem:
        return None
    try:
        import Stemmer
    except ImportError as exc:
        raise ConfigError("bm25 option stem: true needs PyStemmer: pip install PyStemmer") from exc
    return Stemmer.Stemmer("english")


class BM25Index:
    """An in-memory BM25 index of one corpus; `search` scores every passage and keeps the best `top_k`."""

    def __init__(
        self,
        corpus: Corpus,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stem: bool = False,
        stopwords: str | list[str] | None = "en",
    ) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            raise ConfigError(f"bm25: need k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        if method not in ("lucene", "robertson", "atire", "bm25l", "bm25+"):
            raise ConfigError(f"bm25: unknown method {method!r} (lucene, robertson, atire, bm25l, bm25+)")
        bm25s = _bm25s()
        self._bm25s = bm25s
        self._corpus = corpus
        self._stemmer = _stemmer(stem)
        self._stopwords = stopwords
        tokens = bm25s.tokenize(
            list(corpus.texts), stopwords=stopwords, stemmer=self._stemmer, show_progress=False
        )
        self._model = bm25s.BM25(k1=k1, b=b, method=method)
        self._model.index(tokens, show_progress=False)
        self._id_ranks = id_order(corpus.ids)

    @property
    def corpus(self) -> Corpus:
        return self._corpus

    def search(self, queries: Mapping[str, str], top_k_docs: int) -> dict[str, Ranking]:
        """Query id -> [(passage id, score)] in rank order; a query matching nothing gets an empty list."""
        return {qid: self.search_one(text, top_k_docs) for qid, text in queries.items()}

    def search_one(self, query: str, top_k_docs: int) -> Ranking:
        """One question's [(passage id, score)] in rank order, empty when it matches nothing. One question at a
        time, so a night can time each question's retrieval as the system would spend it."""
        if top_k_docs < 1:
            raise ConfigError(f"bm25: top_k must be >= 1, got {top_k_docs}")
        (tokens,) = self._bm25s.tokenize(
            [query], stopwords=self._stopwords, stemmer=self._stemmer, return_ids=False, show_progress=False
        )
        known = [t for t in tokens if t in self._model.vocab_dict]
        if not known:
            return []
        scores = np.asarray(self._model.get_scores(known), dtype=np.float64)
        best = top_k(scores, self._id_ranks, top_k_docs, positive_only=True)
        return [(self._corpus.ids[i], float(scores[i])) for i in best]


def _param(
    params: Mapping[str, Any], key: str, default: Any, kind: type | tuple[type, ...], what: str
) -> Any:
    """One parameter of a config's `params`, type-checked: "false" is not False and "0.5" is not 0.5."""
    value = params.get(key, default)
    if isinstance(value, bool) and kind is not bool:
        raise ConfigError(f"bm25: {key} must be {what}, got {value!r}")
    if not isinstance(value, kind):
        raise ConfigError(f"bm25: {key} must be {what}, got {value!r}")
    return value


def _stopwords(params: Mapping[str, Any]) -> str | list[str] | None:
    value = params.get("stopwords", "en")
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(w, str) for w in value):
        return list(value)
    raise ConfigError(
        f"bm25: stopwords must be a language such as 'en', a list of words, or null, got {value!r}"
    )


def _settings(params: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    """(top_k, the index settings) from a run's `params`, each checked (see `bm25_prepare`)."""
    unknown = sorted(set(params) - BM25_PARAMS)
    if unknown:
        raise ConfigError(f"bm25: unknown parameter(s) {unknown}; known: {sorted(BM25_PARAMS)}")
    keep = _param(params, "top_k", 100, int, "an integer")
    if keep < 1:
        raise ConfigError(f"bm25: top_k must be >= 1, got {keep}")
    settings = {
        "k1": float(_param(params, "k1", 1.5, (int, float), "a number")),
        "b": float(_param(params, "b", 0.75, (int, float), "a number")),
        "method": _param(params, "method", "lucene", str, "a string"),
        "stem": _param(params, "stem", False, bool, "true or false"),
        "stopwords": _stopwords(params),
    }
    if settings["k1"] < 0 or not 0 <= settings["b"] <= 1:
        raise ConfigError(f"bm25: need k1 >= 0 and 0 <= b <= 1, got k1={settings['k1']}, b={settings['b']}")
    if settings["method"] not in ("lucene", "robertson", "atire", "bm25l", "bm25+"):
        raise ConfigError(
            f"bm25: unknown method {settings['method']!r} (lucene, robertson, atire, bm25l, bm25+)"
        )
    return keep, settings


def bm25_prepare(
    corpus: Corpus,
    params: Mapping[str, Any],
    *,
    store: IndexStore | None = None,
    counts: BuildCounts | None = None,
) -> Callable[[str], Ranking]:
    """Build the index from `params` (k1, b, method, stem, stopwords, top_k); return one question's search.

    With `store`, the index is the persisted one (`ragmetrics.index.bm25`: same scores as bm25s, to the bit),
    read when this corpus was indexed under these settings before; `counts` records whether it was built."""
    keep, settings = _settings(params)
    if store is None:
        index = BM25Index(corpus, **settings)
        return lambda question: index.search_one(question, keep)
    _bm25s()  # stop-word lists by language come from bm25s: the same extra either way
    stored, built = store.bm25(lambda: zip(corpus.ids, corpus.texts, strict=True), **settings)
    if counts is not None:
        counts.add(built)
    ids = corpus.ids
    return lambda question: [(ids[p], s) for p, s in stored.search(question, keep)]


def bm25_search(corpus: Corpus, queries: Mapping[str, str], params: Mapping[str, Any]) -> dict[str, Ranking]:
    """Build an index from `params` (k1, b, method, stem, stopwords, top_k) and search every query."""
    search = bm25_prepare(corpus, params)
    return {qid: search(text) for qid, text in queries.items()}
