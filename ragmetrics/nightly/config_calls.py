"""How the team's own code is called from a config: a Python callable or an HTTP endpoint (`target`), with
its version, cache key, concurrency, timeouts and retries; shared by pipeline runs and the `generator:` section.

Credentials never live here: an endpoint's headers name the environment variables that hold them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from ragmetrics.nightly.config_base import _Section

_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class HttpTarget(_Section):
    """An HTTP endpoint of the team's system: POST JSON in, JSON out (docs/nightly.md, "Your own pipeline")."""

    url: str = Field(description="http(s) URL the inputs are POSTed to as JSON")
    headers_env: dict[str, str] = Field(
        default_factory=dict,
        description="header name -> environment variable holding its value (credentials never in a config)",
    )
    timeout_s: float | None = Field(
        default=None, gt=0, le=86_400, description="per-request timeout (default: the call's timeout_s)"
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected an http:// or https:// URL with a host, got {v[:60]!r}")
        if parts.username or parts.password:
            raise ValueError("credentials in the URL are refused: put them in headers_env")
        return v

    @field_validator("headers_env")
    @classmethod
    def _names(cls, v: dict[str, str]) -> dict[str, str]:
        for header, env in v.items():
            if not _HEADER_NAME.match(header):
                raise ValueError(f"{header!r} is not a valid HTTP header name")
            if not _ENV_NAME.match(env):
                raise ValueError(f"header {header!r}: {env!r} is not an environment variable name")
        return v


Target = str | HttpTarget


def _check_target(v: Target) -> Target:
    if isinstance(v, str) and not _CALLABLE.match(v):
        raise ValueError(
            f"target {v!r}: expected 'package.module:function' (a Python callable) or a mapping with a url"
        )
    return v


class CallSettings(_Section):
    """How the team's code is called: which target, its version, concurrency, timeouts, retries."""

    target: Target = Field(description="'package.module:function', or {url, headers_env, timeout_s}")
    version: str | None = Field(
        default=None,
        min_length=1,
        description="part of the output cache key: your system's version (a callable's code is keyed anyway: "
        "its module and the project modules it imports; an endpoint's is not, so set it to your deploy's version)",
    )
    cache_key: str | None = Field(
        default=None,
        min_length=1,
        description="part of the output cache key: what decides outputs that the code does not show, such as an "
        "index version or a git SHA; a new value calls every question afresh",
    )
    cache_key_env: list[str] = Field(
        default_factory=list,
        description="environment variables whose values are part of the output cache key (as a hash; values "
        "are stored nowhere), beside those the callable's project code reads by name, which are keyed anyway",
    )
    concurrency: int = Field(default=8, ge=1, le=1024, description="calls in flight at once")
    timeout_s: float = Field(default=120.0, gt=0, le=86_400, description="per call, seconds")
    retries: int = Field(
        default=2, ge=0, le=20, description="HTTP: retries on 429, 5xx, timeouts and connection errors"
    )
    python_path: list[Path] = Field(
        default_factory=list,
        description="folders searched first for a callable target's module (relative to the config; the "
        "config's folder and the working directory are always searched)",
    )

    @field_validator("target")
    @classmethod
    def _target(cls, v: Target) -> Target:
        return _check_target(v)

    @field_validator("cache_key_env")
    @classmethod
    def _env_names(cls, v: list[str]) -> list[str]:
        for i, name in enumerate(v):
            if not _ENV_NAME.match(name):
                raise ValueError(f"[{i}]: {name!r} is not an environment variable name")
            if name in v[:i]:
                raise ValueError(f"[{i}]: {name!r} is listed twice")
        return v

    def cache_settings(self) -> dict[str, Any]:
        """The settings that reach a call's output, for its cache key (`nightly.call_identity`); how calls
        are made (concurrency, timeouts, retries, where the module is found) decides no output."""
        target = (
            self.target if isinstance(self.target, str) else self.target.model_dump(exclude={"timeout_s"})
        )
        return {"target": target, "version": self.version, "cache_key": self.cache_key,
                "cache_key_env": sorted(self.cache_key_env)}  # fmt: skip


class GeneratorConfig(CallSettings):
    """An answer for every run: the team's generator called with the question and a run's top-k contexts."""

    top_k: int = Field(default=3, ge=1, le=100, description="contexts passed to the generator per question")
    runs: list[str] | None = Field(
        default=None,
        description="runs to generate answers for (default: every run without answers of its own)",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        """`generator: "package.module:function"`, the shape a pipeline's target takes, means that target."""
        return {"target": data} if isinstance(data, str) else data
