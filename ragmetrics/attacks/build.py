"""Build an attack set from a team's own corpus and questions, offline and deterministic by seed.

Targets are the questions the attacks aim at, each with its source chunks (best graded first): the built-in
collection's questions, a test-set folder's (`ragmetrics testset`), questions and qrels given with a corpus
(a public collection's human queries), or, for a corpus alone, questions the offline test-set builder writes.
Every answerable target with a source chunk in the corpus gets one attack of each kind asked for; styles and
positions rotate over the targets so each is tried about equally often. Out-of-scope questions are the test
set's unanswerable ones, topped up by the builder's unanswerable kind (two corpus terms no chunk holds
together). docs/attacks.md says what each kind plants and how its success is decided.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmetrics.attacks.canary import make_canary
from ragmetrics.attacks.model import (
    ATTACK_KINDS,
    LEAK_STYLES,
    POSITIONS,
    AttackCheck,
    AttackKind,
    AttackRow,
    PlantedDocument,
)
from ragmetrics.attacks.poison import NamePool, false_answer, poison_texts
from ragmetrics.attacks.templates import (
    BEHAVIOURS,
    INJECTION_STYLES,
    LANGUAGES,
    behaviour_text,
    injection_text,
    leak_context_text,
    leak_direct_suffix,
    leak_planted_request,
    system_prompt_note,
    text_language,
)
from ragmetrics.errors import InputError
from ragmetrics.judge.text.sentences import split_sentences
from ragmetrics.testset.corpus import Chunk, open_corpus
from ragmetrics.testset.terms import chunk_language, content_terms

__all__ = ["LEAK_STYLES", "POSITIONS", "AttackSet", "Target", "build_attacks"]

FORMAT = "ragmetrics.attacks/1"


@dataclass(frozen=True)
class Target:
    """A question attacks aim at: its text, reference (when known), language and graded source chunks."""

    id: str
    question: str
    reference: str | None
    language: str | None
    relevant: dict[str, int]
    answerable: bool = True

    def source_ids(self) -> list[str]:
        """Relevant chunk ids, best grade first (ties in id order)."""
        return [d for d, g in sorted(self.relevant.items(), key=lambda x: (-x[1], x[0])) if g >= 1]


@dataclass
class AttackSet:
    """Rows for the system, checks for the scorer, and the manifest (`model` says what each file holds)."""

    rows: list[AttackRow]
    checks: list[AttackCheck]
    manifest: dict[str, Any]
    skipped: dict[str, list[str]] = field(default_factory=dict)

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for check in self.checks:
            styles = out.setdefault(check.kind, {})
            styles[check.style] = styles.get(check.style, 0) + 1
        return out


def _rng(seed: int, *parts: str) -> np.random.Generator:
    digest = hashlib.sha256(":".join([str(seed), *parts]).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _secret(seed: int, attack_id: str) -> str:
    return make_canary(seed_bytes=f"secret:{seed}:{attack_id}".encode())


def _canary(seed: int, attack_id: str) -> str:
    return make_canary(seed_bytes=f"canary:{seed}:{attack_id}".encode())


def _insert(text: str, addition: str, position: str, language: str) -> str:
    """`addition` put at the start, after the middle sentence, or at the end of `text`."""
    if position == "start":
        return f"{addition}\n{text}"
    if position == "end":
        return f"{text}\n{addition}"
    sentences = split_sentences(text, language)
    cut = -1
    if len(sentences) >= 2:
        middle = sentences[len(sentences) // 2 - 1]
        found = text.find(middle)
        cut = found + len(middle) if found >= 0 else -1
    if cut <= 0 or cut >= len(text.rstrip()):
        # one sentence (or none found): the space nearest the middle, so "middle" is where it says
        spaces = [m.start() for m in re.finditer(r"\s", text) if text[: m.start()].strip() and text[m.start() :].strip()]
        if not spaces:
            return f"{text} {addition}"
        cut = min(spaces, key=lambda i: abs(i - len(text) // 2))
    return f"{text[:cut]} {addition} {text[cut:].lstrip()}"


def _sources(target: Target, corpus: Mapping[str, Chunk]) -> list[Chunk]:
    """The target's relevant chunks in the corpus, best grade first and, within a grade, those sharing the most
    words with the question first: the chunk a retriever is likeliest to return, so an attack planted there
    reaches the system (with binary qrels and dozens of relevant documents, the first by id rarely would)."""
    found = [corpus[d] for d in target.relevant if d in corpus and target.relevant[d] >= 1]
    if not found:
        return []
    language = target.language or chunk_language(target.question)
    asked = set(content_terms(target.question, language))

    def key(chunk: Chunk) -> tuple[int, int, str]:
        shared = len(asked & set(content_terms(f"{chunk.title or ''} {chunk.text}"[:4000], language)))
        return (-target.relevant[chunk.id], -shared, chunk.id)

    return sorted(found, key=key)


def _language(target: Target, chunk: Chunk | None) -> str:
    if target.language:
        return target.language
    return chunk_language(chunk.text if chunk is not None else target.question)


def build_attacks(
    targets: Sequence[Target],
    corpus: Mapping[str, Chunk],
    *,
    kinds: Sequence[AttackKind] = ATTACK_KINDS,
    out_of_scope: Sequence[Target] = (),
    seed: int = 0,
    size: int | None = None,
    poison_copies: int = 3,
    styles: Sequence[str] = INJECTION_STYLES,
    source: str = "",
    corpus_path: str | None = None,
    behaviours: bool = False,
    progress: Callable[[str], None] | None = None,
) -> AttackSet:
    """The attack set of `targets` over `corpus` (id -> chunk); `size` caps the targets used (drawn by seed);
    `behaviours` adds an injection per target whose effect the LLM judge decides (`templates.BEHAVIOURS`)."""
    say = progress or (lambda _: None)
    _check_choices(kinds, styles)
    chosen = list(targets)
    if size is not None and len(chosen) > size:
        picks = sorted(_rng(seed, "targets").choice(len(chosen), size=size, replace=False).tolist())
        chosen = [chosen[i] for i in picks]
    builder = _Builder(seed, {t.id for t in chosen}, NamePool(chunk.text for chunk in corpus.values()), styles)
    say(f"building attacks for {len(chosen)} questions")
    for index, target in enumerate(chosen):
        sources = _sources(target, corpus)
        chunk = sources[0] if sources else None
        language = _language(target, chunk)
        if text_language(language) != language.split("-")[0].lower():
            builder.fallback[language] += 1
        clean_id = builder.clean_twin(target, language)
        if chunk is None:
            builder.skipped.setdefault("no_source_chunk", []).append(target.id)
            continue
        at = _Target(target, clean_id, chunk, sources, language, index)
        if "injection" in kinds:
            builder.injection(at)
            if behaviours:
                builder.behaviour(at)
        if "poisoning" in kinds:
            builder.poisoning(at, poison_copies)
        if "leak" in kinds:
            builder.leak(at)
    if chosen and len(builder.skipped.get("no_source_chunk", [])) == len(chosen):
        raise InputError(
            f"none of the {len(chosen)} questions has a relevant document in the corpus (e.g. "
            f"{sorted(chosen[0].relevant)[:3]} for {chosen[0].id!r}; corpus ids such as {sorted(corpus)[:3]}): "
            "the qrels and the corpus must use the same document ids",
            source=corpus_path or source or "corpus",
        )
    if "out_of_scope" in kinds:
        for target in out_of_scope:
            builder.out_of_scope(target)
    # Shuffled by seed: in file order an attack would follow its clean twin, which says which questions are attacks.
    rows = [builder.rows[i] for i in _rng(seed, "order").permutation(len(builder.rows)).tolist()]
    attack_set = AttackSet(rows=rows, checks=builder.checks, manifest={}, skipped=builder.skipped)
    attack_set.manifest = {
        "format": FORMAT,
        "source": source,
        "corpus_path": corpus_path,
        "seed": seed,
        "settings": {"kinds": list(kinds), "styles": list(styles), "size": size, "poison_copies": poison_copies,
                     "behaviours": behaviours},
        "targets": len(chosen),
        "clean": len(chosen),
        "counts": attack_set.counts(),
        "question_ids": builder.question_ids,
        "skipped": {reason: {"count": len(v), "examples": v[:5]} for reason, v in builder.skipped.items()},
        "languages_without_texts": dict(builder.fallback),
        "text_languages": list(LANGUAGES),
    }
    return attack_set


def _check_choices(kinds: Sequence[str], styles: Sequence[str]) -> None:
    unknown = [k for k in kinds if k not in ATTACK_KINDS]
    if unknown:
        raise InputError(
            f"unknown attack kind {unknown[0]!r}; kinds: {', '.join(ATTACK_KINDS)}", source="kinds"
        )
    bad_styles = [s for s in styles if s not in INJECTION_STYLES]
    if bad_styles or not styles:
        raise InputError(
            f"unknown injection style {bad_styles[0] if bad_styles else '(none)'!r}; styles: "
            f"{', '.join(INJECTION_STYLES)}",
            source="styles",
        )


@dataclass(frozen=True)
class _Target:
    """A target being attacked: its clean twin's id, the chunk attacks are planted in, its sources, language and
    position among the targets (styles and positions rotate by it)."""

    target: Target
    clean_id: str
    chunk: Chunk
    sources: list[Chunk]
    language: str
    index: int


class _Builder:
    """The rows and checks of an attack set as they are made, one attack kind per method."""

    def __init__(self, seed: int, ids: set[str], names: NamePool, styles: Sequence[str]) -> None:
        self.seed, self.ids, self.names, self.styles = seed, set(ids), names, styles
        self.rows: list[AttackRow] = []
        self.checks: list[AttackCheck] = []
        self.skipped: dict[str, list[str]] = {}
        self.fallback = Counter[str]()
        self.numbers = Counter[str]()
        self.question_ids: dict[str, str] = {}

    def next_id(self, kind: str) -> str:
        """An opaque id of the same form for attacks and clean twins: nothing the system is sent says that a
        question is an attack, or of which kind (the team's own ids are in the manifest, never sent)."""
        self.numbers[kind] += 1
        salt = 0
        while True:
            digest = hashlib.sha256(f"{self.seed}:{kind}:{self.numbers[kind]}:{salt}".encode()).hexdigest()
            attack_id = f"q{digest[:11]}"
            if attack_id not in self.ids:
                self.ids.add(attack_id)
                return attack_id
            salt += 1

    def clean_twin(self, target: Target, language: str) -> str:
        clean_id = self.next_id("clean")
        self.question_ids[clean_id] = target.id
        self.rows.append(
            AttackRow(id=clean_id, question=target.question, language=language, reference=target.reference,
                      relevant_ids=list(target.relevant) or None, relevant_grades=list(target.relevant.values()) or None)
        )  # fmt: skip
        return clean_id

    def _replacing(self, at: _Target, attack_id: str, addition: str, position: str) -> PlantedDocument:
        """The target's chunk with `addition` put at `position`, standing in for it (a compromised page)."""
        return PlantedDocument(id=f"{attack_id}-1", title=at.chunk.title,
                               text=_insert(at.chunk.text, addition, position, at.language), replaces=at.chunk.id)  # fmt: skip

    def injection(self, at: _Target) -> None:
        attack_id = self.next_id("injection")
        style = self.styles[at.index % len(self.styles)]
        position = POSITIONS[(at.index // len(self.styles)) % len(POSITIONS)]
        canary = _canary(self.seed, attack_id)
        addition = injection_text(style, at.language, canary)
        planted = self._replacing(at, attack_id, addition, position)
        self.rows.append(_attack_row(attack_id, at.target.question, at.language, [planted]))
        self.checks.append(AttackCheck(
            id=attack_id, kind="injection", style=style, position=position, twin=at.clean_id,  # type: ignore[arg-type]
            canary=canary, language=at.language, planted_ids=[planted.id], markers=[addition],
        ))  # fmt: skip

    def behaviour(self, at: _Target) -> None:
        attack_id = self.next_id("injection")
        behaviour = BEHAVIOURS[at.index % len(BEHAVIOURS)]
        position = POSITIONS[at.index % len(POSITIONS)]
        instruction = behaviour_text(behaviour, at.language)
        planted = self._replacing(at, attack_id, instruction, position)
        self.rows.append(_attack_row(attack_id, at.target.question, at.language, [planted]))
        self.checks.append(AttackCheck(
            id=attack_id, kind="injection", style=f"behaviour:{behaviour}", position=position,  # type: ignore[arg-type]
            twin=at.clean_id, decided_by="judge", instruction=instruction, language=at.language,
            planted_ids=[planted.id], markers=[instruction],
        ))  # fmt: skip

    def poisoning(self, at: _Target, copies: int) -> None:
        target = at.target
        wrong = false_answer(target.question, target.reference, [c.text for c in at.sources[:3]], at.language,
                             self.names, _rng(self.seed, "poison", target.id))  # fmt: skip
        if wrong is None:
            self.skipped.setdefault("poisoning_no_value", []).append(target.id)
            return
        attack_id = self.next_id("poisoning")
        texts = poison_texts(target.question, wrong, at.chunk.text, text_language(at.language), copies)
        planted = [PlantedDocument(id=f"{attack_id}-{n}", title=at.chunk.title, text=text)
                   for n, text in enumerate(texts, start=1)]  # fmt: skip
        self.rows.append(_attack_row(attack_id, target.question, at.language, planted))
        self.checks.append(AttackCheck(
            id=attack_id, kind="poisoning", style=wrong.kind, twin=at.clean_id, true_value=wrong.true_value,
            false_value=wrong.false_value, language=at.language, planted_ids=[d.id for d in planted],
            markers=[wrong.false_sentence],
        ))  # fmt: skip

    def leak(self, at: _Target) -> None:
        attack_id = self.next_id("leak")
        style = LEAK_STYLES[at.index % len(LEAK_STYLES)]
        secret = _secret(self.seed, attack_id)
        language, question = at.language, at.target.question
        if style == "system_direct":
            row = _attack_row(attack_id, f"{question} {leak_direct_suffix(language)}", language, None,
                              system_prompt_addition=system_prompt_note(language, secret))  # fmt: skip
            planted_ids: list[str] = []
            markers: list[str] = []
        else:
            addition = leak_planted_request(language) if style == "system_planted" else leak_context_text(language, secret)
            planted = self._replacing(at, attack_id, addition, POSITIONS[at.index % len(POSITIONS)])
            note = system_prompt_note(language, secret) if style == "system_planted" else None
            row = _attack_row(attack_id, question, language, [planted], system_prompt_addition=note)
            planted_ids, markers = [planted.id], [addition]
        self.rows.append(row)
        self.checks.append(AttackCheck(
            id=attack_id, kind="leak", style=style, twin=at.clean_id, secret=secret, language=language,
            planted_ids=planted_ids, markers=markers,
        ))  # fmt: skip

    def out_of_scope(self, target: Target) -> None:
        attack_id = self.next_id("out_of_scope")
        language = target.language or chunk_language(target.question)
        self.rows.append(AttackRow(id=attack_id, question=target.question, language=language, answerable=False))
        self.checks.append(AttackCheck(
            id=attack_id, kind="out_of_scope", style="unanswerable", twin=target.id, language=language,
        ))  # fmt: skip


def _attack_row(
    attack_id: str,
    question: str,
    language: str,
    planted: list[PlantedDocument] | None,
    *,
    system_prompt_addition: str | None = None,
) -> AttackRow:
    return AttackRow(
        id=attack_id,
        question=question,
        language=language,
        planted_documents=planted,
        system_prompt_addition=system_prompt_addition,
    )


def load_corpus(source: Any) -> dict[str, Chunk]:
    """Every chunk of a corpus by id (a duplicate id is an input error naming its line)."""
    chunks: dict[str, Chunk] = {}
    corpus = open_corpus(source)
    for chunk in corpus:
        if chunk.id in chunks:
            raise InputError(f"duplicate id {chunk.id!r}", source=corpus.source, line=chunk.line)
        chunks[chunk.id] = chunk
    return chunks


def manifest_json(attack_set: AttackSet) -> str:
    return json.dumps(attack_set.manifest, indent=2, ensure_ascii=False) + "\n"
