"""An aligned metric's prompt: the metric's own prompt plus the team's guidance and labelled examples.

`ragmetrics align` chooses both from a team's labels (few-shot examples: samples people judged, with their
verdict; guidance: a refinement of the criterion the judge model proposed from its disagreements with them).
They are appended to the system message after the metric's instructions, in texts that live in
`prompts/_align.yaml`; the examples are judged text, so they are fenced (escaped) like every input and the
prompt says they are data. The edited prompt's version hashes the original version, the texts and the edit,
so its verdicts are cached apart from the unaligned metric's, and the report's prompt versions show it.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from ragmetrics.errors import ConfigError
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.prompts import ALIGN_FILE, P, PromptLibrary, content_version, fence

__all__ = [
    "AlignTexts",
    "EditedLibrary",
    "LabelledExample",
    "PromptEdit",
    "align_texts",
    "edit_prompt",
    "example_of",
]

_FIELDS = ("question", "contexts", "answer", "reference")


class LabelledExample(BaseModel):
    """A sample as the judge sees it (question, contexts, answer, reference as the metric reads them) and the
    people's label in [0, 1]."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sample_id: str
    fields: dict[str, str | list[str]]
    label: float = Field(ge=0.0, le=1.0)


class PromptEdit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    guidance: str | None = None
    examples: list[LabelledExample] = Field(default_factory=list)

    def empty(self) -> bool:
        return not self.guidance and not self.examples


@dataclasses.dataclass(frozen=True)
class AlignTexts:
    guidance: str
    examples: str
    label_yes: str
    label_no: str
    version: str


@cache
def align_texts() -> AlignTexts:
    entry = resources.files("ragmetrics").joinpath("prompts", ALIGN_FILE)
    raw = entry.read_bytes()
    data = yaml.safe_load(raw)
    keys = {"guidance", "examples", "label_yes", "label_no"}
    if not isinstance(data, dict) or set(data) != keys:
        raise ConfigError(f"{entry}: expected exactly the keys {sorted(keys)}")
    return AlignTexts(**{k: str(data[k]) for k in sorted(keys)}, version=content_version(raw.decode()))


def example_of(sample: RagSample, label: float, reads: tuple[str, ...]) -> LabelledExample:
    """`sample` as a labelled example, with the fields the metric reads."""
    fields: dict[str, str | list[str]] = {}
    for name in reads:
        if name == "contexts":
            fields["contexts"] = list(sample.context_list)
        elif name in _FIELDS:
            value = getattr(sample, name, None)
            if isinstance(value, str):
                fields[name] = value
        else:  # a dataset column a rubric reads
            extra = (sample.extra or {}).get(name)  # the dataset's other columns (RagSample forbids extra keys)
            if isinstance(extra, str):
                fields[name] = extra
    return LabelledExample(sample_id=sample.id, fields=fields, label=label)


def _render_example(n: int, example: LabelledExample, texts: AlignTexts) -> str:
    parts = [f'<example n="{n}">']
    for name, value in example.fields.items():
        if isinstance(value, list):
            chunks = "\n".join(f'<chunk id="{i}">{fence(t)}</chunk>' for i, t in enumerate(value, start=1))
            parts.append(f"<{name}>\n{chunks}\n</{name}>")
        else:
            parts.append(f"<{name}>{fence(value)}</{name}>")
    verdict = texts.label_yes if example.label >= 0.5 else texts.label_no
    parts.append(f"<people_verdict>{verdict.format(label=f'{example.label:g}')}</people_verdict>")
    parts.append("</example>")
    return "\n".join(parts)


def edit_block(edit: PromptEdit) -> str:
    texts = align_texts()
    blocks: list[str] = []
    if edit.guidance:
        blocks.append(texts.guidance.rstrip("\n") + "\n" + edit.guidance.strip())
    if edit.examples:
        rendered = "\n".join(_render_example(n, e, texts) for n, e in enumerate(edit.examples, start=1))
        blocks.append(
            texts.examples.rstrip("\n") + f"\n<labelled_examples>\n{rendered}\n</labelled_examples>"
        )
    return "\n\n".join(blocks)


def edit_prompt(prompt: P, edit: PromptEdit) -> P:
    """`prompt` with `edit` appended to its system message, under a version of its own."""
    if edit.empty():
        return prompt
    block = edit_block(edit)
    version = content_version(prompt.version, align_texts().version, edit.model_dump(mode="json"))
    system = prompt.system.rstrip("\n") + "\n\n" + block + "\n"
    return dataclasses.replace(prompt, system=system, version=version)


class EditedLibrary(PromptLibrary):
    """A prompt library whose prompts named in `edits` (a prompt name, or `rubric:<metric>`) carry their edit."""

    def __init__(self, base: PromptLibrary, edits: dict[str, PromptEdit]) -> None:
        super().__init__(dict(base._prompts), base.shared, base.location, base.rubric)
        self.edits = {name: edit for name, edit in edits.items() if not edit.empty()}
        for name in self.edits:
            if name in self._prompts:
                self._prompts[name] = edit_prompt(self._prompts[name], self.edits[name])

    def adjust(self, prompt: P) -> P:
        edit = self.edits.get(prompt.name)
        return prompt if edit is None else edit_prompt(prompt, edit)

    def describe(self) -> dict[str, Any]:
        return {
            name: {"guidance": bool(e.guidance), "examples": len(e.examples)}
            for name, e in self.edits.items()
        }
