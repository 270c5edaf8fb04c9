"""A team's own metrics, declared in a config: what they are, checked when the config loads, and their spec.

Why declared rather than coded into `judge.registry`: a team's criterion ("the answer mentions the refund
window", "the answer matches the ticket id pattern", "our own scorer in Python") belongs to the team's
config, not to a fork of ragmetrics. Each definition becomes a `JudgeMetricSpec` with the deterministic plan,
entering the same registry as the built-in metrics (`registry.registered_metrics`) for the run, so config
validation, did-you-mean, comparisons, the gate, trust and the reports treat it like any other metric.

Kinds:

- `contains`: 1 when a field of the sample contains a text (from the config, or from a dataset column per
  sample), else 0; case-insensitive by default, whitespace runs compared as one space.
- `matches`: 1 when a regular expression (from the config or a column) matches somewhere in the field.
- `python`: `"package.module:function"`, called with the `RagSample`; it returns a number in the declared
  range, or None (or `(None, reason)`) for "not applicable", or `(value, reason)`. What it raises is recorded
  per sample with its type and message (cause `metric_error`); a value outside the range or not finite is a
  failure (`invalid_value`), never a number in a mean.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragmetrics._callables import import_callable
from ragmetrics.errors import ConfigError, JudgeError, NotApplicable
from ragmetrics.judge.deterministic import tool_call_accuracy_score, tool_call_f1_score
from ragmetrics.judge.registry import JudgeMetricSpec
from ragmetrics.judge.tool_calls import ArgumentMatch, ToolOrder
from ragmetrics.schema import JudgeDetail

__all__ = ["ContainsMetric", "MatchesMetric", "PythonMetric", "ToolCallsMetric", "load_function"]

_NAME = r"^[a-z][a-z0-9_]{0,63}$"
TextField = Literal["answer", "reference", "question", "contexts"]
SampleField = Literal[
    "question",
    "contexts",
    "answer",
    "reference",
    "context_ids",
    "relevant_ids",
    "tool_calls",
    "reference_tool_calls",
]
_WHITESPACE = re.compile(r"\s+")


class _Definition(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(pattern=_NAME, description="the metric's name in configs and reports (lowercase, _)")
    description: str = Field(default="", max_length=500, description="what it asks, for reports and help")

    def _spec(self, *, description: str, formula: str, required: tuple[Any, ...], compute: Any,
              origin: str, value_range: tuple[float, float | None] = (0.0, 1.0),
              higher_is_better: bool | None = True, timeout_s: float | None = None) -> JudgeMetricSpec:  # fmt: skip
        return JudgeMetricSpec(
            name=self.name,
            description=self.description or description,
            formula_in_words=formula,
            citation=f"defined in {origin}",
            required=required,
            plan="deterministic",
            score=_identity_score,
            compute=compute,
            verdict_models=(),
            prompts=(),
            local_variant="the same (no judge)",
            value_range=value_range,
            higher_is_better=higher_is_better,
            origin=origin,
            timeout_s=timeout_s,
        )


def _identity_score(value: float) -> float:
    """A declared metric's compute function gives its value directly."""
    return value


def _field_text(sample: Any, field: TextField) -> str:
    if field == "contexts":
        return "\n\n".join(sample.context_list)
    return str(getattr(sample, field) or "")


def _column_value(sample: Any, column: str) -> str:
    extra = sample.extra or {}
    if column not in extra or extra[column] is None or str(extra[column]) == "":
        raise JudgeError(f"sample {sample.id!r} has no value in column {column!r}", cause="missing_field")
    return str(extra[column])


class _Pattern(_Definition):
    field: TextField = Field(default="answer", description="the sample field looked in")
    column: str | None = Field(
        default=None, min_length=1, description="a dataset column holding the text or pattern, per sample"
    )

    def _source(self, given: str | None, what: str) -> None:
        if (given is None) == (self.column is None):
            raise ValueError(f"give exactly one of {what!r} or 'column'")


