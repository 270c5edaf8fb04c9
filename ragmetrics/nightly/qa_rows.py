"""QA rows validated into a dataset: the user's columns mapped onto our fields, conversations expanded
into turns, every row checked, bad rows named by their 1-based row and field (or skipped and listed).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.nightly.config import DATASET_FIELDS
from ragmetrics.nightly.qa_cells import RowError, clean_row, sample_of
from ragmetrics.nightly.qa_dataset import BadRow, QADataset

TRUTH_FIELDS = (
    "id",
    "question",
    "reference",
    "relevant_ids",
    "relevant_grades",
    "language",
    "reference_tool_calls",
)
"""What a system is judged against; its outputs (answer, contexts, rankings) are not part of it."""


def validate_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    source: str,
    mapping: Mapping[str, str] | None = None,
    on_bad_row: Literal["fail", "skip"] = "fail",
    limit: int | None = None,
    language: str | None = None,
    keep: Sequence[str] = (),
    ranked_relevance: bool = False,
    numbers: Sequence[int] | None = None,
) -> QADataset:
    """Map columns (user name -> our field) and validate each row into samples, judgments and a ranking;
    `language` is the dataset's language, for rows without a language column value; `ranked_relevance` reads
    ungraded relevant_ids as listed most relevant first (grades by position); `numbers`, each row's 1-based
    number in its file when some rows were left out before (broken lines skipped)."""
    mapping = dict(mapping or {})
    expanded_bad: list[BadRow] = []
    chat = next((theirs for theirs, ours in mapping.items() if ours == "messages"), "messages")
    if any(chat in row for row in rows):  # conversations as message lists: one row per turn
        rows, numbers, expanded_bad = _expand_conversations(rows, chat, mapping, numbers, on_bad_row, source)
        mapping = {theirs: ours for theirs, ours in mapping.items() if ours != "messages"}
    columns = _resolve_columns(rows, source, mapping)
    present = {c for row in rows for c in row}
    missing_kept = sorted(set(keep) - present)
    if missing_kept:
        raise InputError(
            f"no column {missing_kept[0]!r} (named by human_labels.columns); columns: {', '.join(sorted(present))}",
            source=source,
            field=missing_kept[0],
        )
    kept: list[tuple[int, str, dict[str, Any]]] = []
    extras: dict[str, dict[str, Any]] = {}
    ignored = sorted(present - set(columns.values()) - set(keep))
    samples: list[RagSample] = []
    relevance: dict[str, dict[str, int]] = {}
    retrieved: dict[str, dict[str, float]] = {}
    skipped: list[BadRow] = list(expanded_bad)
    seen: dict[str, int] = {}
    turns: dict[tuple[Any, Any], int] = {}
    digest = hashlib.sha256()
    truth = hashlib.sha256()
    generated = "id" not in columns
    for position, row in enumerate(rows, start=1):
        row_no = numbers[position - 1] if numbers is not None else position
        if limit is not None and len(samples) >= limit:
            break
        values = {ours: row.get(theirs) for ours, theirs in columns.items()}
        if generated:
            values["id"] = f"row-{row_no}"
        if language is not None and values.get("language") is None:
            values["language"] = language
        try:
            clean = clean_row(values, ranked_relevance=ranked_relevance)
            qid = clean["id"]
            if qid in seen:
                raise RowError("id", f"duplicate id {qid!r} (first at row {seen[qid]})")
            turn_key = (clean.get("conversation_id"), clean.get("turn"))
            if turn_key[0] is not None and turn_key in turns:
                raise RowError("turn", f"turn {turn_key[1]} of conversation {turn_key[0]!r} is also row "
                                        f"{turns[turn_key]}")  # fmt: skip
            sample = sample_of(clean)
        except RowError as err:
            bad = BadRow(row_no, err.field, columns.get(err.field, err.field), err.message)
            if on_bad_row == "fail":
                raise InputError(bad.describe(source)) from None
            skipped.append(bad)
            continue
        seen[qid] = row_no
        if turn_key[0] is not None:
            turns[turn_key] = row_no
        samples.append(sample)
        if keep:
            kept.append((row_no, qid, {c: row.get(c) for c in keep}))
        if ignored:
            extras[qid] = {c: row[c] for c in ignored if c in row}
        if clean.get("relevant_ids") is not None:
            relevance[qid] = dict(zip(clean["relevant_ids"], clean["relevant_grades"], strict=True))
        if clean.get("retrieved_ids") is not None:
            retrieved[qid] = dict(zip(clean["retrieved_ids"], clean["retrieved_scores"], strict=True))
        # The fingerprint of reports before contexts could be absent (None) hashed them as an empty list.
        hashed = clean if clean["contexts"] is not None else {**clean, "contexts": []}
        # `answerable` is not hashed: a test set decides it with the qrels (an unanswerable question has
        # none), which are hashed, so nights before the field was read stay comparable.
        hashed = {k: v for k, v in hashed.items() if k != "answerable"}
        digest.update(json.dumps(hashed, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8"))
        digest.update(b"\n")
        judged_against = {k: clean.get(k) for k in TRUTH_FIELDS}
        truth.update(
            json.dumps(judged_against, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
        )
        truth.update(b"\n")
    if not samples:
        reason = (
            f"; all {len(skipped)} rows were bad, first: {skipped[0].describe(source)}" if skipped else ""
        )
        raise InputError(f"no usable rows{reason}", source=source)
    return QADataset(
        source=source,
        samples=samples,
        relevance=relevance,
        retrieved=retrieved,
        fingerprint="sha256:" + digest.hexdigest(),
        truth_fingerprint="sha256:" + truth.hexdigest(),
        skipped=skipped,
        columns=columns,
        ignored_columns=ignored,
        generated_ids=generated,
        kept=kept,
        extras=extras,
    )


def _expand_conversations(
    rows: Sequence[Mapping[str, Any]],
    chat: str,
    mapping: Mapping[str, str],
    numbers: Sequence[int] | None,
    on_bad_row: str,
    source: str,
) -> tuple[list[Mapping[str, Any]], list[int], list[BadRow]]:
    """Rows with a `messages` list as one row per turn (`nightly.messages`), each keeping its row's number."""
    from ragmetrics.nightly.messages import MessagesError, expand_messages

    id_column = next((theirs for theirs, ours in mapping.items() if ours == "id"), "id")
    out: list[Mapping[str, Any]] = []
    out_numbers: list[int] = []
    bad: list[BadRow] = []
    for position, row in enumerate(rows, start=1):
        row_no = numbers[position - 1] if numbers is not None else position
        if row.get(chat) is None:
            out.append(row)
            out_numbers.append(row_no)
            continue
        raw_id = row.get(id_column)
        row_id = (
            str(raw_id)
            if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) and str(raw_id).strip()
            else f"row-{row_no}"
        )
        try:
            turns = expand_messages({k: v for k, v in row.items() if k != id_column}, row_id, chat)
        except MessagesError as exc:
            problem = BadRow(row_no, "messages", exc.field, exc.message)
            if on_bad_row == "fail":
                raise InputError(problem.describe(source)) from None
            bad.append(problem)
            continue
        if id_column != "id":
            turns = [{id_column: t.pop("id"), **t} for t in turns]
        out.extend(turns)
        out_numbers.extend([row_no] * len(turns))
    return out, out_numbers, bad


