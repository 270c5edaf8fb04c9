"""Metrics at a token budget: the ranking cut where the retrieved passages stop fitting into B tokens.

Why: a RAG system feeds its LLM as many passages as fit a context budget, not a fixed k, so `recall@512tok`
says what actually reaches the model. For each query the passages are taken in rank order while their
cumulative token count stays within the budget; the metric is then the count-cutoff metric at that depth
k_q (precision's denominator, nDCG's ideal ranking and everything else as `@k_q`), computed by the same
kernels as `@k`. A passage that straddles the budget (starts inside it, ends beyond) is left out by default
(`straddle="exclude"`: what fits whole), or counted (`"include"`: a system that truncates the last
passage); a query whose first passage alone exceeds the budget under "exclude" scores 0.

Lengths are token counts per document id, from a `lengths` mapping or counted from passage texts by
`count_tokens`: whitespace-separated words by default, or any `tokenizers` JSON file (a model's own
tokenizer gives its true budget; whitespace words undercount subword tokens by roughly 1.3x for English).
A retrieved document without a length is an InputError naming it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.retrieval.metric_parse import MetricRequest
from ragmetrics.retrieval.run import Run

__all__ = ["STRADDLE_RULES", "Straddle", "TokenLengths", "budget_depths", "count_tokens"]

Straddle = Literal["exclude", "include"]
STRADDLE_RULES: tuple[Straddle, ...] = ("exclude", "include")


class TokenLengths:
    """Token counts per document id as sorted arrays, built once and matched against any run's vocabulary
    with one vectorised search (a plain dict is converted on every `evaluate` call; build this once to score
    many runs or metrics)."""

    def __init__(self, lengths: Mapping[str, int]) -> None:
        keys = np.asarray([str(k) for k in lengths], dtype=np.str_)
        values = np.asarray(list(lengths.values()), dtype=object)
        bad = [
            i
            for i, v in enumerate(values)
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0
        ]
        if bad:
            raise InputError(
                f"token count of {keys[bad[0]]!r} must be a whole number >= 0, got {values[bad[0]]!r}",
                field="lengths",
            )
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.values = values[order].astype(np.int64)
        # Runs are immutable, so the counts aligned with a run's vocabulary are kept for the next metric
        # set or the next evaluate of the same run (keyed by the vocabulary array, which is held alive).
        self._aligned: dict[int, tuple[NDArray[np.str_], NDArray[np.int64]]] = {}

    def for_vocab(self, vocab: NDArray[np.str_], used: NDArray[np.bool_]) -> NDArray[np.int64]:
        """Counts aligned with a (sorted) run vocabulary; a used entry without a count is an InputError."""
        if not len(self.keys):
            found = np.zeros(len(vocab), dtype=bool)
            at = np.zeros(len(vocab), dtype=np.int64)
        else:
            at = np.minimum(np.searchsorted(self.keys, vocab), len(self.keys) - 1)
            found = self.keys[at] == vocab
        missing = np.flatnonzero(used & ~found)
        if missing.size:
            raise InputError(
                f"no token count for retrieved document {str(vocab[missing[0]])!r}", field="lengths"
            )
        return np.where(found, self.values[at] if len(self.keys) else 0, 0).astype(np.int64)


def count_tokens(texts: Mapping[str, str], tokenizer: str | Path = "whitespace") -> dict[str, int]:
    """Token counts of `texts` (id -> text): whitespace words, or a `tokenizers` JSON file's tokens (no special
    tokens added)."""
    if str(tokenizer) == "whitespace":
        return {key: len(text.split()) for key, text in texts.items()}
    path = Path(tokenizer)
    if not path.is_file():
        raise InputError("tokenizer must be 'whitespace' or a tokenizers JSON file", source=str(path))
    from tokenizers import Tokenizer

    try:
        model = Tokenizer.from_file(str(path))
    except Exception as exc:
        raise InputError(f"not a tokenizers JSON file: {exc}", source=str(path)) from None
    model.no_padding()  # a tokenizer file may pad or truncate to a model's length: counts must be the text's own
    model.no_truncation()
    keys = list(texts)
    encoded = model.encode_batch([texts[k] for k in keys], add_special_tokens=False)
    return {key: len(e.ids) for key, e in zip(keys, encoded, strict=True)}


def budget_depths(
    run: Run,
    run_rows: NDArray[np.int64],
    requests: Sequence[MetricRequest],
    lengths: Mapping[str, int] | TokenLengths | None,
    straddle: Straddle,
) -> NDArray[np.int64] | None:
    """[queries, requests] per-query cutoffs for the token-budget requests (-1 elsewhere), or None when no
    request has a budget. `run_rows[i]` is the run's row of the i-th scored query (-1: the run lacks it)."""
    budgets = np.asarray([r.budget for r in requests], dtype=np.int64)
    if not budgets.any():
        return None
    if straddle not in STRADDLE_RULES:
        raise InputError(f"straddle must be one of {STRADDLE_RULES}, not {straddle!r}", field="straddle")
    if lengths is None:
        spelled = next(r.spelling for r in requests if r.budget)
        raise InputError(
            f"metric {spelled!r} needs the retrieved passages' token counts: pass lengths= (document id -> "
            "tokens), e.g. from ragmetrics.retrieval.budget.count_tokens(passages)",
            field="lengths",
        )
    entry_lengths = _entry_lengths(run, lengths)
    offsets = np.asarray(run.offsets, dtype=np.int64)
    row_of_entry = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    cumulative = np.cumsum(entry_lengths) if entry_lengths.size else entry_lengths
    start = np.concatenate([[0], cumulative])[offsets[:-1]]
    within_row = cumulative - start[row_of_entry] if entry_lengths.size else cumulative
    depths = np.full((run_rows.shape[0], len(requests)), -1, dtype=np.int64)
    for j, budget in enumerate(budgets.tolist()):
        if not budget:
            continue
        fits = within_row <= budget if straddle == "exclude" else (within_row - entry_lengths) < budget
        per_row = np.bincount(row_of_entry[fits], minlength=len(offsets) - 1).astype(np.int64)
        depths[:, j] = np.where(run_rows >= 0, per_row[np.maximum(run_rows, 0)] if per_row.size else 0, 0)
    return depths


def _entry_lengths(run: Run, lengths: Mapping[str, int] | TokenLengths) -> NDArray[np.int64]:
    table = lengths if isinstance(lengths, TokenLengths) else TokenLengths(lengths)
    codes = np.asarray(run.doc_codes, dtype=np.int64)
    cached = table._aligned.get(id(run.doc_vocab))
    if cached is not None and cached[0] is run.doc_vocab:
        return cached[1][codes]
    vocab = np.asarray(run.doc_vocab, dtype=np.str_)
    used = np.zeros(len(vocab), dtype=bool)
    used[codes] = True
    per_doc = table.for_vocab(vocab, used)
    if len(table._aligned) > 64:
        table._aligned.clear()
    table._aligned[id(run.doc_vocab)] = (run.doc_vocab, per_doc)
    result: NDArray[np.int64] = per_doc[codes]
    return result
