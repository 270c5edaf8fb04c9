"""What a panel of judges and a list of candidate judges are, as configs name them (docs/judges.md).

A panel member overlays a few backend keys (model, endpoint, key variable, prices, sampling) on the night's
judge settings; everything else (cache file, retries, concurrency, timeouts) is the night's. A member is a
judge of its own: its verdicts are cached under its identity (backend, endpoint, model: `judge.panel.identity`), so two members
never share a verdict even when they name the same model on two endpoints.

Two shapes use these models:

- ``judge: {panel: [...]}`` in a night's config (the short form, combined by the mean) or
  ``judge: {panel: {members: [...], combine: learned, labels: labels.csv}}``;
- the candidates file of ``ragmetrics judges``: single judges and panels made of them, by name.

Every problem is a pydantic error at the key that holds it (``judge.panel.members.1.backend``), which the
config loaders turn into an exit 2 naming that key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from ragmetrics.judge.prices import check_prices

__all__ = [
    "COMBINE_METHODS",
    "CandidatesFile",
    "JudgeCandidate",
    "PanelCandidate",
    "PanelMember",
    "PanelSettings",
]

CombineMethod = Literal["mean", "majority", "learned", "dawid_skene"]
COMBINE_METHODS: tuple[str, ...] = ("mean", "majority", "learned", "dawid_skene")

# The member keys that overlay the night's judge settings (the rest is shared by every member;
# `judge.panel.member_settings`). This module imports no other judge module, so settings.py can import it.
MEMBER_KEYS = (
    "backend",
    "model",
    "base_url",
    "api_key_env",
    "temperature",
    "seed",
    "price_per_million_tokens",
    "local_model",
    "max_concurrency",
    "timeout_s",
)


def _check_name(value: str) -> str:
    if not value.strip() or any(not ch.isprintable() or ch.isspace() for ch in value):
        raise ValueError(f"a judge name is printable characters without spaces, got {value!r}")
    return value


class PanelMember(BaseModel):
    """One judge: the keys it sets apart from the night's judge settings (`MEMBER_KEYS`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str | None = Field(
        default=None, description="how tables and the bill name it (default: model@host, or 'local')"
    )
    backend: Literal["openai", "local"] | None = Field(
        default=None,
        description="'openai' (any OpenAI-compatible endpoint) or 'local' (the built-in judge); default: "
        "'openai' when base_url or model is set, else 'local'",
    )
    model: str | None = Field(default=None, description="the chat model (default: the judge's)")
    base_url: str | None = Field(default=None, description="its endpoint (default: the judge's)")
    api_key_env: str | None = Field(default=None, description="variable holding its API key (default: the judge's)")
    temperature: float | None = None
    seed: int | None = None
    price_per_million_tokens: dict[str, float] | None = Field(
        default=None, description="{'prompt': USD, 'completion': USD} per 1M tokens: its share of the bill"
    )
    local_model: Literal["auto", "minilm", "e5"] | None = None
    max_concurrency: int | None = Field(default=None, ge=1, le=1024)
    timeout_s: float | None = Field(default=None, gt=0)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else _check_name(value)

    @field_validator("price_per_million_tokens")
    @classmethod
    def _prices(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        # checked here, at the member's own key, not later when its settings are built (a traceback then)
        return check_prices(value)

    def resolved_backend(self) -> Literal["openai", "local"]:
        if self.backend is not None:
            return self.backend
        return "openai" if (self.base_url or self.model) else "local"

    def label(self, default_model: str = "model", default_url: str | None = None) -> str:
        """Its name, or model@host (the local judge: 'local'); the defaults are the night's judge's."""
        if self.name is not None:
            return self.name
        if self.resolved_backend() == "local":
            return "local" if self.local_model in (None, "auto") else f"local-{self.local_model}"
        model = self.model or default_model
        url = self.base_url or default_url
        parts = urlsplit(url) if url else None
        host = "api.openai.com" if parts is None else (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
        return f"{model}@{host}"


class PanelSettings(BaseModel):
    """judge.panel: several judges scoring every (sample, metric) once each, their scores combined per metric."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    members: list[PanelMember] = Field(min_length=2, description="the judges (at least two)")
    combine: CombineMethod = Field(
        default="mean",
        description="'mean' of the members' scores; 'majority' of their verdicts cut at `threshold`; "
        "'learned': weights fitted on `labels`, cross-fitted; 'dawid_skene': each member's accuracy "
        "estimated without labels (EM)",
    )
    labels: Path | None = Field(default=None, description="the team's labels (required by combine: learned)")
    scale: float | None = Field(default=None, gt=0, description="labels are grades out of this scale")
    folds: int = Field(default=5, ge=2, le=50, description="cross-fitting folds of the learned weights")
    threshold: float = Field(default=0.5, gt=0, lt=1, description="a score at least this is a 'yes' verdict")
    seed: int = Field(default=0, description="the folds' shuffle")

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, value: Any) -> Any:
        return {"members": value} if isinstance(value, list) else value

    @model_validator(mode="after")
    def _consistent(self) -> PanelSettings:
        names = [m.label() for m in self.members]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"members: two members are named {twice[0]!r}; give each a distinct `name`")
        if self.combine == "learned" and self.labels is None:
            raise ValueError("labels: combine 'learned' fits the members' weights on labels; name the labels file")
        return self


class JudgeCandidate(PanelMember):
    """A single judge among the candidates of `ragmetrics judges` (a `name` is required)."""

    name: str = Field(description="how the table, chart and snippet name it")


class PanelCandidate(BaseModel):
    """A panel among the candidates: other candidates, by name, and how their scores combine."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    panel: list[str] = Field(min_length=2, description="names of single candidates (at least two)")
    combine: CombineMethod = "mean"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _check_name(value)


def _shape(value: Any) -> str:
    """A candidate with a `panel` key is a panel; any other is a single judge (so an error names one shape)."""
    if isinstance(value, dict):
        return "panel" if "panel" in value else "judge"
    return "panel" if isinstance(value, PanelCandidate) else "judge"


Candidate = Annotated[
    Annotated[JudgeCandidate, Tag("judge")] | Annotated[PanelCandidate, Tag("panel")], Discriminator(_shape)
]


class CandidatesFile(BaseModel):
    """The candidates file of `ragmetrics judges`: shared judge keys, then the candidates."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    judge: dict[str, Any] = Field(
        default_factory=dict, description="judge settings every candidate shares (cache_path, retries, ...)"
    )
    candidates: list[Candidate] = Field(min_length=1)

    @model_validator(mode="after")
    def _names(self) -> CandidatesFile:
        seen: set[str] = set()
        singles = {c.name for c in self.candidates if isinstance(c, JudgeCandidate)}
        for i, cand in enumerate(self.candidates):
            if cand.name in seen:
                raise ValueError(f"candidates.{i}.name: {cand.name!r} is named twice")
            seen.add(cand.name)
            if isinstance(cand, PanelCandidate):
                for j, member in enumerate(cand.panel):
                    if member not in singles:
                        raise ValueError(
                            f"candidates.{i}.panel.{j}: {member!r} is not a single judge among the candidates "
                            f"(known: {sorted(singles)})"
                        )
        return self

    def singles(self) -> list[JudgeCandidate]:
        return [c for c in self.candidates if isinstance(c, JudgeCandidate)]

    def panels(self) -> list[PanelCandidate]:
        return [c for c in self.candidates if isinstance(c, PanelCandidate)]
