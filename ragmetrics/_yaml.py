"""Reading a YAML file a person wrote (a config, a metric definition): safe, bounded, every problem a
ConfigError naming the file and, for bad YAML, the line and column."""

from __future__ import annotations

import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ragmetrics._textfile import read_utf8
from ragmetrics.errors import ConfigError, InputError

__all__ = ["MAX_YAML_BYTES", "NoAliasLoader", "key_path", "read_yaml_file"]

MAX_YAML_BYTES = 1_000_000
"""A config or a metric file is a page of YAML; anything larger is not one (and would be read whole)."""


class NoAliasLoader(yaml.SafeLoader):
    """yaml.safe_load without anchors and aliases: a config has no use for them, and nested aliases expand
    exponentially (a few hundred bytes can become gigabytes: the "billion laughs")."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None,
                None,
                "aliases (*name) are not allowed in a config; write the value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)


def _file_kind(path: Path) -> str:
    mode = path.stat().st_mode
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def read_yaml_file(path: Path, *, what: str = "config") -> Any:
    """The parsed content of a YAML file; `what` names the kind of file in messages ("config", "metric")."""
    if path.exists() and not path.is_dir() and not path.is_file():
        raise ConfigError(f"{path}: not a regular file ({_file_kind(path)}); give a YAML {what} file")
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    if size > MAX_YAML_BYTES:
        raise ConfigError(f"{path}: {size:,} bytes; a {what} is at most {MAX_YAML_BYTES:,} bytes")
    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"{path}: {what} file not found")
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder, not a {what} file")
    try:
        text = read_utf8(path, allow_empty=True, limit=MAX_YAML_BYTES, prefix=f"cannot read {what} file: ")
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    try:
        data = yaml.load(text, Loader=NoAliasLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}:{where}: invalid YAML: {problem}") from None
    if data is None:
        raise ConfigError(f"{path}: {what} file is empty")
    return data


def key_path(loc: Sequence[int | str], data: Any) -> tuple[str, bool]:
    """A pydantic error location as the keys the user wrote in the YAML (configs and metric files alike), union
    tags such as `rubric` or `file` left out; and whether that key exists in the input."""
    parts: list[str] = []
    node = data
    for index, part in enumerate(loc):
        if isinstance(part, int) and isinstance(node, list):
            parts.append(f"[{part}]")
            node = node[part] if 0 <= part < len(node) else None
        elif (
            isinstance(node, Mapping)
            and isinstance(part, str)
            and index < len(loc) - 1
            and part in node.values()
            and part == node.get("source", node.get("kind", node.get("type")))
        ):
            continue  # a union tag that is also a key's name (runs.0.retriever.<key> of a retriever run)
        elif isinstance(node, Mapping) and part in node:
            parts.append(f".{part}" if parts else str(part))
            node = node[part]
        elif isinstance(node, Mapping) and isinstance(part, str) and part in node.values():
            continue  # a union tag such as 'file' in runs.0.file.path
        elif (
            isinstance(part, str)
            and not part.startswith(("function-", "literal["))
            and isinstance(node, Mapping)
        ):
            parts.append(f".{part}" if parts else part)
            node = None
    return "".join(parts), node is not None
