"""One QA row's cells checked and cleaned: strings, ids, lists (JSON arrays in CSV cells), scores, grades,
tool calls and turns, each failure a `RowError` naming the field.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ragmetrics.judge.base import RagSample
from ragmetrics.judge.text.language import LANGUAGE_CODE
from ragmetrics.judge.tool_calls import parse_tool_calls

_LIST_FIELDS = (
    "contexts",
    "context_ids",
    "retrieved_ids",
    "retrieved_scores",
    "relevant_ids",
    "relevant_grades",
)


class RowError(Exception):
    def __init__(self, fld: str, message: str) -> None:
        super().__init__(message)
        self.field = fld
        self.message = message


def clean_row(values: dict[str, Any], *, ranked_relevance: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"id": _id(values.get("id"))}
    question = values.get("question")
    if not isinstance(question, str):
        raise RowError("question", f"expected a string, got {type_name(question)}")
    if not question.strip():
        raise RowError("question", "is blank")
    out["question"] = question
    for name in ("answer", "reference"):
        value = values.get(name)
        if value is not None and not isinstance(value, str):
            raise RowError(name, f"expected a string or null, got {type_name(value)}")
        out[name] = value
    language = values.get("language")
    if language is not None and (not isinstance(language, str) or not LANGUAGE_CODE.match(language)):
        raise RowError(
            "language",
            f"expected an ISO 639 code such as 'ja' or 'pt-BR', or null; got {type_name(language)}",
        )
    out["language"] = language
    lists = {name: _list(name, values.get(name)) for name in _LIST_FIELDS}
    contexts = lists["contexts"]
    # No contexts column (or a null cell): the sample has no contexts. An empty list: retrieval found nothing.
    out["contexts"] = (
        None if contexts is None else [_text_item("contexts", i, v) for i, v in enumerate(contexts)]
    )
    ctx_ids = lists["context_ids"]
    if ctx_ids is not None:
        out["context_ids"] = [_str_item("context_ids", i, v) for i, v in enumerate(ctx_ids)]
        dup = _first_duplicate(out["context_ids"])
        if dup is not None:
            raise RowError("context_ids", f"id {dup!r} appears twice")
        if out["contexts"] is None:
            raise RowError("context_ids", f"has {len(ctx_ids)} ids but the row has no contexts")
        if len(out["context_ids"]) != len(out["contexts"]):
            raise RowError(
                "context_ids", f"has {len(ctx_ids)} ids but contexts has {len(out['contexts'])} entries"
            )
    else:
        out["context_ids"] = None
    out["retrieved_ids"], out["retrieved_scores"] = _pairs(
        lists["retrieved_ids"], lists["retrieved_scores"], "retrieved", _score
    )
    out["relevant_ids"], out["relevant_grades"] = _pairs(
        lists["relevant_ids"], lists["relevant_grades"], "relevant", _grade
    )
    for name in ("tool_calls", "reference_tool_calls"):
        try:
            calls = parse_tool_calls(values.get(name), name)
        except ValueError as exc:
            raise RowError(name, str(exc).removeprefix(f"{name}: ").removeprefix(name)) from None
        out[name] = None if calls is None else [c.model_dump() for c in calls]
    conversation, turn = values.get("conversation_id"), values.get("turn")
    if (conversation is None) != (turn is None):
        given, absent = ("conversation_id", "turn") if turn is None else ("turn", "conversation_id")
        raise RowError(absent, f"is missing while {given} is given (a turn needs both)")
    if conversation is not None:  # only then: rows without conversations keep their fingerprints
        out["conversation_id"] = _id_value("conversation_id", conversation)
        if isinstance(turn, bool) or not isinstance(turn, int | float) or turn != int(turn) or turn < 0:
            raise RowError("turn", f"expected a whole number >= 0, got {type_name(turn)} {turn!r}"[:200])
        out["turn"] = int(turn)
    answerable = _answerable(values.get("answerable"))
    if answerable is not None:  # only then: rows without the column keep their fingerprints
        out["answerable"] = answerable
        if answerable is False and any(g >= 1 for g in out["relevant_grades"] or []):
            raise RowError("answerable", "is false but relevant_ids names a relevant document (grade >= 1)")
    if ranked_relevance and lists["relevant_ids"] is not None and lists["relevant_grades"] is None:
        # Listed most relevant first, no grades: the grade is the position from the end (n, n-1, ..., 1).
        count = len(out["relevant_ids"])
        out["relevant_grades"] = [count - i for i in range(count)]
    return out


def _answerable(value: Any) -> bool | None:
    """The `answerable` cell: a boolean, 'true'/'false' (a CSV cell) or null."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise RowError("answerable", f"expected true, false or null, got {type_name(value)} {value!r}"[:200])


