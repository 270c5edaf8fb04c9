"""A nightly config file read, validated and made usable: strict validation through JSON (YAML's ``yes``
is not a threshold of 1.0), one error line per problem led by its key path with a guess at a misspelt key,
metric files read into the judge section, and relative paths resolved against the config file's folder."""

from __future__ import annotations

import difflib
import json
import os
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ragmetrics._yaml import key_path, read_yaml_file
from ragmetrics.errors import ConfigError
from ragmetrics.judge.own_metrics import load_metric_file
from ragmetrics.judge.rubric import RubricMetric
from ragmetrics.nightly.config_night import NightlyConfig
from ragmetrics.nightly.config_runs import RUN_SOURCES, FileRunSpec, PipelineRunSpec


def _resolve(path: Path | None, base: Path) -> Path | None:
    if path is None:
        return None
    path = path.expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def _resolve_paths(config: NightlyConfig, base: Path) -> NightlyConfig:
    """Make every relative path absolute against `base` (the config file's folder)."""
    ds = config.dataset
    if ds.format != "hub" and ds.path is not None:
        ds.path = _resolve(ds.path, base)
    ds.passages = _resolve(ds.passages, base)
    ds.traces = _resolve(ds.traces, base)
    ds.attacks = _resolve(ds.attacks, base)
    for spec in config.runs:
        if isinstance(spec, FileRunSpec):
            resolved = _resolve(spec.path, base)
            assert resolved is not None
            spec.path = resolved
    if config.judge is not None:
        config.judge.cache_path = _resolve(config.judge.cache_path, base)
        config.judge.aligned = _resolve(config.judge.aligned, base)
        config.judge.labels = _resolve(config.judge.labels, base)
        if config.judge.panel is not None and config.judge.panel.labels is not None:
            config.judge.panel.labels = _resolve(config.judge.panel.labels, base)
        config.judge.metric_files = [p for p in (_resolve(p, base) for p in config.judge.metric_files) if p]
        for i, item in enumerate(config.judge.custom_metrics):
            if isinstance(item, RubricMetric) and item.labelled_file is not None:
                labelled = _resolve(item.labelled_file, base)
                config.judge.custom_metrics[i] = item.model_copy(update={"labelled_file": labelled})
    config.pipeline_cache = _resolve(config.pipeline_cache, base)
    config.index_dir = _resolve(config.index_dir, base)
    calls = [s for s in config.runs if isinstance(s, PipelineRunSpec)]
    for settings in [*calls, *([config.generator] if config.generator is not None else [])]:
        settings.python_path = [p for p in (_resolve(p, base) for p in settings.python_path) if p is not None]
    out = _resolve(config.output.dir, base)
    assert out is not None
    config.output.dir = out
    config.baseline.path = _resolve(config.baseline.path, base)
    if config.human_labels is not None:
        config.human_labels.path = _resolve(config.human_labels.path, base)
    if config.pairwise is not None:
        config.pairwise.preferences = _resolve(config.pairwise.preferences, base)
    if config.utility_qrels is not None:
        config.utility_qrels.folder = _resolve(config.utility_qrels.folder, base)
    return config


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (through Optional, list[...], unions, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found += _models_in(arg)
    return found


def _did_you_mean(loc: tuple[int | str, ...]) -> str:
    """ "; did you mean 'output'?" for a misspelt key, from the keys its section accepts."""
    models: list[type[BaseModel]] = [NightlyConfig]
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        nested: list[type[BaseModel]] = []
        for model in models:
            field = model.model_fields.get(str(part))
            if field is not None:
                nested += _models_in(field.annotation)
        if nested:
            models = nested
    known = sorted({name for model in models for name in model.model_fields})
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    if not close and loc[0] != str(loc[-1]) and str(loc[-1]) in NightlyConfig.model_fields:
        return f"; {loc[-1]!r} is a top-level section of the config, not a key here"
    return f"; did you mean {close[0]!r}?" if close else ""


def format_validation_error(exc: ValidationError, data: Any) -> list[str]:
    """One line per problem, each led by the key path as the user wrote it (tags of unions left out)."""
    lines = []
    for err in exc.errors():
        path, value_loc = key_path(err["loc"], data)
        kind = err["type"]
        ctx = err.get("ctx") or {}
        if kind == "extra_forbidden":
            message = "unknown key" + _did_you_mean(err["loc"])
        elif kind == "missing":
            message = "required key is missing"
        elif kind in ("union_tag_invalid", "union_tag_not_found"):
            path += f".{ctx.get('discriminator', 'source').strip(chr(39))}"
            tags = ", ".join(RUN_SOURCES)  # runs[] is the only tagged union of the schema
            got = (
                f"unknown value {ctx['tag']!r}" if kind == "union_tag_invalid" else "required key is missing"
            )
            message = f"{got}; one of: {tags}"
        elif kind in ("model_type", "dict_type", "model_attributes_type"):
            message = f"expected a mapping of keys, got {_short(err.get('input'))}"
        else:
            # Validation runs on JSON, but the user wrote YAML: say "list" where pydantic says "array".
            message = str(err["msg"]).removeprefix("Value error, ").replace("valid array", "valid list")
            # A validator can point below its own field: "[2]: unknown metric ..." -> "metrics[2]: ...".
            if message.startswith("[") and "]: " in message:
                index, message = message.split(": ", 1)
                path += index
            elif value_loc and err["type"] not in ("value_error", "assertion_error"):
                message = f"{message} (got {_short(err.get('input'))})"
        lines.append(f"{path}: {message}" if path else message)
    return lines


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_config(data: Any, *, base_dir: Path, source: str = "config") -> NightlyConfig:
    """Validate an already-parsed config mapping; relative paths resolve against `base_dir`."""
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{source}: expected a mapping of sections at the top level, got {type(data).__name__}"
        )
    data, origins = with_metric_files(data, base_dir, source)
    try:
        # Strict, and through JSON so paths may still be strings: YAML's `yes` is not a drop of 1.0 and
        # "4" is not 4; a config says what it means or is refused.
        text = json.dumps(data, default=str)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: cannot be read as plain keys and values: {exc}") from None
    try:
        config = NightlyConfig.model_validate_json(text, strict=True)
    except ValidationError as exc:
        lines = format_validation_error(exc, data)
        if len(lines) == 1:
            raise ConfigError(f"{source}: {lines[0]}") from None
        raise ConfigError(f"{source}: {len(lines)} problems:\n  " + "\n  ".join(lines)) from None
    config._source_dir = base_dir.resolve()
    if config.judge is not None:
        config.judge._metric_origins = origins
    return _resolve_paths(config, base_dir.resolve())


