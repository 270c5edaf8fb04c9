"""Questions without an LLM: known-item query simulation, made to miss the easy way.

The method is known-item query generation (Azzopardi, de Rijke and Balog, "Building simulated queries for
known-item topics", SIGIR 2007): pick a chunk, draw a query length, draw that many terms from the chunk's
term distribution weighted towards discriminative terms (tf x idf), and optionally mix in noise. Queries made
that way are found trivially by exact-match retrieval (every term is in the target, the rarest ones first)
and order systems unlike people's judgments do: on the built-in collection, against its human judgments, the
plain method gives Kendall tau -0.05 over seven systems (docs/testset.md has the table and the command).

Three changes, each aimed at a way the plain method differs from a person writing a query:

1. **From the lead, not the whole chunk.** People ask about what a passage is *about*, which its title and
   opening state; the plain method draws as often from a detail in its last line. Terms are drawn from the
   first `lead_terms` content terms (title first when the corpus has titles).
2. **Fewer identifiers.** A term found in one chunk only (an error code, a function name seen once) is what a
   person who has not read the chunk cannot know; such terms are drawn with a fifth of their weight.
3. **Other word forms.** People write "retrieve" where the text says "retrieval". With probability
   `variant_rate` a term is replaced by another form of the same word from the corpus vocabulary (same first
   five letters, not in the chunk itself), which exact match misses and meaning-based retrieval does not.

With pooled judgments (`pool`), the generated collection then orders seven systems close to the human qrels
(Kendall tau 0.90 on the built-in collection, 0.62 on CISI, 0.43 on CACM; docs/testset.md has the table). Questions are phrased with short templates in the
chunk's language (English, German, French, Spanish, Italian, Portuguese, Dutch, Japanese, Chinese, Korean,
Russian); other languages get keyword queries. References are extractive: the chunk's sentence holding most
of the question's terms, so they are supported by construction.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragmetrics.judge.text.sentences import split_sentences
from ragmetrics.testset.corpus import Chunk
from ragmetrics.testset.terms import content_terms, is_unspaced

__all__ = ["Draft", "OfflineGenerator", "VariantIndex"]

KINDS = ("factoid", "multi_chunk", "keyword", "comparison", "unanswerable")

_TEMPLATES: dict[str, dict[str, tuple[str, ...]]] = {
    "factoid": {
        "en": (
            "What is {t}?",
            "How does {t} work?",
            "What about {t}?",
            "How to use {t}?",
            "What does {t} do?",
        ),
        "de": ("Was ist {t}?", "Wie funktioniert {t}?", "Was bedeutet {t}?"),
        "fr": ("Qu'est-ce que {t} ?", "Comment fonctionne {t} ?", "À quoi sert {t} ?"),
        "es": ("¿Qué es {t}?", "¿Cómo funciona {t}?", "¿Para qué sirve {t}?"),
        "it": ("Che cos'è {t}?", "Come funziona {t}?"),
        "pt": ("O que é {t}?", "Como funciona {t}?"),
        "nl": ("Wat is {t}?", "Hoe werkt {t}?"),
        "ja": ("{t}とは何ですか？", "{t}について教えてください。"),
        "zh": ("什么是{t}？", "{t}是怎么回事？"),
        "ko": ("{t}란 무엇입니까?",),
        "ru": ("Что такое {t}?", "Как работает {t}?"),
    },
    "multi_chunk": {
        "en": ("How do {a} and {b} fit together?", "{a} and {b}: how are they related?"),
        "de": ("Wie hängen {a} und {b} zusammen?",),
        "fr": ("Quel est le lien entre {a} et {b} ?",),
        "es": ("¿Qué relación hay entre {a} y {b}?",),
        "it": ("Che rapporto c'è tra {a} e {b}?",),
        "pt": ("Qual a relação entre {a} e {b}?",),
        "nl": ("Hoe hangen {a} en {b} samen?",),
        "ja": ("{a}と{b}はどう関係しますか？",),
        "zh": ("{a}和{b}有什么关系？",),
        "ko": ("{a}와 {b}는 어떤 관계입니까?",),
        "ru": ("Как связаны {a} и {b}?",),
    },
    "comparison": {
        "en": ("What is the difference between {a} and {b}?", "{a} vs {b}?", "Compare {a} and {b}."),
        "de": ("Was ist der Unterschied zwischen {a} und {b}?",),
        "fr": ("Quelle est la différence entre {a} et {b} ?",),
        "es": ("¿Cuál es la diferencia entre {a} y {b}?",),
        "it": ("Qual è la differenza tra {a} e {b}?",),
        "pt": ("Qual é a diferença entre {a} e {b}?",),
        "nl": ("Wat is het verschil tussen {a} en {b}?",),
        "ja": ("{a}と{b}の違いは何ですか？",),
        "zh": ("{a}和{b}有什么区别？",),
        "ko": ("{a}와 {b}의 차이는 무엇입니까?",),
        "ru": ("В чём разница между {a} и {b}?",),
    },
}
_TEMPLATES["unanswerable"] = _TEMPLATES["multi_chunk"]

REFUSALS: dict[str, str] = {
    "en": "The documents do not answer this question.",
    "de": "Die Dokumente beantworten diese Frage nicht.",
    "fr": "Les documents ne répondent pas à cette question.",
    "es": "Los documentos no responden a esta pregunta.",
    "it": "I documenti non rispondono a questa domanda.",
    "pt": "Os documentos não respondem a esta pergunta.",
    "nl": "De documenten beantwoorden deze vraag niet.",
    "ja": "文書にはこの質問への答えがありません。",
    "zh": "文档没有回答这个问题。",
    "ko": "문서에는 이 질문에 대한 답이 없습니다.",
    "ru": "Документы не отвечают на этот вопрос.",
}
_SCRIPT_CLASS = (
    (re.compile("[\u30a0-\u30ff\uff66-\uff9f]"), "katakana"),
    (re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"), "han"),
    (re.compile("[\u0e00-\u0e7f]"), "thai"),
)


@dataclass
class Draft:
    """A generated question before filtering: what it asks, about which chunks, and how it was made."""

    kind: str
    question: str
    reference: str
    language: str
    source_ids: list[str]
    answerable: bool = True
    terms: list[str] = field(default_factory=list)
    generator: str = "offline"
    parts: list[str] = field(default_factory=list)
    """Per source chunk, the part of the question it answers (its own terms), for the answerability check of a
    two-chunk question: a judge grading the whole question against one chunk sees half of it unanswered."""
    pair_candidates: list[tuple[str, str]] = field(default_factory=list)
    """Unanswerable: pairs of terms, best first; the first that no chunk holds together makes the question."""


def _full(chunk: Chunk) -> str:
    return f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text


class VariantIndex:
    """Other forms of a word in the corpus vocabulary: terms of six or more letters sharing their first five,
    seen in two or more chunks (forms people actually use), commonest first."""

    def __init__(self, df: Mapping[str, int]) -> None:
        groups: dict[str, list[tuple[int, str]]] = {}
        for term, count in df.items():
            if len(term) >= 6 and count >= 2 and term.isalpha():
                groups.setdefault(term[:5], []).append((count, term))
        self._groups = {k: [t for _, t in sorted(v, key=lambda x: (-x[0], x[1]))] for k, v in groups.items()}

    def variants(self, term: str, exclude: set[str]) -> list[str]:
        return [t for t in self._groups.get(term[:5], ()) if t != term and t not in exclude]


def _script_class(ch: str) -> str | None:
    for pattern, name in _SCRIPT_CLASS:
        if pattern.match(ch):
            return name
    return None


def _expand_unspaced(text: str, gram: str, limit: int = 6) -> str:
    """The run of same-script characters around the first occurrence of `gram` (a word-like unit for
    Chinese, Japanese, Thai), at most `limit` characters."""
    at = text.find(gram)
    if at < 0:
        return gram
    kind = _script_class(gram[0])
    start, end = at, at + len(gram)
    while start > 0 and end - start < limit and _script_class(text[start - 1]) == kind:
        start -= 1
    while end < len(text) and end - start < limit and _script_class(text[end]) == kind:
        end += 1
    return text[start:end]


class OfflineGenerator:
    """Drafts questions from chunk texts with the method of the module docstring."""

    name = "offline"

    def __init__(
        self,
        df: Mapping[str, int],
        n_chunks: int,
        *,
        lead_terms: int = 20,
        mean_terms: float = 3.0,
        variant_rate: float = 0.5,
        rare_weight: float = 0.2,
    ) -> None:
        self.df = df
        self.n = n_chunks
        self.lead_terms = lead_terms
        self.mean_terms = mean_terms
        self.variant_rate = variant_rate
        self.rare_weight = rare_weight
        self.variants = VariantIndex(df)

    def _idf(self, term: str) -> float:
        return math.log((self.n + 1) / (self.df.get(term, 0) + 0.5))

    def _weighted_lead(self, chunk: Chunk, language: str) -> tuple[list[str], np.ndarray]:
        text = f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text
        lead = content_terms(text, language)[: self.lead_terms]
        counts = Counter(lead)
        terms = list(counts)
        weights = np.array(
            [counts[t] * self._idf(t) * (self.rare_weight if self.df.get(t, 0) <= 1 else 1.0) for t in terms],
            dtype=np.float64,
        )
        return terms, np.maximum(weights, 1e-9)

    def _draw(
        self, chunk: Chunk, language: str, rng: np.random.Generator, count: int | None = None
    ) -> list[str]:
        terms, weights = self._weighted_lead(chunk, language)
        if not terms:
            return []
        want = count if count is not None else 2 + int(rng.poisson(max(self.mean_terms - 2, 0.0)))
        want = max(1, min(want, len(terms)))
        chosen = rng.choice(len(terms), size=want, replace=False, p=weights / weights.sum())
        text = f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text
        present = set(content_terms(text, language))
        out: list[str] = []
        for index in sorted(int(i) for i in chosen):  # the order they come in the chunk reads most naturally
            term = terms[index]
            if is_unspaced(term):
                out.append(_expand_unspaced(text, term))
                continue
            if rng.random() < self.variant_rate:
                options = self.variants.variants(term, present)
                if options:
                    term = options[int(rng.integers(min(3, len(options))))]
            out.append(term)
        return list(dict.fromkeys(out))

    def _reference(self, chunk: Chunk, terms: Sequence[str], language: str) -> str:
        sentences = split_sentences(chunk.text, language) or [chunk.text.strip()]
        wanted = {t[:5] for t in terms}
        best, best_hits = sentences[0], -1
        for sentence in sentences:
            own = content_terms(sentence, language)
            hits = sum(1 for stem in wanted if any(t.startswith(stem) for t in own))
            if hits > best_hits and len(own) >= 3:
                best, best_hits = sentence, hits
        return best if len(best) <= 600 else best[:600].rsplit(" ", 1)[0] + " …"

    def _top_terms(self, chunk: Chunk, language: str, count: int = 3) -> list[str]:
        """The chunk's most telling lead terms that more than one chunk uses (an unanswerable question
        should sound like the corpus, not name an identifier)."""
        terms, weights = self._weighted_lead(chunk, language)
        order = sorted(range(len(terms)), key=lambda i: (-weights[i], terms[i]))
        text = f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text
        out = [
            terms[i] if not is_unspaced(terms[i]) else _expand_unspaced(text, terms[i])
            for i in order
            if self.df.get(terms[i], 0) >= 2
        ]
        return list(dict.fromkeys(out))[:count]

    def finish_unanswerable(self, draft: Draft, pair: tuple[str, str], rng: np.random.Generator) -> Draft:
        """The question of an unanswerable draft from the pair no chunk holds together."""
        template = self._template("unanswerable", draft.language, rng)
        a, b = pair
        draft.question = template.format(a=a, b=b) if template else f"{a} {b}"
        draft.terms = [a, b]
        return draft

    @staticmethod
    def _template(kind: str, language: str, rng: np.random.Generator) -> str | None:
        options = _TEMPLATES.get(kind, {}).get(language)
        if not options:
            return None
        return options[int(rng.integers(len(options)))]

    @staticmethod
    def _join(terms: Sequence[str], language: str) -> str:
        return ("" if language in ("ja", "zh") else " ").join(terms)

    def draft(
        self, kind: str, chunks: Sequence[Chunk], language: str, rng: np.random.Generator
    ) -> Draft | None:
        """One draft of `kind` about `chunks` (one chunk, or two for multi-chunk, comparison and unanswerable);
        None when a chunk has too few terms to ask about."""
        if kind in ("factoid", "keyword"):
            terms = self._draw(chunks[0], language, rng)
            if len(terms) < (1 if is_unspaced("".join(terms)) else 2):
                return None
            phrase = self._join(terms, language)
            template = self._template("factoid", language, rng) if kind == "factoid" else None
            question = template.format(t=phrase) if template else phrase
            return Draft(
                kind,
                question,
                self._reference(chunks[0], terms, language),
                language,
                [chunks[0].id],
                terms=terms,
            )
        if kind == "comparison":
            own = [set(content_terms(_full(c), language)) for c in chunks]
            firsts = [t for t in self._top_terms(chunks[0], language, 6) if t not in own[1]]
            seconds = [t for t in self._top_terms(chunks[1], language, 6) if t not in own[0]]
            pairs = [(a, b) for a in firsts for b in seconds if a[:5] != b[:5]]
            if not pairs:
                return None
            a, b = pairs[int(rng.integers(min(3, len(pairs))))]
            template = self._template(kind, language, rng)
            question = template.format(a=a, b=b) if template else f"{a} {b}"
            reference = (
                f"{self._reference(chunks[0], [a], language)} {self._reference(chunks[1], [b], language)}"
            )
            return Draft(
                kind, question, reference, language, [chunks[0].id, chunks[1].id], terms=[a, b], parts=[a, b]
            )
        if kind == "multi_chunk":
            first = self._draw(chunks[0], language, rng, count=2)
            second = [t for t in self._draw(chunks[1], language, rng, count=2) if t not in first]
            if not first or not second:
                return None
            a, b = self._join(first, language), self._join(second, language)
            template = self._template(kind, language, rng)
            question = template.format(a=a, b=b) if template else f"{a} {b}"
            reference = f"{self._reference(chunks[0], first, language)} {self._reference(chunks[1], second, language)}"
            return Draft(
                kind,
                question,
                reference,
                language,
                [chunks[0].id, chunks[1].id],
                terms=first + second,
                parts=[a, b],
            )
        if kind == "unanswerable":
            firsts, seconds = self._top_terms(chunks[0], language), self._top_terms(chunks[1], language)
            pairs = [(a, b) for a in firsts for b in seconds if a != b]
            if not pairs:
                return None
            return Draft(
                kind,
                "",
                REFUSALS.get(language, REFUSALS["en"]),
                language,
                [],
                answerable=False,
                pair_candidates=pairs,
            )
        raise ValueError(f"unknown question kind {kind!r}")