def _pairs(ids: list[Any] | None, values: list[Any] | None, prefix: str, convert: Any) -> tuple[Any, Any]:
    ids_field, values_field = (
        f"{prefix}_ids",
        "retrieved_scores" if prefix == "retrieved" else "relevant_grades",
    )
    if ids is None:
        if values is not None:
            raise RowError(ids_field, f"is missing while {values_field} is given")
        return None, None
    clean_ids = [_str_item(ids_field, i, v) for i, v in enumerate(ids)]
    dup = _first_duplicate(clean_ids)
    if dup is not None:
        raise RowError(ids_field, f"document {dup!r} appears twice")
    if values is None:
        # No scores: the list order is the ranking; no grades: every listed document is relevant (grade 1).
        default = [float(len(ids) - i) for i in range(len(ids))] if prefix == "retrieved" else [1] * len(ids)
        return clean_ids, default
    if len(values) != len(ids):
        raise RowError(values_field, f"has {len(values)} entries but {ids_field} has {len(ids)}")
    return clean_ids, [convert(values_field, i, v) for i, v in enumerate(values)]


def _first_duplicate(items: list[str]) -> str | None:
    seen: set[str] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None


def _id(value: Any) -> str:
    return _id_value("id", value)


def _id_value(name: str, value: Any) -> str:
    if isinstance(value, bool) or value is None:
        raise RowError(name, f"expected a string or integer, got {type_name(value)}")
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise RowError(name, f"expected a non-empty string or integer, got {type_name(value)}")
    return value


def _list(name: str, value: Any) -> list[Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise RowError(
                name, "expected a list (in CSV: a JSON array), got a string that is not JSON"
            ) from None
    if isinstance(value, tuple):
        value = list(value)
    if hasattr(value, "tolist") and not isinstance(value, list):
        value = value.tolist()
    if not isinstance(value, list):
        raise RowError(name, f"expected a list, got {type_name(value)}")
    return value


def _str_item(name: str, index: int, value: Any) -> str:
    """An id: a non-blank string, or an integer (Parquet and CSV often store ids as numbers)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise RowError(name, f"[{index}] expected a string, got {type_name(value)}")
    text = str(value)
    if not text.strip():
        raise RowError(name, f"[{index}] is blank")
    return text


def _text_item(name: str, index: int, value: Any) -> str:
    """A context passage: a string, possibly empty (a retriever can return an empty chunk), never a number."""
    if not isinstance(value, str):
        raise RowError(name, f"[{index}] expected a string, got {type_name(value)}")
    return value


def _score(name: str, index: int, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RowError(name, f"[{index}] expected a number, got {type_name(value)}")
    score = float(value)
    if not math.isfinite(score):
        raise RowError(name, f"[{index}] is {score}; scores must be finite")
    return score


def _grade(name: str, index: int, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RowError(name, f"[{index}] expected an integer grade, got {type_name(value)}")
    if isinstance(value, float) and not value.is_integer():
        raise RowError(name, f"[{index}] grade {value} is not an integer")
    return int(value)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    text = repr(value)
    short = text if len(text) <= 40 else text[:37] + "..."
    return f"{type(value).__name__} {short}"


def sample_of(clean: dict[str, Any]) -> RagSample:
    fields = {
        k: clean[k]
        for k in ("id", "question", "contexts", "context_ids", "answer", "reference", "language", "tool_calls",
                  "reference_tool_calls", "conversation_id", "turn", "answerable")
        if k in clean
    }  # fmt: skip
    return RagSample.model_validate(fields)
