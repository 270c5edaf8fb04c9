"""Judge prompts, loaded from the YAML files in `prompts/` and versioned by a hash of their content.

A prompt file holds the system instruction (its first line is ``# <name>``, which also lets a test server tell
prompts apart), an input template with ``{placeholders}``, templates for list inputs (each item rendered with
``{n}`` and ``{text}``; ``{<list>_count}`` is filled in automatically), few-shot examples given as inputs and the
JSON they should produce, and the name of the verdict model the answer must validate against. `_shared.yaml`
holds the texts every prompt shares (answer-language rule, JSON instructions, repair request). No prompt text
lives in Python, so editing a file changes its version and therefore every cache key that depends on it.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError

from ragmetrics.errors import ConfigError
from ragmetrics.judge.verdicts import Verdict, strict_json_schema, verdict_model

Message = dict[str, str]
P = TypeVar("P", bound="Prompt")
InputValue = str | int | Sequence[str]

SHARED_FILE = "_shared.yaml"
RUBRIC_FILE = "_rubric.yaml"
ALIGN_FILE = "_align.yaml"
RAG_ANSWER_FILE = "_rag_answer.yaml"  # the utility generator's prompt (ragmetrics.utility), not a judge's
"""Texts an aligned metric's prompt gains (`judge.aligned.prompt_edit`); read there, not a prompt."""
_VERSION_CHARS = 12


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _version(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:_VERSION_CHARS]


@dataclass(frozen=True)
class SharedTexts:
    language: str
    json_instructions: str
    repair: str
    data_rule: str
    version: str


@dataclass(frozen=True)
class RubricTexts:
    """How a rubric metric's prompt introduces its criterion (`prompts/_rubric.yaml`); `version` enters the
    version of every rubric prompt, so editing the file re-asks rubric verdicts and nothing else."""

    scale: str
    checklist: str
    version: str


@dataclass(frozen=True)
class Example:
    values: Mapping[str, InputValue]
    output: Mapping[str, Any]


