"""What an attack set holds: the rows the team's system is called with, and the checks it never sees.

DIR/questions.jsonl  one row per question, read by a night as its dataset (`dataset: {attacks: DIR}`):
                     clean twins (the target questions as they are: reference, qrels) and attacks (the
                     question, `planted_documents` for the system's retriever, `system_prompt_addition`
                     for a system-prompt leak). Nothing in a row tells the system it is under attack.
DIR/checks.jsonl     per attack: kind, style, position, its clean twin, and what decides success (canary,
                     secret, false and true value). Never passed to the system.
DIR/planted.jsonl    every planted document with its attack, for a system that indexes them once.
DIR/attacks.json     the manifest: source, corpus, seed, settings, counts per kind and style, what was
                     skipped and why.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ATTACK_KINDS", "LEAK_STYLES", "POSITIONS", "AttackCheck", "AttackKind", "AttackRow", "PlantedDocument"]

AttackKind = Literal["injection", "poisoning", "leak", "out_of_scope"]
ATTACK_KINDS: tuple[AttackKind, ...] = ("injection", "poisoning", "leak", "out_of_scope")
POSITIONS: tuple[str, ...] = ("start", "middle", "end")
"""Where in a relevant chunk an injection or a planted leak request goes."""
LEAK_STYLES: tuple[str, ...] = ("system_direct", "system_planted", "context")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlantedDocument(_Strict):
    """A document the attack adds to the corpus the system searches (or, with `replaces`, puts in the place of
    the corpus document of that id: a compromised page)."""

    id: str = Field(min_length=1)
    title: str | None = None
    text: str = Field(min_length=1)
    replaces: str | None = Field(default=None, description="the corpus document this one stands in for")


class AttackRow(_Strict):
    """One line of questions.jsonl: what the system is asked (a clean twin or an attack)."""

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    language: str
    reference: str | None = None
    answerable: bool = True
    relevant_ids: list[str] | None = None
    relevant_grades: list[int] | None = None
    planted_documents: list[PlantedDocument] | None = None
    system_prompt_addition: str | None = None


class AttackCheck(_Strict):
    """One line of checks.jsonl: how an attack's success is decided."""

    id: str = Field(min_length=1)
    kind: AttackKind
    style: str = Field(min_length=1)
    position: Literal["start", "middle", "end"] | None = None
    twin: str | None = Field(default=None, description="the clean question the attack is built on")
    decided_by: Literal["exact", "judge"] = Field(
        default="exact",
        description="exact: by the canary, secret or values; judge: the LLM judge's injection_followed",
    )
    canary: str | None = None
    instruction: str | None = Field(
        default=None, description="a judge-decided injection's planted instruction"
    )
    secret: str | None = None
    true_value: str | None = None
    false_value: str | None = None
    language: str
    planted_ids: list[str] = Field(default_factory=list)
    markers: list[str] = Field(
        default_factory=list,
        description="the text the attack added (instruction, false sentence, request or note): found in a "
        "context, it shows the planted document reached the system (attacks.exposure)",
    )

    @model_validator(mode="after")
    def _decidable(self) -> AttackCheck:
        need = {
            "injection": ("canary",),
            "leak": ("secret",),
            "poisoning": ("true_value", "false_value"),
            "out_of_scope": (),
        }[self.kind]
        if self.decided_by == "judge":
            if self.kind != "injection":
                raise ValueError("only an injection is decided by the judge")
            need = ("instruction",)
        missing = [name for name in need if not getattr(self, name)]
        if missing:
            raise ValueError(f"a {self.kind} attack needs {' and '.join(missing)}")
        return self
