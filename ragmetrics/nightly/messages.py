"""A conversation as one row: a `messages` list (the chat format) expanded into one row per turn.

Each user message starts a turn; the assistant messages after it (up to the next user message) answer it: the
last one's `content` is the answer, and their `contexts` / `context_ids` (what was retrieved for the turn),
`tool_calls`, `retrieved_ids` / `retrieved_scores`, `relevant_ids` / `relevant_grades` and `reference` are the
turn's. A `system` message is the conversation's `role` (for role adherence) unless the row has a `role`
column; `tool` messages (tool results) are read by no metric. The row's other columns go to every turn. The
turn rows are `<row id>-<n>` with `conversation_id` = the row's id and `turn` = n (from 1). A message that is
not an object with a known role and string content, a user message without text, or an assistant message
before any user message is an error naming the row and the message; a user message left unanswered is a turn
without an answer (the metrics that need one say so per turn).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TURN_KEYS", "expand_messages"]

TURN_KEYS = (
    "contexts",
    "context_ids",
    "tool_calls",
    "retrieved_ids",
    "retrieved_scores",
    "relevant_ids",
    "relevant_grades",
    "reference",
)
"""Keys an assistant message may carry for its turn."""
_LISTS = tuple(key for key in TURN_KEYS if key != "reference")
"""Keys whose values several assistant messages of one turn add up (the first replaces a row-level value)."""


class MessagesError(ValueError):
    """A `messages` cell that cannot be read; `field` names the message (`messages[3].content`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def expand_messages(row: Mapping[str, Any], row_id: str, column: str = "messages") -> list[dict[str, Any]]:
    """The turn rows of one conversation row (module doc); MessagesError names what is wrong."""
    messages = row.get(column)
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        raise MessagesError(column, f"expected a list of messages, got {type(messages).__name__}")
    shared = {k: v for k, v in row.items() if k not in (column, "id")}
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for i, message in enumerate(messages):
        where = f"{column}[{i}]"
        if not isinstance(message, Mapping):
            raise MessagesError(
                where, f"expected an object with role and content, got {type(message).__name__}"
            )
        role, content = message.get("role"), message.get("content")
        if role not in ("user", "assistant", "system", "tool"):
            raise MessagesError(f"{where}.role", f"expected user, assistant, system or tool, got {role!r}")
        if role == "system":
            if isinstance(content, str) and content.strip() and "role" not in row:
                shared["role"] = content
            continue
        if role == "tool":
            continue
        if content is not None and not isinstance(content, str):
            raise MessagesError(f"{where}.content", f"expected a string, got {type(content).__name__}")
        if role == "user":
            if not content or not content.strip():
                raise MessagesError(f"{where}.content", "a user message without text")
            current = {**shared, "id": f"{row_id}-{len(turns) + 1}", "conversation_id": row_id,
                       "turn": len(turns) + 1, "question": content, "answer": None}  # fmt: skip
            turns.append(current)
            continue
        if current is None:
            raise MessagesError(where, "an assistant message before any user message")
        if content is not None and content.strip():
            current["answer"] = content
        for key in TURN_KEYS:
            if message.get(key) is None:
                continue
            if key in _LISTS and isinstance(current.get(key), list) and current.get(f"_{key}_set"):
                if not isinstance(message[key], list):
                    raise MessagesError(
                        f"{where}.{key}", f"expected a list, got {type(message[key]).__name__}"
                    )
                current[key] = [*current[key], *message[key]]
            else:
                current[key] = message[key]
            current[f"_{key}_set"] = True
    if not turns:
        raise MessagesError(column, "no user message")
    return [{k: v for k, v in turn.items() if not k.startswith("_")} for turn in turns]