def _shipped_rubrics_named(judge: Mapping[str, Any]) -> list[Path]:
    """Files of the shipped conversation rubrics that `judge.metrics` names and no file or inline definition
    declares (docs/conversations.md)."""
    from ragmetrics.judge.conversation import SHIPPED_RUBRICS, shipped_rubric_path

    metrics = judge.get("metrics")
    inline = judge.get("custom_metrics")
    declared = (
        {m.get("name") for m in inline if isinstance(m, Mapping)} if isinstance(inline, list) else set()
    )
    if not isinstance(metrics, list):
        return []
    return [
        shipped_rubric_path(m)
        for m in metrics
        if isinstance(m, str) and m in SHIPPED_RUBRICS and m not in declared
    ]


def with_metric_files(
    data: Mapping[str, Any], base_dir: Path, source: str
) -> tuple[Mapping[str, Any], dict[str, str]]:
    """The config with the definitions of `judge.metric_files` appended to `judge.custom_metrics` (each
    file checked on its own, so a problem names the file), and which file defined which metric."""
    judge = data.get("judge")
    files = judge.get("metric_files") if isinstance(judge, Mapping) else None
    if isinstance(judge, Mapping) and (files is None or isinstance(files, list)):
        files = [*(files or []), *_shipped_rubrics_named(judge)]
    if not isinstance(judge, Mapping) or not isinstance(files, list) or not files:
        return data, {}
    inline = judge.get("custom_metrics") or []
    if not isinstance(inline, list):
        return data, {}  # validation says what is wrong with it
    loaded: list[Any] = []
    origins: dict[str, str] = {}
    for i, entry in enumerate(files):
        if isinstance(entry, Path):  # a shipped conversation rubric, unless a file of the team's defines it
            definition = load_metric_file(entry)
            if definition.name in origins:
                continue
            origins[definition.name] = f"shipped rubric {entry.name}"
            loaded.append(definition.model_dump(mode="json"))
            continue
        if not isinstance(entry, str) or not entry.strip():
            raise ConfigError(f"{source}: judge.metric_files[{i}]: expected a file path, got {entry!r}")
        path = _resolve(Path(entry), base_dir.resolve())
        assert path is not None
        definition = load_metric_file(path)
        origins[definition.name] = str(path)
        loaded.append(definition.model_dump(mode="json"))
    return {**data, "judge": {**judge, "custom_metrics": [*inline, *loaded]}}, origins


def load_config(path: str | Path) -> NightlyConfig:
    """Read and validate a YAML config (`yaml.safe_load`); any problem is a ConfigError naming file and key."""
    path = Path(path)
    data = read_yaml_file(path, what="config")
    return parse_config(data, base_dir=path.parent, source=str(path))
