"""One error hierarchy, so callers can catch by cause and messages always say where and what."""

from __future__ import annotations


class RagmetricsError(Exception):
    """Base class of every error ragmetrics raises on purpose."""


class InputError(RagmetricsError, ValueError):
    """Bad user data: the message names the source (file, line, field) and what was wrong.

    `source` is a file path or a description such as ``"qrels dict"``; `line` is 1-based where it applies;
    `field` names the column or key.
    """

    def __init__(
        self,
        what: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.what = what
        self.source = source
        self.line = line
        self.field = field
        where = []
        if source is not None:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {what}" if prefix else what)


class ConfigError(RagmetricsError, ValueError):
    """A configuration file or option is invalid; the message names the key."""


class JudgeError(RagmetricsError):
    """A judge verdict could not be obtained (transport, server, or invalid output after repairs)."""

    def __init__(self, message: str, *, cause: str = "error") -> None:
        self.cause = cause
        super().__init__(message)
