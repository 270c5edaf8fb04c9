"""Where utility qrels came from, as a report stores it (`QrelsProvenance.utility`): the generator that answered
from each passage alone, the answer metric that scored it, when, and the runs whose top k were pooled.

Part of the schema floor, apart from schema.py so that the big module only gains its seam field: a utility
folder's utility.json (`ragmetrics utility`, `utility.manifest`) is read into it, the nightly job and the CLI
store it next to the other kinds of qrels provenance, and every renderer only reads it (`describe`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["UtilityOrigin"]


class UtilityOrigin(BaseModel):
    """The provenance of utility qrels (docs/utilities.md, "Files": utility.json's `provenance`)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    manifest: str = Field(description="the utility.json it was read from")
    generator: dict[str, Any] = Field(description="the generator's identity: kind, model, prompt, settings")
    metric: str = Field(description="the answer metric that scored each answer against the reference")
    created: str = Field(description="when the judgments were built (UTC, ISO 8601)")
    k: int = Field(ge=1, description="pool depth per run")
    runs: list[str] = Field(default_factory=list, description="the runs whose top k were pooled")
    max_grade: int = Field(ge=1, description="grade = round-half-up(score x max_grade)")
    logprobs_refused: str | None = Field(
        default=None, description="the server refused logprobs: the build went on without them (why)"
    )

    def describe(self) -> str:
        """One clause: who answered, how it was scored, when, from which pool."""
        kind = self.generator.get("kind")
        model = self.generator.get("model")
        who = (f"the {kind} generator" if kind else "a generator") + (f" ({model})" if model else "")
        pooled = f"the top {self.k} of {', '.join(self.runs)}" if self.runs else f"the top {self.k}"
        refused = (
            "; the server refused logprobs, so no probability of abstaining" if self.logprobs_refused else ""
        )
        return (
            f"utility judgments: answers of {who} from each passage alone, scored by {self.metric} "
            f"(0-{self.max_grade}), built {self.created}, pooled from {pooled}{refused}"
        )
