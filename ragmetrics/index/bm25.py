"""A BM25 index persisted as arrays: postings in term order (CSC), each with its precomputed BM25 weight.

Keyed by the SHA-256 of every text's hash in order, the tokenizer's identity (`index.tokens`) and the scoring
settings (method, k1, b, delta), and stored at `<root>/bm25/<key>.rmx` (`index.arrays`: atomic, checksummed,
memory-mapped), so a night on an unchanged corpus reads it and tokenises nothing.

Built in bounded memory, as a stream: one pass over the corpus tokenises each text and appends its term ids to
a scratch file (only the vocabulary and one length per chunk stay in memory); two vectorised sweeps over that
file, a block of chunks at a time, count document frequencies and then write each (term, chunk) weight into
its place in the memory-mapped postings. No text is kept.

The scores are bm25s's, to the bit: the same five variants (Kamphuis et al., ECIR 2020: robertson, lucene,
atire, bm25l, bm25+), the same float32 weights computed in the same precision, the same summing order at
query time, and for bm25l and bm25+ the same "non-occurrence" correction. A test holds the two to it.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.index.arrays import IndexFileError, IndexFileWriter, open_arrays
from ragmetrics.index.corpus import BuildCounts, Chunks, CorpusScan, iterate, scan
from ragmetrics.index.ranking import best_k
from ragmetrics.index.tokens import Tokenizer

__all__ = ["METHODS", "BM25Index", "build_bm25"]

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
_NONOCCURRENCE = ("bm25l", "bm25+")
_BLOCK_DOCS = 50_000


def _idf(method: str, df: int, n: int) -> float:
    if method == "robertson":
        return math.log(max(1.0, (n - df + 0.5) / (df + 0.5)))
    if method == "lucene":
        return math.log(1 + (n - df + 0.5) / (df + 0.5))
    if method == "atire":
        return math.log(n / df)
    if method == "bm25l":
        return math.log((n + 1) / (df + 0.5))
    return math.log((n + 1) / df)  # bm25+


def _tfc(method: str, tf: Any, dl: Any, avgdl: np.float64, k1: float, b: float, delta: float) -> Any:
    """The term-frequency component, written as bm25s writes it so numpy promotes the same way (a float32
    numerator stays float32 where bm25s's does)."""
    if method in ("robertson", "lucene"):
        return tf / (k1 * ((1 - b) + b * dl / avgdl) + tf)
    if method == "atire":
        return (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * dl / avgdl))
    if method == "bm25l":
        c = tf / (1 - b + b * dl / avgdl)
        return ((k1 + 1) * (c + delta)) / (k1 + c + delta)
    return ((k1 + 1) * tf) / (k1 * (1 - b + b * dl / avgdl) + tf) + delta  # bm25+


class BM25Index:
    """A built or loaded BM25 index; `search` scores one question's tokens and keeps the best `k`."""

    def __init__(self, ids: Sequence[str], arrays: dict[str, NDArray[Any]], key: str, path: Path | None,
                 tokenizer: Tokenizer) -> None:  # fmt: skip
        from ragmetrics.retrievers._ranking import id_order

        self.ids, self.key, self.path, self.tokenizer = ids, key, path, tokenizer
        plain = {name: np.asarray(values) for name, values in arrays.items()}  # views of the mapped file
        self._indptr, self._docs, self._weights = plain["indptr"], plain["docs"], plain["weights"]
        self._nonocc: NDArray[np.float32] | None = plain.get("nonoccurrence")
        blob, offsets = bytes(plain["terms"]), plain["term_offsets"].tolist()
        self.vocab = {blob[offsets[i] : offsets[i + 1]].decode("utf-8"): i for i in range(len(offsets) - 1)}
        self.id_ranks = id_order(tuple(ids))

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, tokens: Sequence[str]) -> NDArray[np.float32] | None:
        """Every chunk's score for these query tokens (repeats count again, as in bm25s); None when no token is
        in the vocabulary."""
        known = [self.vocab[t] for t in tokens if t in self.vocab]
        if not known:
            return None
        scores = np.zeros(len(self.ids), dtype=np.float32)
        for term in known:
            start, end = int(self._indptr[term]), int(self._indptr[term + 1])
            scores[self._docs[start:end]] += self._weights[start:end]
        if self._nonocc is not None and self._nonocc.size:
            scores += self._nonocc[np.asarray(known, dtype=np.int64)].sum()
        return scores

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """The best `k` (position, score) with a positive score, ties by id descending; [] when nothing matches."""
        scores = self.scores(self.tokenizer.tokens(query))
        if scores is None:
            return []
        values = scores.astype(np.float64)
        best = best_k(values, np.arange(len(values), dtype=np.int64), self.id_ranks, k, positive_only=True)
        return [(p, float(values[p])) for p in best]


def _pairs(tokens: NDArray[np.uint32], offsets: NDArray[np.int64], first: int, last: int,
           vocab: int) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:  # fmt: skip
    """(chunk, term, tf) of each distinct term in chunks first..last-1, sorted by term then chunk."""
    span = tokens[offsets[first] : offsets[last]].astype(np.int64)
    owner = np.repeat(np.arange(first, last, dtype=np.int64), np.diff(offsets[first : last + 1]))
    keys, tf = np.unique(span * (last - first) + (owner - first), return_counts=True)
    term, doc = np.divmod(keys, last - first)
    return doc + first, term, tf


