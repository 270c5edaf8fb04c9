"""Which retrieval metric tracks the answers? A worked study on public SQuAD-style data (issue 68, item 5).

    python benchmarks/study_answer_validity.py --data xquad.en.json [--questions 300] [--seed 0] [--out DIR]

Data: any SQuAD v1.1-format JSON (``data[].paragraphs[].{context, qas[].{id, question, answers[].text}}``):
XQuAD's English file (Artetxe et al. 2019, CC BY-SA 4.0, 240 paragraphs and 1190 questions of SQuAD v1.1 dev;
github.com/google-deepmind/xquad, file xquad.en.json) or SQuAD v1.1's dev-v1.1.json. The text is read from the
path given and never copied into the project; without it the study says so and exits 0 (skipped).

What it does, one step each:

1. Corpus: every paragraph cut into passages of two sentences. Relevance qrels: every passage of the paragraph
   a question was written from is relevant (grade 1), the provenance a team usually has, not the answer's span.
2. Six systems: BM25, dense (MiniLM) and their reciprocal-rank fusion, each alone and reranked (top 50 candidates
   reordered by multilingual-e5-small cosine, a different model than the dense retriever's).
3. One offline generator, extractive (`SpanExtractor`): the sentence sharing the most question words, the span
   of it nearest those words; it abstains when the sentence holds under a quarter of the question's words, and
   its probability of abstaining is one minus that share. End to end it reads each system's top 3; answer
   quality is token F1 and exact match (SQuAD normalisation, best over the references).
4. Utility judgments (eRAG, `ragmetrics.utility.build_utility`): each passage in the pooled top 10 given alone
   to the same generator, its answer's token F1 graded 0-3 as qrels, its probability of abstaining kept for UDCG.
   As a control, the same judgments from another generator than the system's (`ExtractiveGenerator`, which
   answers with the whole best sentence): eRAG's claim is about the system's *own* generator.
5. Metrics per (question, system): nDCG@3/@10 and recall@3 on the relevance qrels; nDCG@3/@10 on the utility
   qrels (nDCG@3 on the control's too); UDCG@3 on the relevance qrels with u = 1 (relevance only) and with u = 1 - p_abstain, and on the
   utility qrels with u = 1 - p_abstain.
6. Validity (`ragmetrics.validity.validity_study`): Kendall tau-b of each metric with the answer quality per
   query (questions x systems) and per system, bootstrap intervals over questions, discriminative power, and the
   metric that tracks the answers best, named only where the intervals allow.

Runtime: about two to four minutes on two cores (embedding the corpus twice is most of it).

Offline generators only: this script has no LLM option. With `--export DIR` it runs nothing and writes the same
drawn questions, passages and relevance qrels as a night's dataset with a night config whose `generator:` is the
team's LLM and whose utility judgments come from that same LLM; `ragmetrics run DIR/night.yaml` then
`ragmetrics validity DIR/out/latest` is the study with an LLM (docs/study_answer_validity.md).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.comparison.discriminative import discriminative_power
from ragmetrics.judge.deterministic import exact_match_score, token_f1_score
from ragmetrics.judge.text.sentences import split_sentences
from ragmetrics.retrieval.evaluate import evaluate
from ragmetrics.retrieval.fusion import fuse
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run
from ragmetrics.retrieval.utilities import AbstentionProbabilities
from ragmetrics.retrievers import search
from ragmetrics.retrievers._inputs import corpus_from
from ragmetrics.retrievers.rerank import rerank
from ragmetrics.utility import ExtractiveGenerator, GeneratedAnswer, UtilityQuestion, build_utility
from ragmetrics.validity import ValidityData, ValiditySettings, validity_study
from ragmetrics.validity.section import validity_markdown

GENERATOR_DEPTH = 3
"""Passages the generator reads end to end: the cutoff of the @3 metrics."""
POOL_DEPTH = 10
CANDIDATES = 50
SENTENCES_PER_PASSAGE = 2
ABSTAIN_BELOW = 0.25
ABSTENTION = "I don't know."
_STOP_WORDS = (
    "a an the of in on at to for from by with and or but is are was were be been being it its this that these "
    "those what which who whom whose when where why how did do does done has have had as than then there their "
    "they he she his her him them we you your i not no into over under about after before during"
)
STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"\w+")


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) > 1 and w not in STOP}


# -- data -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    references: tuple[str, ...]
    paragraph: str


def load_squad(path: Path) -> tuple[dict[str, str], dict[str, list[str]], list[Question]]:
    """(paragraph id -> text, paragraph id -> its passage ids' texts in order, questions), or exit 2 naming
    the field that is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        paragraphs: dict[str, str] = {}
        questions: list[Question] = []
        for a, article in enumerate(data["data"]):
            for p, paragraph in enumerate(article["paragraphs"]):
                pid = f"a{a:02d}p{p:02d}"
                paragraphs[pid] = str(paragraph["context"])
                for qa in paragraph["qas"]:
                    refs = tuple(str(x["text"]) for x in qa["answers"])
                    if refs:  # SQuAD 2.0's unanswerable questions have none: no reference, not scored
                        questions.append(Question(str(qa["id"]), str(qa["question"]), refs, pid))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        sys.exit(f"{path}: not SQuAD v1.1-format JSON ({type(exc).__name__}: {exc})")
    return paragraphs, {pid: chunk(text) for pid, text in paragraphs.items()}, questions


def chunk(text: str) -> list[str]:
    sentences = split_sentences(text, "en")
    return [" ".join(sentences[i : i + SENTENCES_PER_PASSAGE]) for i in range(0, len(sentences), SENTENCES_PER_PASSAGE)]


# -- the generator ----------------------------------------------------------------------------------------------


def extract(question: str, passages: Sequence[str]) -> tuple[str, float]:
    """(answer, probability of abstaining): the span nearest the question's words in the sentence sharing the
    most of them (ties: the earlier passage and sentence)."""
    asked = content_words(question)
    best, overlap = "", 0
    for passage in passages:
        for sentence in split_sentences(passage, "en"):
            shared = len(asked & content_words(sentence))
            if shared > overlap:
                best, overlap = sentence, shared
    share = overlap / len(asked) if asked else 0.0
    if share < ABSTAIN_BELOW:
        return ABSTENTION, 1.0 - share
    tokens = best.split()
    marked = [bool(content_words(t) & asked) for t in tokens]
    anchors = [i for i, m in enumerate(marked) if m]
    wanted = _answer_type(question)
    spans: list[tuple[int, int, int, int]] = []  # (not of the wanted type, distance to the question, start, end)
    i = 0
    while i < len(tokens):
        if marked[i]:
            i += 1
            continue
        j = i
        while j < len(tokens) and not marked[j]:
            j += 1
        for start, end in _typed(tokens, i, j, wanted):
            distance = min(min(abs(a - start), abs(a - (end - 1))) for a in anchors)
            spans.append((int(not _is_type(tokens[start:end], wanted)), distance, start, end))
        i = j
    if not spans:
        return ABSTENTION, 1.0 - share
    _, _, start, end = min(spans)
    words = tokens[start:end]
    while words and not content_words(words[0]):
        words = words[1:]
    while words and not content_words(words[-1]):
        words = words[:-1]
    words = words[:5] if start > min(anchors) else words[-5:]
    text = " ".join(words).strip(".,;:()\"'")
    return (text, 1.0 - share) if text else (ABSTENTION, 1.0 - share)


_NUMBER_ASKED = re.compile(r"\b(how (many|much|long|old|far|large|big)|what (year|percentage|percent|number)|when|"
                           r"which year|in what year)\b", re.I)  # fmt: skip
_NAME_ASKED = re.compile(r"^\W*(who|whom|whose|where)\b|\b(who|whom|whose)\b", re.I)


def _answer_type(question: str) -> str | None:
    """'number' or 'name' when the question's words say what kind of span answers it, else None."""
    if _NUMBER_ASKED.search(question):
        return "number"
    if _NAME_ASKED.search(question):
        return "name"
    return None


def _is_type(words: Sequence[str], wanted: str | None) -> bool:
    if wanted == "number":
        return any(any(ch.isdigit() for ch in w) for w in words)
    if wanted == "name":
        return any(w[:1].isupper() for w in words)
    return True


def _typed(tokens: Sequence[str], i: int, j: int, wanted: str | None) -> list[tuple[int, int]]:
    """The candidate spans of tokens[i:j]: the whole run, or, for a typed question, each run of tokens of the
    type inside it (a number with its unit word, a run of capitalised words)."""
    if wanted is None or not _is_type(tokens[i:j], wanted):
        return [(i, j)] if any(content_words(t) for t in tokens[i:j]) else []
    out: list[tuple[int, int]] = []
    k = i
    while k < j:
        if _is_type([tokens[k]], wanted):
            end = k + 1
            while end < j and _is_type([tokens[end]], wanted):
                end += 1
            if wanted == "number" and end < j and tokens[end - 1][-1:].isalnum():
                end += 1  # the unit: "308 points", "1990 census"
            out.append((k, end))
            k = end
        else:
            k += 1
    return out


class SpanExtractor:
    """The extractor as a utility-judgment generator (`ragmetrics.utility.Generator`): one passage at a time."""

    @property
    def identity(self) -> dict[str, Any]:
        """What decides its answers (the utility cache keys on it)."""
        return {"kind": "study-span-extractor", "version": 2, "abstain_below": ABSTAIN_BELOW}

    async def answer(self, question: str, passage: str) -> GeneratedAnswer:
        text, p_abstain = extract(question, [passage])
        return GeneratedAnswer(text, p_abstain=p_abstain)

    def reservation(self, question: str, passage: str) -> float:
        return 0.0

    async def aclose(self) -> None:
        return None


# -- retrieval ---------------------------------------------------------------------------------------------------


class Memo:
    """An embedder that embeds each distinct text once (the corpus is embedded by the dense retriever and again
    by the reranker's candidates: the same text is never sent twice)."""

    def __init__(self, base: Any) -> None:
        self.base, self.seen = base, {}

    @property
    def name(self) -> str:
        return str(self.base.name)

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        todo = list(dict.fromkeys(t for t in texts if t not in self.seen))
        if todo:
            self.seen.update(zip(todo, self.base.encode(todo), strict=True))
        return np.stack([self.seen[t] for t in texts]) if texts else np.empty((0, 384), np.float32)


Ranking = list[tuple[str, float]]


def _ranked(run: Run) -> dict[str, Ranking]:
    return {q: sorted(docs.items(), key=lambda x: (-x[1], x[0])) for q, docs in run.to_dict().items()}


def systems(passages: list[dict[str, str]], queries: dict[str, str], started: float) -> dict[str, dict[str, Ranking]]:
    from ragmetrics.embeddings.e5 import E5Embedder
    from ragmetrics.embeddings.minilm import MiniLMEmbedder

    minilm, e5 = Memo(MiniLMEmbedder()), Memo(E5Embedder())
    first = {
        "bm25": search("bm25", {"top_k": CANDIDATES}, passages, queries),
        "dense": search("dense", {"top_k": CANDIDATES}, passages, queries, embedder=minilm),
    }
    _say(f"  bm25 and dense (MiniLM) ({time.perf_counter() - started:.0f} s)")
    as_runs = [Run.from_dict({q: dict(r) for q, r in first[n].items()}, name=n) for n in ("bm25", "dense")]
    first["rrf"] = {q: r[:CANDIDATES] for q, r in _ranked(fuse(as_runs, "rrf", name="rrf")).items()}
    corpus = corpus_from(passages)
    out: dict[str, dict[str, Ranking]] = {}
    for name, rankings in first.items():
        out[name] = {q: r[:POOL_DEPTH] for q, r in rankings.items()}
        out[f"{name}+rerank"] = rerank(corpus, queries, rankings, e5, POOL_DEPTH)
        _say(f"  {name}+rerank (e5) ({time.perf_counter() - started:.0f} s)")
    return out


# -- the study ---------------------------------------------------------------------------------------------------


def answer_quality(q: Question, answer: str) -> tuple[float, float]:
    f1 = max(token_f1_score(answer, r) for r in q.references)
    em = max(exact_match_score(answer, r) for r in q.references)
    return f1, em


def per_query(result: Any, metric: str, qids: Sequence[str]) -> list[float]:
    return [float(result.per_query[q][metric]) for q in qids]


def _say(text: str) -> None:
    print(text, flush=True)


def draw(questions: Sequence[Question], n: int, seed: int) -> list[Question]:
    """The questions the study reads: `n` drawn with `seed`, in id order (the offline study and --export alike)."""
    return sorted(random.Random(seed).sample(list(questions), min(n, len(questions))), key=lambda q: q.id)


NIGHT_TEMPLATE = """\
# The answer-validity study (docs/study_answer_validity.md) with YOUR LLM as the generator, on the questions,
# passages and relevance qrels of the offline study ({source}, {count} questions, seed {seed}). Written by
#   python benchmarks/study_answer_validity.py --data {source} --questions {n} --seed {seed} --export {folder}
# Point generator.target (or generator.url) at your RAG answerer, then:
#   ragmetrics run {folder}/night.yaml --dry-run      # what it will send
#   ragmetrics run {folder}/night.yaml
#   ragmetrics validity {folder}/out/latest --answer-metric token_f1
name: answer-validity-llm

dataset:
  path: qa.jsonl             # id, question, reference (the first SQuAD answer), relevant_ids (the paragraph)
  passages: passages.jsonl   # id, text: each paragraph cut into passages of two sentences

retrieval:
  metrics: [ndcg@3, ndcg@10, recall@3, udcg@3]

runs:                        # the night's reference retrievers (the offline study's reranker is e5, here MiniLM)
  - {{source: retriever, retriever: bm25, name: bm25}}
  - {{source: retriever, retriever: bm25_embedding_rerank, name: bm25+rerank}}
  - {{source: retriever, retriever: dense, name: dense}}
  - {{source: fusion, name: rrf, runs: [bm25, dense], method: rrf}}

generator:                   # your LLM answers every run's questions from its top 3 passages
  target: "my_rag:generate"  # takes {{id, question, language, contexts, context_ids}}; or url: http://...
  top_k: 3

judge:
  metrics: [token_f1, exact_match]   # the answer quality: deterministic, no judge model called

utility_qrels:               # the same LLM from each pooled passage alone (eRAG: the system's own generator)
  generator: night           # or openai with openai: {{model, base_url, logprobs: true}} for UDCG's p(abstain)
  metric: token_f1
  k: 10

output:
  dir: out
"""


def export(path: Path, n: int, seed: int, folder: Path) -> int:
    """The study's questions, passages and qrels as a night's dataset, with a night config for an LLM generator:
    the study's LLM path (nothing is run here; docs/study_answer_validity.md, "With an LLM generator")."""
    _paragraphs, chunks, questions = load_squad(path)
    chosen = draw(questions, n, seed)
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {"id": q.id, "question": q.question, "reference": q.references[0],
         "relevant_ids": [f"{q.paragraph}c{c}" for c in range(len(chunks[q.paragraph]))]}
        for q in chosen
    ]  # fmt: skip
    passages = [{"id": f"{pid}c{c}", "text": t} for pid, texts in chunks.items() for c, t in enumerate(texts)]
    for name, items in (("qa.jsonl", rows), ("passages.jsonl", passages)):
        text = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)
        (folder / name).write_text(text, encoding="utf-8")
    night = NIGHT_TEMPLATE.format(source=path, count=len(chosen), n=n, seed=seed, folder=folder)
    (folder / "night.yaml").write_text(night, encoding="utf-8")
    _say(f"wrote {folder}/qa.jsonl ({len(rows)} questions), passages.jsonl ({len(passages)}) and night.yaml; set "
         f"generator.target in night.yaml to your RAG answerer, then: ragmetrics run {folder}/night.yaml && "
         f"ragmetrics validity {folder}/out/latest --answer-metric token_f1")  # fmt: skip
    return 0