def _resolve_columns(
    rows: Sequence[Mapping[str, Any]], source: str, mapping: dict[str, str]
) -> dict[str, str]:
    """our field -> user column, from the mapping plus identically named columns; checks mapped columns exist."""
    if not rows:
        raise InputError("the dataset has no rows", source=source)
    present: dict[str, None] = {}
    for row in rows:
        for col in row:
            present.setdefault(col)
    columns: dict[str, str] = {}
    for theirs, ours in mapping.items():
        if theirs not in present:
            raise InputError(
                f"column {theirs!r} (mapped to {ours!r}) is not in the dataset; columns: {', '.join(present)}",
                source=source,
                field=theirs,
            )
        columns[ours] = theirs
    mapped_away = set(mapping)
    for ours in DATASET_FIELDS:
        if ours not in columns and ours in present and ours not in mapped_away:
            columns[ours] = ours
    if "question" not in columns:
        raise InputError(
            f"no 'question' column; map yours with dataset.mapping (columns: {', '.join(present)})",
            source=source,
            field="question",
        )
    for a, b in (("retrieved_scores", "retrieved_ids"), ("relevant_grades", "relevant_ids")):
        if a in columns and b not in columns:
            raise InputError(f"has {a!r} but no {b!r} column", source=source, field=b)
    return columns