class ContainsMetric(_Pattern):
    """1 when `field` contains `text` (or the sample's value in `column`), else 0."""

    type: Literal["contains"]
    text: str | None = Field(default=None, min_length=1, max_length=10_000)
    case_sensitive: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> ContainsMetric:
        self._source(self.text, "text")
        return self

    def _norm(self, text: str) -> str:
        collapsed = _WHITESPACE.sub(" ", text).strip()
        return collapsed if self.case_sensitive else collapsed.casefold()

    def to_spec(self, origin: str, search: Sequence[Path] = ()) -> JudgeMetricSpec:
        def compute(sample: Any) -> tuple[float, JudgeDetail]:
            wanted = self.text if self.text is not None else _column_value(sample, str(self.column))
            found = self._norm(wanted) in self._norm(_field_text(sample, self.field))
            said = "contains" if found else "does not contain"
            return (1.0 if found else 0.0), JudgeDetail(reason=f"the {self.field} {said} {wanted[:80]!r}")

        source = repr(self.text) if self.text is not None else f"column {self.column!r}"
        return self._spec(
            description=f"does the {self.field} contain {source}?",
            formula=f"1 when the {self.field} contains {source} "
            f"({'case-sensitive' if self.case_sensitive else 'ignoring case'}, whitespace runs as one space), "
            "else 0",
            required=(self.field,),
            compute=compute,
            origin=origin,
        )


def data_pattern_search(
    pattern: str, text: str, *, ignore_case: bool, sample_id: str, column: str
) -> str | None:
    """What a regular expression taken from a dataset column matches in `text` (None: no match).

    Why RE2: a pattern from data is data, and Python's backtracking engine can spend hours on one such as
    `(a+)+$`, holding the interpreter so that not even SIGTERM stops the night. RE2 runs in time linear in the
    text; what it cannot express (look-arounds, back-references) is that sample's failure, named."""
    import re2

    options = re2.Options()
    options.log_errors = False  # its own stderr logging; the failure below says what was wrong
    options.case_sensitive = not ignore_case
    try:
        found = re2.search(pattern, text, options=options)
    except re2.error as exc:
        detail = (
            exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        )
        raise JudgeError(
            f"sample {sample_id!r}: column {column!r} holds no regular expression RE2 reads ({detail}); "
            "patterns from data are matched by RE2, without look-arounds or back-references",
            cause="missing_field",
        ) from None
    return None if found is None else str(found.group(0))


class MatchesMetric(_Pattern):
    """1 when the regular expression `pattern` (or the sample's value in `column`) matches in `field`."""

    type: Literal["matches"]
    pattern: str | None = Field(default=None, min_length=1, max_length=2_000)
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return v

    @model_validator(mode="after")
    def _one_source(self) -> MatchesMetric:
        self._source(self.pattern, "pattern")
        return self

    def to_spec(self, origin: str, search: Sequence[Path] = ()) -> JudgeMetricSpec:
        flags = re.IGNORECASE if self.ignore_case else 0

        def compute(sample: Any) -> tuple[float, JudgeDetail]:
            text = _field_text(sample, self.field)
            if self.pattern is not None:  # the team's own, checked when the config was read
                hit = re.search(self.pattern, text, flags)
                matched = hit.group(0) if hit else None
                pattern = self.pattern
            else:  # from the data: matched by RE2, in time linear in the text whatever the pattern
                pattern = _column_value(sample, str(self.column))
                matched = data_pattern_search(pattern, text, ignore_case=self.ignore_case, sample_id=sample.id,
                                              column=str(self.column))  # fmt: skip
            reason = (f"{pattern[:80]!r} matches {matched[:80]!r} in the {self.field}" if matched is not None
                      else f"{pattern[:80]!r} does not match the {self.field}")  # fmt: skip
            return (1.0 if matched is not None else 0.0), JudgeDetail(reason=reason)

        source = f"/{self.pattern}/" if self.pattern is not None else f"the pattern in column {self.column!r}"
        return self._spec(
            description=f"does {source} match the {self.field}?",
            formula=f"1 when {source} matches somewhere in the {self.field}, else 0",
            required=(self.field,),
            compute=compute,
            origin=origin,
        )


