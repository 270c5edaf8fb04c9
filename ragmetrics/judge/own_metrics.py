"""Where a team's own metrics come from: a config's `judge.custom_metrics`, a metric file, or an installed
package's entry point; each becomes a spec in the one registry (`registry.registered_metrics`).

- In a config: `judge.custom_metrics`, a list of definitions (`contains`, `matches`, `python`, `rubric`).
- In a file: one definition per YAML file (`judge.metric_files`, and what `ragmetrics check-metric FILE`
  reads), so a rubric can be reviewed, versioned and shared on its own.
- From a package: the entry-point group `ragmetrics.metrics`. An entry point names a function decorated with
  `@python_metric(...)` (its range and the fields it reads), or a definition object (a `RubricMetric` built
  in Python, say); listing the entry point's name in `judge.metrics` is all a config needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import Field, TypeAdapter, ValidationError

from ragmetrics._yaml import key_path, read_yaml_file
from ragmetrics.errors import ConfigError
from ragmetrics.judge.custom import ContainsMetric, MatchesMetric, PythonMetric, SampleField, ToolCallsMetric
from ragmetrics.judge.rubric import RubricMetric

__all__ = [
    "ENTRY_POINT_GROUP",
    "CustomMetric",
    "entry_point_definition",
    "entry_point_names",
    "load_metric_file",
    "python_metric",
]

CustomMetric = Annotated[
    ContainsMetric | MatchesMetric | PythonMetric | ToolCallsMetric | RubricMetric,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(CustomMetric)
ENTRY_POINT_GROUP = "ragmetrics.metrics"
_MARK = "__ragmetrics_metric__"

F = TypeVar("F", bound=Callable[..., Any])


def _problems(exc: ValidationError, data: Any = None) -> str:
    lines = []
    for err in exc.errors():
        loc, _ = key_path(err["loc"], data)
        message = str(err["msg"]).removeprefix("Value error, ").replace("valid array", "valid list")
        lines.append(f"{loc}: {message}" if loc else message)
    return lines[0] if len(lines) == 1 else f"{len(lines)} problems:\n  " + "\n  ".join(lines)


def load_metric_file(path: Path) -> Any:
    """The definition in a metric file (one YAML mapping with a `type`), checked as strictly as a config;
    a rubric's relative `labelled_file` resolves against the metric file's folder."""
    data = read_yaml_file(path, what="metric")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected one metric definition (a mapping with 'type' and 'name')")
    try:
        definition = _ADAPTER.validate_json(json.dumps(data, default=str), strict=True)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_problems(exc, data)}") from None
    if isinstance(definition, RubricMetric) and definition.labelled_file is not None:
        labelled = definition.labelled_file.expanduser()
        if not labelled.is_absolute():
            definition = definition.model_copy(update={"labelled_file": path.parent / labelled})
    return definition


def python_metric(
    *,
    range: tuple[float, float | None] = (0.0, 1.0),
    requires: Sequence[SampleField] = ("question",),
    higher_is_better: bool | None = True,
    description: str = "",
) -> Callable[[F], F]:
    """Mark a function as a metric an installed package offers through the `ragmetrics.metrics` entry points.

    The function takes the `RagSample` and returns a number in `range`, None (or `(None, reason)`) for not
    applicable, or `(value, reason)`, exactly as a `python` metric in a config does.
    """

    def mark(function: F) -> F:
        setattr(function, _MARK, {"range": range, "requires": list(requires),
                                  "higher_is_better": higher_is_better, "description": description})  # fmt: skip
        return function

    return mark


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def entry_point_names() -> tuple[str, ...]:
    """Metric names installed packages offer (not loaded: a package is imported only when its metric is used)."""
    return tuple(sorted(_entry_points()))


def entry_point_definition(name: str) -> Any:
    """The definition behind entry point `name`: a decorated function becomes a `python` metric, a definition
    object is taken as it is (its name must be the entry point's)."""
    ep = _entry_points().get(name)
    if ep is None:
        raise ConfigError(
            f"no installed package offers a metric {name!r} (entry points {ENTRY_POINT_GROUP!r})"
        )
    where = f"entry point {name!r} ({ep.value})"
    try:
        target = ep.load()
    except Exception as exc:  # importing a team's package can raise anything
        raise ConfigError(f"{where}: cannot be loaded: {type(exc).__name__}: {exc}") from None
    if isinstance(target, ContainsMetric | MatchesMetric | PythonMetric | ToolCallsMetric | RubricMetric):
        if target.name != name:
            raise ConfigError(f"{where}: defines metric {target.name!r}, not {name!r}")
        return target
    meta = getattr(target, _MARK, None)
    if callable(target) and isinstance(meta, dict):
        try:
            return PythonMetric(type="python", name=name, function=ep.value, **meta)
        except ValidationError as exc:
            raise ConfigError(f"{where}: {_problems(exc)}") from None
    raise ConfigError(
        f"{where}: is neither a function marked with @ragmetrics.python_metric(...) nor a metric definition"
    )