def study(path: Path, n: int, seed: int, samples: int, out: Path | None) -> int:
    started = time.perf_counter()
    _paragraphs, chunks, questions = load_squad(path)
    passages = [{"id": f"{pid}c{c}", "text": t} for pid, texts in chunks.items() for c, t in enumerate(texts)]
    text_of = {p["id"]: p["text"] for p in passages}
    chosen = draw(questions, n, seed)
    qids = [q.id for q in chosen]
    by_id = {q.id: q for q in chosen}
    queries = {q.id: q.question for q in chosen}
    relevance = Qrels.from_dict(
        {q.id: {f"{q.paragraph}c{c}": 1 for c in range(len(chunks[q.paragraph]))} for q in chosen},
        source="paragraph provenance",
    )
    _say(f"data: {path.name}: {len(questions)} questions, {len(chunks)} paragraphs -> {len(passages)} passages; "
          f"{len(chosen)} questions drawn (seed {seed})")  # fmt: skip

    ranked = systems(passages, queries, started)
    runs = {name: Run.from_dict({q: dict(r) for q, r in rk.items()}, name=name) for name, rk in ranked.items()}
    _say(f"retrieval: {len(runs)} systems ({time.perf_counter() - started:.0f} s)")

    answers = {name: {q: extract(queries[q], [text_of[d] for d, _ in rk[q][:GENERATOR_DEPTH]])[0] for q in qids}
               for name, rk in ranked.items()}  # fmt: skip
    quality = {name: {q: answer_quality(by_id[q], a) for q, a in got.items()} for name, got in answers.items()}

    utility = build_utility(
        {q.id: UtilityQuestion(q.id, q.question, q.references[0]) for q in chosen},
        text_of,
        list(runs.values()),
        SpanExtractor(),
        k=POOL_DEPTH,
        metric="token_f1",
    )
    # control: utility labels from another generator than the system's (the library's sentence extractor)
    other = build_utility(
        {q.id: UtilityQuestion(q.id, q.question, q.references[0]) for q in chosen},
        text_of,
        list(runs.values()),
        ExtractiveGenerator(),
        k=POOL_DEPTH,
        metric="token_f1",
    )
    counts = utility.counts()
    utility_qrels = utility.qrels()
    abstention = utility.abstention()
    assert abstention is not None
    _say(f"utility judgments: {counts['pairs']} distinct (question, passage) pairs, {counts['relevant']} graded >= 1, "
          f"failed {counts['failed'] or 0} ({time.perf_counter() - started:.0f} s)")  # fmt: skip

    measures: dict[str, tuple[Any, list[str], AbstentionProbabilities | None, str]] = {
        "ndcg@3": (relevance, ["ndcg@3"], None, "relevance"),
        "ndcg@10": (relevance, ["ndcg@10"], None, "relevance"),
        "recall@3": (relevance, ["recall@3"], None, "relevance"),
        "udcg@3 (u=1)": (relevance, ["udcg@3"], None, "relevance"),
        "udcg@3 (u=1-p)": (relevance, ["udcg@3"], abstention, "relevance"),
        "ndcg@3 (utility)": (utility_qrels, ["ndcg@3"], None, "utility"),
        "ndcg@10 (utility)": (utility_qrels, ["ndcg@10"], None, "utility"),
        "udcg@3 (utility, u=1-p)": (utility_qrels, ["udcg@3"], abstention, "utility"),
        "ndcg@3 (utility, other generator)": (other.qrels(), ["ndcg@3"], None, "utility (sentence extractor)"),
    }
    names = list(runs)
    matrices: dict[str, NDArray[np.float64]] = {}
    for label, (qrels, (metric,), utilities, _) in measures.items():
        columns = []
        for name in names:
            result = evaluate(qrels, runs[name], [metric], utilities=utilities, allow_disjoint=True)
            values = {q: v.get(metric) for q, v in result.per_query.items()}
            columns.append([np.nan if values.get(q) is None else float(values[q]) for q in qids])  # type: ignore[arg-type]
        matrices[label] = np.array(columns, dtype=np.float64).T
    _say(f"metrics scored ({time.perf_counter() - started:.0f} s)\n")

    rows = ["| system | token F1 | exact match | abstained | " + " | ".join(measures) + " |",
            "|:---|" + "---:|" * (3 + len(measures))]  # fmt: skip
    for j, name in enumerate(names):
        f1 = np.mean([quality[name][q][0] for q in qids])
        em = np.mean([quality[name][q][1] for q in qids])
        abstained = np.mean([answers[name][q] == ABSTENTION for q in qids])
        cells = [f"{np.nanmean(matrices[m][:, j]):.3f}" for m in measures]
        rows.append(f"| {name} | {f1:.3f} | {em:.3f} | {abstained:.1%} | " + " | ".join(cells) + " |")
    report = ["## Systems (means over the questions)", "", *rows, ""]
    for label, column in (("token F1", 0), ("exact match", 1)):
        answers_matrix = np.array([[quality[n][q][column] for n in names] for q in qids], dtype=np.float64)
        power = discriminative_power(answers_matrix, test="t", correction="holm", alpha=0.05, seed=seed)
        report.append(f"- {label} itself separates {power.separated} of {power.pairs} system pairs (paired t "
                      "test, Holm, alpha 0.05)")  # fmt: skip
    report.append("")
    results = {}
    for answer_metric, column in (("token_f1", 0), ("exact_match", 1)):
        data = ValidityData(
            answer_metric=answer_metric,
            questions=qids,
            runs=names,
            answer=np.array([[quality[n][q][column] for n in names] for q in qids], dtype=np.float64),
            metrics=matrices,
            kinds={m: ("udcg" if m.startswith("udcg") else "retrieval", spec[3]) for m, spec in measures.items()},
        )
        settings = ValiditySettings(answer_metric=answer_metric, samples=samples, confidence=0.95, seed=seed,
                                    alpha=0.05, test="t", correction="holm", permutations=0)  # fmt: skip
        results[answer_metric] = validity_study(data, settings)
        _say(f"validity on {answer_metric} ({time.perf_counter() - started:.0f} s)")
        report += [*validity_markdown(results[answer_metric], heading=f"## {answer_metric}:"), ""]
    text = "\n".join(report)
    _say(text)
    _say(f"\nstudy: {time.perf_counter() - started:.0f} s")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "study.md").write_text(text, encoding="utf-8")
        (out / "validity.json").write_text(
            json.dumps({k: v.model_dump(mode="json") for k, v in results.items()}, indent=2), encoding="utf-8"
        )
        utility.write(out / "utility")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, help="SQuAD v1.1-format JSON (e.g. XQuAD's xquad.en.json)")
    parser.add_argument("--questions", type=int, default=300, help="questions drawn (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=1000, help="bootstrap resamples of the questions")
    parser.add_argument("--out", type=Path, help="folder for study.md, validity.json and the utility qrels")
    parser.add_argument(
        "--export",
        type=Path,
        metavar="DIR",
        help="run nothing: write the drawn questions, passages and qrels as a night's dataset, with night.yaml "
        "for YOUR LLM generator (the study's LLM path; this script's own generator is offline only)",
    )
    args = parser.parse_args(argv)
    if args.data is None or not args.data.is_file():
        print(f"skipped: no SQuAD-format JSON at {args.data} (pass --data; see the module docstring for where to "
              "get XQuAD's xquad.en.json)")  # fmt: skip
        return 0
    if args.export is not None:
        return export(args.data, args.questions, args.seed, args.export)
    return study(args.data, args.questions, args.seed, args.samples, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