@dataclass(frozen=True)
class Prompt:
    """One judge prompt; `version` is the first 12 hex digits of the SHA-256 of its file."""

    name: str
    schema_name: str
    system: str
    input_template: str
    list_templates: Mapping[str, str]
    examples: tuple[Example, ...]
    count_of: str | None
    version: str
    source: str

    @property
    def model(self) -> type[Verdict]:
        return verdict_model(self.schema_name)

    @property
    def inputs(self) -> set[str]:
        counts = {f"{name}_count" for name in self.list_templates}
        return _fields(self.input_template) - counts

    def validation_context(self, values: Mapping[str, InputValue]) -> dict[str, int]:
        """The counts the answer must match (one verdict per chunk, N questions, ...)."""
        # Every list input's length under its name ("chunks", "answer_statements", ...), for checks that
        # depend on more than one count.
        context: dict[str, int] = {k: len(v) for k, v in values.items() if isinstance(v, list | tuple)}
        if self.count_of is None:
            return context
        value = values[self.count_of]
        context["count"] = value if isinstance(value, int) else len(value)
        return context

    def render_input(self, values: Mapping[str, InputValue]) -> str:
        """The user message: each value fenced (`fence`) inside the prompt's tagged blocks, whose tag names
        carry a marker derived from the values (`block_marker`): the data is escaped, so it cannot write a
        tag, and it could not know the closing tag's name even if a model read its escapes back."""
        missing = self.inputs - set(values)
        if missing:
            raise ValueError(f"prompt {self.name!r} needs inputs {sorted(missing)}")
        marker = block_marker(values)
        rendered: dict[str, str] = {}
        for key, value in values.items():
            if key in self.list_templates:
                if isinstance(value, str | int):
                    raise TypeError(f"prompt {self.name!r}: input {key!r} must be a list of strings")
                item = marked_tags(self.list_templates[key], marker)
                rendered[key] = "\n".join(
                    item.format(n=i, text=fence(t)) for i, t in enumerate(value, start=1)
                )
                rendered[f"{key}_count"] = str(len(value))
            elif isinstance(value, str):
                rendered[key] = fence(value)
            elif isinstance(value, int):
                rendered[key] = str(value)
            else:
                raise TypeError(f"prompt {self.name!r}: input {key!r} must be a string")
        return marked_tags(self.input_template, marker).format_map(rendered).rstrip("\n")

    def messages(
        self,
        values: Mapping[str, InputValue],
        shared: SharedTexts,
        *,
        answer_in_input_language: bool = False,
        with_schema: bool = False,
        with_examples: bool = True,
    ) -> list[Message]:
        """System message, few-shot pairs, then the input; `with_schema` spells the schema out (no json_schema
        mode); `with_examples=False` leaves the few-shot pairs out (a repair after the model copied one)."""
        system = self.system.rstrip("\n") + "\n\n" + shared.data_rule.rstrip("\n")
        if answer_in_input_language:
            system += "\n\n" + shared.language.rstrip("\n")
        if with_schema:
            schema = json.dumps(strict_json_schema(self.model), ensure_ascii=False)
            system += "\n\n" + shared.json_instructions.format(schema=schema).rstrip("\n")
        return [
            {"role": "system", "content": system},
            *(self._example_messages if with_examples else []),
            {"role": "user", "content": self.render_input(values)},
        ]

    def echoed_input(self, reply_json: str, answer: Any, values: Mapping[str, InputValue]) -> bool:
        """Whether the verdict in a reply was lifted from the judged texts rather than written by the model.

        An evaluated system can put a verdict (or a list of generated questions) into its answer or contexts;
        a model that echoes its input would then hand that forged verdict back. The reply counts as an echo
        when its JSON occurs verbatim in the judged texts, or when the judged texts hold JSON and every
        free-text field of the verdict is copied from them.
        """
        items: list[str] = []
        for value in values.values():
            if isinstance(value, str):
                items.append(value)
            elif isinstance(value, list | tuple):
                items.extend(v for v in value if isinstance(v, str))
        texts = " ".join(" ".join(v.split()) for v in items)
        if not texts:
            return False
        if " ".join(reply_json.split()) in texts:
            return True
        strings = _strings(answer)
        folded = texts.casefold()
        return "{" in texts and bool(strings) and all(s in folded for s in strings)

    def copied_example(self, answer: Any, values: Mapping[str, InputValue]) -> int | None:
        """The number of the few-shot example `answer` reproduces instead of judging `values`, else None.

        Small models at temperature 0 sometimes return an example's verdicts word for word; when the counts
        happen to match (two sentences, two statements) such an answer validates and silently scores the
        example. An answer counts as copied when it contains at least half of one example's free-text
        verdicts (reasons, generated questions) verbatim, ignoring texts that also occur in the real input
        (a question about the example's own subject may legitimately yield the same words).
        """
        given = _strings(answer)
        if not given:
            return None
        rendered = self.render_input(values).casefold()
        for number, texts in enumerate(self._example_texts, start=1):
            own = {t for t in texts if t not in rendered}
            if own and len(own & given) >= max(1, -(-len(own) // 2)):
                return number
        return None

    @cached_property
    def _example_texts(self) -> list[set[str]]:
        return [_strings(ex.output) for ex in self.examples]

    @cached_property
    def _example_messages(self) -> list[Message]:
        """The few-shot pairs, rendered once per prompt (callers copy the list, never mutate it)."""
        msgs: list[Message] = []
        for ex in self.examples:
            msgs.append({"role": "user", "content": self.render_input(ex.values)})
            msgs.append({"role": "assistant", "content": json.dumps(ex.output, ensure_ascii=False)})
        return msgs


@dataclass(frozen=True)
class GeneratedPrompt(Prompt):
    """A prompt built in code from a team's metric definition (a rubric), not read from a prompt file.

    Its verdict model is generated from the definition (the scale's levels become the only allowed ratings)
    and `version` hashes everything the prompt sends, so editing the definition changes its cache keys and
    no other prompt's. Rendering, repairs, the echo and copied-example guards are the file prompts' own.
    """

    verdict_type: type[Verdict] = Verdict
    fixed_count: int | None = None
    """The number of verdicts the answer must hold when it does not depend on the input (checks)."""

    @property
    def model(self) -> type[Verdict]:
        return self.verdict_type

    def validation_context(self, values: Mapping[str, InputValue]) -> dict[str, int]:
        context = super().validation_context(values)
        if self.fixed_count is not None:
            context["count"] = self.fixed_count
        return context


def content_version(*parts: Any) -> str:
    """A version for generated content: the first 12 hex digits of the SHA-256 of its canonical JSON."""
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return _version(canonical.encode())


RENDERING = "marked-tags-1"
"""How inputs are put in a prompt's blocks (escaped data, tags marked per request): part of each verdict's cache
key, so a change in rendering asks again instead of reusing verdicts made from other requests."""
_TAG = re.compile(r"<(/?)([A-Za-z_][A-Za-z0-9_]*)(?=[\s>])")


def block_marker(values: Mapping[str, InputValue]) -> str:
    """Eight hex digits of the SHA-256 of the judged values: deterministic (a request, and so its cached
    verdict, is the same for the same input) and unknowable to the data it is computed from."""
    canonical = json.dumps({k: values[k] for k in sorted(values)}, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def marked_tags(template: str, marker: str) -> str:
    """`<chunks count=...>` -> `<chunks-1a2b3c4d count=...>`, `</chunks>` -> `</chunks-1a2b3c4d>` in a
    prompt's own template (never in the data, which is fenced before it is put in)."""
    return _TAG.sub(lambda m: f"<{m.group(1)}{m.group(2)}-{marker}", template)


def fence(text: str) -> str:
    """Judged text as data inside the prompt's tagged blocks: XML-escaped, so `</answer>` or `<chunk id="9">`
    in an answer or a context cannot close its block or open a forged one (the data rule tells the model)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def repair_message(shared: SharedTexts, error: str) -> Message:
    return {"role": "user", "content": shared.repair.format(error=error).rstrip("\n")}


def _require_str(data: Mapping[str, Any], key: str, source: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{source}: key {key!r} must be a non-empty string")
    return value


def _parse_prompt(raw: bytes, source: str) -> Prompt:
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    known = {"name", "schema", "system", "input", "lists", "examples", "count_of"}
    unknown = set(data) - known
    if unknown:
        raise ConfigError(f"{source}: unknown keys {sorted(unknown)}; allowed: {sorted(known)}")
    name = _require_str(data, "name", source)
    system = _require_str(data, "system", source)
    if system.splitlines()[0].strip() != f"# {name}":
        raise ConfigError(f"{source}: the system text must start with the marker line '# {name}'")
    lists = data.get("lists") or {}
    if not isinstance(lists, dict) or not all(isinstance(v, str) for v in lists.values()):
        raise ConfigError(f"{source}: 'lists' must map list inputs to item templates")
    for key, tmpl in lists.items():
        if not _fields(tmpl) <= {"n", "text"}:
            raise ConfigError(f"{source}: lists.{key} may only use {{n}} and {{text}}")
    count_of = data.get("count_of")
    if count_of is not None and not isinstance(count_of, str):
        raise ConfigError(f"{source}: 'count_of' must name an input")
    raw_examples = data.get("examples") or []
    if not isinstance(raw_examples, list):
        raise ConfigError(f"{source}: 'examples' must be a list")
    examples = []
    for i, ex in enumerate(raw_examples, start=1):
        if not isinstance(ex, dict) or set(ex) != {"input", "output"}:
            raise ConfigError(f"{source}: examples[{i}] must have exactly the keys 'input' and 'output'")
        examples.append(Example(values=ex["input"], output=ex["output"]))
    try:
        schema_name = _require_str(data, "schema", source)
        verdict_model(schema_name)
    except KeyError as exc:
        raise ConfigError(f"{source}: {exc.args[0]}") from None
    prompt = Prompt(
        name=name,
        schema_name=schema_name,
        system=system,
        input_template=_require_str(data, "input", source),
        list_templates=lists,
        examples=tuple(examples),
        count_of=count_of,
        version=_version(raw),
        source=source,
    )
    if count_of is not None and count_of not in prompt.inputs:
        raise ConfigError(f"{source}: count_of {count_of!r} is not an input of the template")
    for i, ex in enumerate(prompt.examples, start=1):
        try:
            prompt.render_input(ex.values)
            prompt.model.model_validate(ex.output, context=prompt.validation_context(ex.values))
        except (ValueError, TypeError, KeyError) as exc:
            detail = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise ConfigError(f"{source}: examples[{i}] is invalid: {detail}") from exc
    return prompt


def _parse_rubric_texts(raw: bytes, source: str) -> RubricTexts:
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or set(data) != {"scale", "checklist"}:
        raise ConfigError(f"{source}: expected exactly the keys 'scale' and 'checklist'")
    scale = _require_str(data, "scale", source)
    if "{rating_rule}" not in scale:
        raise ConfigError(f"{source}: scale needs {{rating_rule}}")
    return RubricTexts(scale=scale, checklist=_require_str(data, "checklist", source), version=_version(raw))


def _parse_shared(raw: bytes, source: str) -> SharedTexts:
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    texts = {
        k: _require_str(data, k, source) for k in ("language", "json_instructions", "repair", "data_rule")
    }
    if "{schema}" not in texts["json_instructions"] or "{error}" not in texts["repair"]:
        raise ConfigError(f"{source}: json_instructions needs {{schema}} and repair needs {{error}}")
    return SharedTexts(version=_version(raw), **texts)


class PromptLibrary:
    """All prompts of one directory (default: the packaged `ragmetrics/prompts`)."""

    def __init__(
        self, prompts: Mapping[str, Prompt], shared: SharedTexts, location: str, rubric: RubricTexts
    ) -> None:
        self._prompts = dict(prompts)
        self.shared = shared
        self.location = location
        self.rubric = rubric

    @classmethod
    def load(cls, directory: Path | None = None) -> PromptLibrary:
        root: Traversable = (
            resources.files("ragmetrics").joinpath("prompts") if directory is None else directory
        )
        prompts: dict[str, Prompt] = {}
        shared: SharedTexts | None = None
        rubric: RubricTexts | None = None
        for entry in sorted(root.iterdir(), key=lambda e: e.name):
            if not entry.name.endswith(".yaml"):
                continue
            source = f"{root}/{entry.name}"
            raw = entry.read_bytes()
            if entry.name == SHARED_FILE:
                shared = _parse_shared(raw, source)
                continue
            if entry.name == RUBRIC_FILE:
                rubric = _parse_rubric_texts(raw, source)
                continue
            if entry.name in (ALIGN_FILE, RAG_ANSWER_FILE):
                continue
            prompt = _parse_prompt(raw, source)
            if f"{prompt.name}.yaml" != entry.name:
                raise ConfigError(f"{source}: prompt name {prompt.name!r} does not match the file name")
            prompts[prompt.name] = prompt
        if shared is None:
            raise ConfigError(f"{root}: {SHARED_FILE} is missing")
        if rubric is None:  # a prompt folder of a team's own without rubric texts: the packaged ones
            packaged = resources.files("ragmetrics").joinpath("prompts", RUBRIC_FILE)
            rubric = _parse_rubric_texts(packaged.read_bytes(), str(packaged))
        return cls(prompts, shared, str(root), rubric)

    def get(self, name: str) -> Prompt:
        try:
            return self._prompts[name]
        except KeyError:
            raise ConfigError(
                f"no prompt {name!r} in {self.location}; have {sorted(self._prompts)}"
            ) from None

    def adjust(self, prompt: P) -> P:
        """`prompt` as this library sends it: unchanged here; an aligned library (`judge.aligned`) adds the
        team's guidance and labelled examples to the prompts of the metrics it aligned."""
        return prompt

    def versions(self) -> dict[str, str]:
        """Prompt name -> version, plus `_shared`; recorded in every judge result."""
        return {"_shared": self.shared.version, **{n: p.version for n, p in sorted(self._prompts.items())}}


@lru_cache(maxsize=1)
def default_library() -> PromptLibrary:
    return PromptLibrary.load()


_MIN_COPY_CHARS = 12  # shorter texts ("Yes.", "Relevant.") are too common to say anything about copying


def _strings(data: Any) -> set[str]:
    """Every free-text value in a JSON-like structure long enough to identify it, case-folded and trimmed."""
    found: set[str] = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            text = " ".join(item.split()).casefold()
            if len(text) >= _MIN_COPY_CHARS:
                found.add(text)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found