def _tokenise(
    chunks: Chunks, tokenizer: Tokenizer, scratch: Path
) -> tuple[dict[str, int], NDArray[np.int64]]:
    """Stream the corpus: every chunk's term ids appended to `scratch`; returns the vocabulary and the offsets."""
    vocab: dict[str, int] = {}
    lengths: list[int] = []
    with scratch.open("wb") as out:
        for _, text in iterate(chunks):
            ids = [vocab.setdefault(t, len(vocab)) for t in tokenizer.tokens(text)]
            lengths.append(len(ids))
            out.write(np.asarray(ids, dtype=np.uint32).tobytes())
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths, dtype=np.int64), out=offsets[1:])
    return vocab, offsets


def _write(path: Path, key: str, scratch: Path, vocab: dict[str, int], offsets: NDArray[np.int64],
           method: str, k1: float, b: float, delta: float) -> None:  # fmt: skip
    n_docs, n_vocab = len(offsets) - 1, len(vocab)
    total = int(offsets[-1])
    tokens: NDArray[np.uint32] = (
        np.memmap(scratch, dtype=np.uint32, mode="r") if total else np.empty(0, np.uint32)
    )
    df = np.zeros(n_vocab, dtype=np.int64)
    for first in range(0, n_docs, _BLOCK_DOCS):
        _, term, _ = _pairs(tokens, offsets, first, min(n_docs, first + _BLOCK_DOCS), n_vocab)
        df += np.bincount(term, minlength=n_vocab)
    lengths = np.diff(offsets)
    avgdl = np.array(lengths).mean() if n_docs else np.float64(0)
    idf = np.zeros(n_vocab, dtype=np.float32)
    for t, count in enumerate(df.tolist()):
        if count:
            idf[t] = _idf(method, count, n_docs)
    nonocc = np.zeros(n_vocab if method in _NONOCCURRENCE else 0, dtype=np.float32)
    for t, count in enumerate(df.tolist() if method in _NONOCCURRENCE else []):
        if count:
            nonocc[t] = _idf(method, count, n_docs) * _tfc(method, 0, avgdl, avgdl, k1, b, delta)
    blob = "".join(vocab).encode("utf-8")
    term_offsets = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum([len(t.encode("utf-8")) for t in vocab], out=term_offsets[1:])
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    postings = int(indptr[-1])
    writer = IndexFileWriter(path, key, {"rows": n_docs, "method": method}, {
        "indptr": ("<i8", (n_vocab + 1,)), "docs": ("<i4", (postings,)), "weights": ("<f4", (postings,)),
        "nonoccurrence": ("<f4", (nonocc.shape[0],)), "terms": ("|u1", (len(blob),)),
        "term_offsets": ("<i8", (n_vocab + 1,))})  # fmt: skip
    try:
        writer.array("indptr")[...] = indptr
        writer.array("nonoccurrence")[...] = nonocc
        writer.array("terms")[...] = np.frombuffer(blob, dtype=np.uint8)
        writer.array("term_offsets")[...] = term_offsets
        docs_out, weights_out = writer.array("docs"), writer.array("weights")
        cursor = indptr[:-1].copy()
        for first in range(0, n_docs, _BLOCK_DOCS):
            doc, term, tf = _pairs(tokens, offsets, first, min(n_docs, first + _BLOCK_DOCS), n_vocab)
            weight = idf[term] * _tfc(method, tf.astype(np.float32), lengths[doc].astype(np.float64), avgdl,
                                      k1, b, delta)  # fmt: skip
            if method in _NONOCCURRENCE:
                weight = weight - nonocc[term]
            group_start = np.searchsorted(
                term, term
            )  # pairs are sorted by term: each one's rank in its group
            slot = cursor[term] + (np.arange(term.shape[0]) - group_start)
            docs_out[slot] = doc
            weights_out[slot] = weight.astype(np.float32)
            cursor += np.bincount(term, minlength=n_vocab)
        writer.commit()
    except BaseException:
        writer.abort()
        raise


def build_bm25(root: Path, chunks: Chunks, *, k1: float = 1.5, b: float = 0.75, method: str = "lucene",
               delta: float = 0.5, stopwords: str | Sequence[str] | None = "en", stem: bool = False,
               scanned: CorpusScan | None = None) -> tuple[BM25Index, BuildCounts]:  # fmt: skip
    """The BM25 index of `chunks` under `root` (module docstring): read when stored and whole, else built.
    A stored file that fails its checks is rebuilt, never trusted."""
    if method not in METHODS:
        raise ValueError(f"unknown BM25 method {method!r}; methods: {', '.join(METHODS)}")
    tokenizer = Tokenizer(stopwords=stopwords, stem=stem)
    scanned = scanned or scan(chunks)
    key = scanned.key("bm25-v1", tokenizer.identity, f"method={method} k1={k1!r} b={b!r} delta={delta!r}")
    path = Path(root) / "bm25" / f"{key}.rmx"
    if path.exists():
        try:
            meta, arrays = open_arrays(path, key)
            if meta.get("rows") == len(scanned.ids):
                return BM25Index(scanned.ids, arrays, key, path, tokenizer), BuildCounts()
        except (IndexFileError, KeyError, UnicodeDecodeError):
            pass  # rebuilt below; the new file replaces it atomically
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".tokens-", dir=path.parent)
    os.close(fd)
    scratch = Path(name)
    try:
        vocab, offsets = _tokenise(chunks, tokenizer, scratch)
        if len(offsets) - 1 != len(scanned.ids):
            raise ValueError("the corpus changed between two passes over it")
        _write(path, key, scratch, vocab, offsets, method, k1, b, delta)
    finally:
        scratch.unlink(missing_ok=True)
    _, arrays = open_arrays(path, key, verify=False)
    return BM25Index(scanned.ids, arrays, key, path, tokenizer), BuildCounts(built=True)