class ToolCallsMetric(_Definition):
    """Tool calls against the reference's with the team's choice of order and argument comparison
    (`judge.tool_calls`): the built-in tool_call_accuracy and tool_call_f1 are RAGAS's, strict and exact."""

    type: Literal["tool_calls"]
    score: Literal["accuracy", "f1"] = Field(
        default="accuracy", description="accuracy or f1 (judge.tool_calls)"
    )
    order: ToolOrder = Field(
        default="strict", description="strict: in the reference's order; any: as multisets"
    )
    arguments: ArgumentMatch = Field(
        default="exact", description="exact: string forms equal; normalised: case, spaces, number forms aside"
    )

    @model_validator(mode="after")
    def _order_is_accuracys(self) -> ToolCallsMetric:
        if self.score == "f1" and self.order != "strict":
            raise ValueError("order applies to accuracy; F1 compares calls as a set, in any order")
        return self

    def to_spec(self, origin: str, search: Sequence[Path] = ()) -> JudgeMetricSpec:
        def compute(sample: Any) -> tuple[float, JudgeDetail]:
            made, expected = sample.tool_calls or [], sample.reference_tool_calls or []
            if self.score == "f1":
                value = tool_call_f1_score(made, expected, arguments=self.arguments)
            else:
                value = tool_call_accuracy_score(made, expected, order=self.order, arguments=self.arguments)
            return value, JudgeDetail(reason=f"tool call {self.score} {value:.4f} ({self.order} order, "
                                             f"{self.arguments} arguments): {len(made)} made, {len(expected)} expected")  # fmt: skip

        return self._spec(
            description=f"tool call {self.score}, {self.order} order, {self.arguments} arguments",
            formula=f"tool call {self.score} (ragmetrics.judge.tool_calls) with order={self.order}, "
            f"arguments={self.arguments}",
            required=("question", "tool_calls", "reference_tool_calls"),
            compute=compute,
            origin=origin,
        )


class PythonMetric(_Definition):
    """A function of the team's: `"package.module:function"`, called with each `RagSample`."""

    type: Literal["python"]
    function: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", description="'package.module:function'")
    range: tuple[float, float | None] = Field(
        default=(0.0, 1.0), description="lowest and highest value it returns ([0, null]: no upper bound)"
    )
    higher_is_better: bool | None = Field(default=True, description="null: a descriptive metric")
    requires: list[SampleField] = Field(
        default_factory=lambda: list[SampleField](["question"]), description="the sample fields it reads"
    )
    timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=86_400,
        description="seconds one call may take; then that sample fails (timeout)",
    )

    @model_validator(mode="after")
    def _range_not_empty(self) -> PythonMetric:
        low, high = self.range
        if high is not None and not low < high:
            raise ValueError(f"range [{low}, {high}] is empty")
        return self

    def to_spec(self, origin: str, search: Sequence[Path] = ()) -> JudgeMetricSpec:
        """The spec, with the function imported now (ConfigError naming the metric when it cannot be)."""
        try:
            function = load_function(self.function, search)
        except ConfigError as exc:
            raise ConfigError(f"{origin}: metric {self.name!r}: {exc}") from None

        def compute(sample: Any) -> tuple[float, JudgeDetail]:
            returned = function(sample)
            reason = f"{self.function} returned {returned!r}"[:300]
            if isinstance(returned, tuple):
                if len(returned) != 2 or not isinstance(returned[1], str):
                    raise JudgeError(
                        f"{self.function} returned a tuple that is not (value, reason)", cause="invalid_value"
                    )
                returned, reason = returned
            if returned is None:
                raise NotApplicable(reason)
            return returned, JudgeDetail(reason=reason)

        return self._spec(
            description=f"{self.function}",
            formula=f"the value {self.function}(sample) returns",
            required=tuple(dict.fromkeys(self.requires)),
            compute=compute,
            origin=origin,
            value_range=self.range,
            higher_is_better=self.higher_is_better,
            timeout_s=self.timeout_s,
        )


def load_function(target: str, search: Sequence[Path] = ()) -> Callable[[Any], Any]:
    """The function `target` names (`_callables.import_callable`, the folders in `search` first), checked to
    take one argument, the sample, so a config naming it fails when it loads rather than on the first sample."""
    function = import_callable(target, search, "function")
    try:
        inspect.signature(function).bind(object())
    except TypeError:
        raise ConfigError(f"function {target!r} must take one argument, the sample") from None
    except ValueError:
        pass  # a builtin without an inspectable signature: called as it is
    return function
