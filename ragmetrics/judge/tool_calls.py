"""Tool calls an agent made, and the two measures of them against a reference: accuracy and F1.

A tool call is a name and its arguments. A sample holds the calls the system made (`tool_calls`) and the
calls it should have made (`reference_tool_calls`), each a list in the order made. Rows may give a call as
`{"name", "args"}`, `{"name", "arguments"}` (arguments as an object or a JSON string) or OpenAI's
`{"type": "function", "function": {"name", "arguments"}}`.

The measures are defined in `judge.deterministic` (tool_call_accuracy_score, tool_call_f1_score), with the
other metrics computed without a judge; this module reads calls and compares them. Definitions (RAGAS's
ToolCallAccuracy and ToolCallF1, `ragas.metrics`, with the options teams ask for):

- **tool_call_accuracy**: 0 unless the sequence of names matches the reference's (in order with
  `order: strict`, as multisets with `order: any`, both lists then sorted by name and arguments before
  pairing); else the mean over reference calls of the share of each reference call's arguments that the
  paired call gives equally (a reference call without arguments: 1 when the call has none either, else 0).
  No calls and none expected: 1; calls expected and none made, or calls made and none expected: 0.
- **tool_call_f1**: calls as (name, arguments) items, duplicates counted once; TP = made and expected,
  FP = made, not expected, FN = expected, not made; F1 = 2PR / (P + R). Order never matters. No calls and none
  expected: 1 (RAGAS returns 0 there, treating agreement on "no tool" as failure).

Arguments compare `exact`ly (RAGAS: the values' string forms are equal) or `normalised`: strings trimmed,
case-folded and with runs of whitespace made one; numbers by value (75 == 75.0 == "75"); lists element by
element; objects key by key, whatever their order.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = [
    "ArgumentMatch",
    "ToolCall",
    "ToolOrder",
    "argument_share",
    "call_items",
    "parse_tool_calls",
    "sort_key",
]

ToolOrder = Literal["strict", "any"]
ArgumentMatch = Literal["exact", "normalised"]


class ToolCall(BaseModel):
    """One call of a tool: its name and arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)

    @field_validator("args")
    @classmethod
    def _finite(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Arguments are stored in reports as JSON: a NaN or an infinity there is not JSON."""
        stack: list[Any] = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"an argument holds {item}, not a JSON number")
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list | tuple):
                stack.extend(item)
        return value


def _one_call(item: Any, where: str) -> ToolCall:
    if not isinstance(item, dict):
        raise ValueError(f"{where}: expected an object with a name, got {type(item).__name__}")
    if isinstance(item.get("function"), dict):  # OpenAI's shape
        item = item["function"]
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: 'name' must be a non-empty string")
    args: Any = item.get("args", item.get("arguments", {}))
    if args is None:
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: 'arguments' is a string that is not JSON ({exc.msg})") from None
    if not isinstance(args, dict):
        raise ValueError(f"{where}: arguments must be an object, got {type(args).__name__}")
    unknown = set(item) - {"name", "args", "arguments", "id", "type"}
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; a call has name and args")
    try:
        return ToolCall(name=name, args=args)
    except ValidationError as exc:
        raise ValueError(f"{where}: {exc.errors()[0]['msg']}") from None


def parse_tool_calls(value: Any, field: str = "tool_calls") -> list[ToolCall] | None:
    """The calls a row gives (None stays None: not given); a ValueError naming the entry otherwise."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(f"{field}: expected a list of calls (in CSV: a JSON array)") from None
    if isinstance(value, ToolCall):
        value = [value]
    if not isinstance(value, list | tuple):
        raise ValueError(f"{field}: expected a list of calls, got {type(value).__name__}")
    return [c if isinstance(c, ToolCall) else _one_call(c, f"{field}[{i}]") for i, c in enumerate(value)]


_SPACE = re.compile(r"\s+")


def _normal(value: Any) -> Any:
    """A comparison form of an argument value (module doc, `normalised`)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        number = float(value)
        return number if math.isfinite(number) else str(number)
    if isinstance(value, str):
        text = _SPACE.sub(" ", value.strip()).casefold()
        try:
            number = float(text)
        except ValueError:
            return text
        return number if math.isfinite(number) else text
    if isinstance(value, list | tuple):
        return tuple(_normal(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _normal(v)) for k, v in value.items()))
    return str(value)


def _same(left: Any, right: Any, arguments: ArgumentMatch) -> bool:
    if arguments == "exact":
        return str(left) == str(right)
    return bool(_normal(left) == _normal(right))


def argument_share(made: dict[str, Any], expected: dict[str, Any], arguments: ArgumentMatch) -> float:
    if not expected:
        return 1.0 if not made else 0.0
    return sum(1 for k, v in expected.items() if k in made and _same(made[k], v, arguments)) / len(expected)


def sort_key(call: ToolCall) -> tuple[str, ...]:
    return (call.name, *[part for k in sorted(call.args) for part in (k, str(call.args[k]))])


def _hashable(value: Any) -> Any:
    """The value itself where Python can hash it (so 75 and 75.0 are one, as in RAGAS); lists and objects as
    tuples (RAGAS cannot hash those and fails)."""
    if isinstance(value, list | tuple):
        return ("list", tuple(_hashable(v) for v in value))
    if isinstance(value, dict):
        return ("object", tuple(sorted((str(k), _hashable(v)) for k, v in value.items())))
    return value


def call_items(calls: Sequence[ToolCall], arguments: ArgumentMatch) -> set[tuple[str, Any]]:
    if arguments == "exact":
        return {(c.name, _hashable(c.args)) for c in calls}
    return {(c.name, _normal(c.args)) for c in calls}
