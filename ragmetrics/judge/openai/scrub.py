"""Keeping secrets out of everything a judge failure writes: results, reports, logs.

A secret can reach an error message three ways: the API key (some gateways echo the key they rejected),
user info in `base_url` (``https://user:pass@host``), and query values in `base_url` (Azure's
``?api-version=...``, proxies that take ``?token=...``), which servers and proxies echo back with the URL.
`Scrubber` blanks every one of them; `public_url` is the one rule for recording an endpoint.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit, urlunsplit

__all__ = ["REDACTED", "Scrubber", "public_url", "split_base_url", "url_secrets"]

# The HTTP stack logs full request URLs (httpx at INFO, openai at DEBUG): user info and query included.
_THIRD_PARTY_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "openai._base_client")

REDACTED = "[redacted]"
_MIN_SECRET_LENGTH = 4  # shorter values (a "1", "v2") are not secrets and would blank ordinary words


def public_url(url: str | None) -> str | None:
    """`url` without user info, query or fragment, so a URL that carries credentials is safe to record."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets, or the port would read as part of the address
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def split_base_url(url: str | None) -> tuple[str | None, dict[str, str]]:
    """(`url` without its query, the query's parameters).

    The `openai` client appends request paths to `base_url` as text, so a query in it ends up in the middle
    of the path (``/v1/?x=1chat/completions``); passed as the client's default query instead, it reaches
    the server as intended.
    """
    if url is None:
        return None, {}
    parts = urlsplit(url)
    if not parts.query:
        return url, {}
    base = urlunsplit((parts.scheme, parts.netloc, parts.path, "", parts.fragment))
    return base, dict(parse_qsl(parts.query, keep_blank_values=True))


def url_secrets(url: str | None) -> list[str]:
    """The parts of a URL that may be credentials (user info, query values), in every form they may be echoed."""
    if not url:
        return []
    parts = urlsplit(url)
    found = {v for v in (parts.username, parts.password) if v}
    found.update(v for _, v in parse_qsl(parts.query, keep_blank_values=True))
    if parts.username is not None:
        # User info is sent as HTTP Basic auth: base64 of "user:password" is the form a server can echo.
        from base64 import b64encode
        from urllib.parse import unquote

        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        found.add(b64encode(pair.encode("utf-8")).decode("ascii"))
        found.update(unquote(v) for v in (parts.username, parts.password) if v)
    return _with_encodings(s for s in found if len(s) >= _MIN_SECRET_LENGTH)


class Scrubber:
    """Replaces every known secret (and its URL-encoded forms) in a text with `REDACTED`."""

    def __init__(
        self, *, api_key: str | None = None, base_url: str | None = None, secrets: Iterable[str] = ()
    ) -> None:
        given = [api_key, *secrets] if api_key else list(secrets)
        keys = [k for k in given if k and len(k) >= _MIN_SECRET_LENGTH]
        self._secrets = sorted(set(_with_encodings(keys)) | set(url_secrets(base_url)), key=len, reverse=True)
        if self._secrets:
            _LOG_FILTER.add(self)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text


def _with_encodings(secrets: Iterable[str]) -> list[str]:
    """Each secret as given and as it appears inside a URL; longest first so no fragment survives."""
    forms = {form for s in secrets for form in (s, quote(s, safe=""), quote_plus(s))}
    return sorted(forms, key=len, reverse=True)


class _SecretLogFilter(logging.Filter):
    """Scrubs every known secret out of the HTTP stack's log records before any handler sees them."""

    def __init__(self) -> None:
        super().__init__()
        self._scrubbers: list[Scrubber] = []
        self._lock = threading.Lock()
        self._installed = False

    def add(self, scrubber: Scrubber) -> None:
        with self._lock:
            self._scrubbers.append(scrubber)
            if not self._installed:
                for name in _THIRD_PARTY_LOGGERS:
                    logging.getLogger(name).addFilter(self)
                self._installed = True

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        scrubbed = text
        for scrubber in list(self._scrubbers):
            scrubbed = scrubber(scrubbed)
        if scrubbed != text:
            record.msg, record.args = scrubbed, None
        return True


_LOG_FILTER = _SecretLogFilter()
