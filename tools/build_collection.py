"""Build the built-in evaluation collection shipped in ragmetrics/collection/data/ (see docs/collection.md).

The collection is generated once, on CPython 3.11, and shipped: help texts differ between Python versions,
so nothing is ever regenerated at run time. Each step is reproducible from files in the repository:

  passages    split the standard library's help topics (`pydoc_data.topics`) and the docstrings of a fixed
              list of modules into paragraph-aligned passages -> data/passages.jsonl
  embeddings  MiniLM vectors of the passages for the reranker -> data/passage_embeddings.npz
  pool        print, per question of tools/collection_src/questions.yaml, the pooled passages to judge: the
              top 15 of BM25 (title + text), TF-IDF cosine and the reranker, plus the top 10 of the
              rerankers with 20 and 100 candidates
  assemble    compile the authored questions, references, graded judgments and RAG answers of
              tools/collection_src/questions.yaml into data/questions.jsonl, data/qrels.txt (TREC format,
              the judged pool including grade 0) and data/qa.jsonl (BM25 top-3 contexts plus the answer)

Usage: python tools/build_collection.py passages|embeddings|pool|assemble|all [--pool-depth 15] [--only q01,q02]
Needs the `examples` extra (bm25s) for `pool` and `assemble`.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import math
import pydoc
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "ragmetrics" / "collection" / "data"
SRC = ROOT / "tools" / "collection_src" / "questions.yaml"

MIN_WORDS = 80
MAX_WORDS = 250
QA_CONTEXTS = 3  # the "RAG pipeline" of qa.jsonl: BM25 top-3
QA_RUN_DEPTH = 20  # depth of that pipeline's run stored in qa.jsonl (retrieved_ids / retrieved_scores)

# Modules whose docstrings (module and public members defined in the module) become documents.
MODULES: tuple[str, ...] = (
    "argparse",
    "bisect",
    "collections",
    "configparser",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "difflib",
    "doctest",
    "enum",
    "fnmatch",
    "functools",
    "glob",
    "hashlib",
    "heapq",
    "io",
    "itertools",
    "json",
    "logging",
    "operator",
    "os.path",
    "pathlib",
    "pickle",
    "pprint",
    "queue",
    "random",
    "re",
    "sched",
    "secrets",
    "shlex",
    "shutil",
    "sqlite3",
    "statistics",
    "string",
    "subprocess",
    "tempfile",
    "textwrap",
    "threading",
    "timeit",
    "typing",
    "unittest",
    "urllib.parse",
    "uuid",
    "weakref",
)
MEMBER_MIN_WORDS = 12  # member docstrings shorter than this carry too little to answer a question
MEMBER_MAX_PER_MODULE = 20

_HEADING_RULE = re.compile(r"^([*=\-~^])\1{3,}\s*$")


def _words(text: str) -> int:
    return len(text.split())


def _paragraphs(text: str) -> list[str]:
    paras = [p.strip("\n") for p in re.split(r"\n[ \t]*\n", text)]
    return [p.rstrip() for p in paras if p.strip()]


def _is_heading(para: str) -> bool:
    lines = para.splitlines()
    return len(lines) == 2 and bool(_HEADING_RULE.match(lines[1])) and not lines[0].startswith(" ")


def _split_long(para: str) -> list[str]:
    """Cut a paragraph longer than MAX_WORDS at line boundaries (sentences run over lines in help texts)."""
    pieces: list[str] = []
    current: list[str] = []
    count = 0
    for line in para.splitlines():
        n = _words(line)
        if current and count + n > MAX_WORDS:
            pieces.append("\n".join(current))
            current, count = [], 0
        current.append(line)
        count += n
    if current:
        pieces.append("\n".join(current))
    return pieces


def chunk(text: str) -> list[tuple[str, str]]:
    """Paragraph-aligned chunks of MIN_WORDS..MAX_WORDS words, each with the section heading it falls under.

    A heading starts a new chunk once the current one is long enough to stand alone, so passages rarely
    straddle two sections; a short tail is merged into its predecessor when that stays under MAX_WORDS.
    """
    chunks: list[tuple[str, list[str]]] = []
    section = ""
    current: list[str] = []
    current_section = ""
    count = 0

    def flush() -> None:
        nonlocal current, count
        if current:
            chunks.append((current_section, current))
        current, count = [], 0

    for para in _paragraphs(text):
        if _is_heading(para):
            section = para.splitlines()[0].strip()
            if count >= MIN_WORDS // 2:
                flush()
            if not current:
                current_section = section
            current.append(para)
            count += _words(para)
            continue
        for piece in _split_long(para) if _words(para) > MAX_WORDS else [para]:
            n = _words(piece)
            if current and count + n > MAX_WORDS:
                flush()
                current_section = section
            if not current:
                current_section = section
            current.append(piece)
            count += n
    flush()

    merged: list[tuple[str, list[str]]] = []
    for sec, paras in chunks:
        n = sum(_words(p) for p in paras)
        if merged and n < MIN_WORDS and sum(_words(p) for p in merged[-1][1]) + n <= MAX_WORDS:
            merged[-1] = (merged[-1][0], merged[-1][1] + paras)
        else:
            merged.append((sec, paras))
    # A short head chunk (e.g. only a title and grammar line) joins the next one when it fits.
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(merged):
        sec, paras = merged[i]
        n = sum(_words(p) for p in paras)
        if n < MIN_WORDS and i + 1 < len(merged):
            nxt = merged[i + 1][1]
            if n + sum(_words(p) for p in nxt) <= MAX_WORDS:
                merged[i + 1] = (sec, paras + nxt)
                i += 1
                continue
        out.append((sec, paras))
        i += 1
    return [(sec, "\n\n".join(paras)) for sec, paras in out]


# Help topics that collect the text of several smaller topics (compound statements, special method names,
# the execution model). They go last, so the near-duplicate filter keeps the specific topic's passage
# (topic:with#2) and drops the aggregate's copy (topic:compound#13).
AGGREGATE_TOPICS = ("compound", "specialnames", "execmodel")
DUPLICATE_SHARE = 0.5  # a passage whose word 5-grams were seen this much already is a duplicate


def _topic_documents() -> Iterator[tuple[str, str, str]]:
    from pydoc_data.topics import topics

    for key in sorted(topics, key=lambda k: (k in AGGREGATE_TOPICS, k)):
        text = topics[key]
        title = text.strip().splitlines()[0].strip()
        yield f"topic:{key}", title, text


def _member_docs(module: Any) -> Iterator[str]:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    shown = 0
    for name in sorted(names):
        obj = getattr(module, name, None)
        if obj is None or not (inspect.isclass(obj) or inspect.isfunction(obj) or inspect.isbuiltin(obj)):
            continue
        # C accelerators (_functools.reduce) count as their public module's own members.
        if (getattr(obj, "__module__", None) or "").lstrip("_") != module.__name__:
            continue
        doc = inspect.getdoc(obj) or ""
        if _words(doc) < MEMBER_MIN_WORDS:
            continue
        try:
            signature = re.sub(r" at 0x[0-9a-f]+", "", str(inspect.signature(obj)))
        except (TypeError, ValueError):
            signature = "(...)"
        header = f"{module.__name__}.{name}{signature}"
        if len(header) > 100:  # keep headings readable; the docstring restates the parameters
            header = f"{module.__name__}.{name}(...)"
        yield f"{header}\n{'-' * len(header)}\n\n{doc}"
        shown += 1
        if shown >= MEMBER_MAX_PER_MODULE:
            return


def _module_documents() -> Iterator[tuple[str, str, str]]:
    for name in MODULES:
        module = importlib.import_module(name)
        parts = [pydoc.getdoc(module).strip()]
        parts.extend(_member_docs(module))
        text = "\n\n".join(p for p in parts if p)
        if text:
            yield f"module:{name}", f"Module {name}", text


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = [w for w in re.findall(r"\w+", text.lower())]
    return {tuple(words[i : i + 5]) for i in range(max(1, len(words) - 4))}


def build_passages() -> list[dict[str, str]]:
    """Passages of every document, without near-duplicates (several help topics repeat the same text)."""
    passages: list[dict[str, str]] = []
    seen: set[tuple[str, ...]] = set()
    for doc_id, title, text in [*_topic_documents(), *_module_documents()]:
        for i, (section, body) in enumerate(chunk(text), start=1):
            if _words(body) < 20:  # a stray fragment (e.g. a lone "See also") carries no answer
                continue
            shingles = _shingles(body)
            if len(shingles & seen) >= DUPLICATE_SHARE * len(shingles):
                continue
            seen |= shingles
            passages.append(
                {
                    "id": f"{doc_id}#{i}",
                    "title": title if not section or section == title else f"{title} / {section}",
                    "source": doc_id.split(":", 1)[0],
                    "text": body,
                }
            )
    return passages


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# --- pooling -------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


class TfIdf:
    """Cosine between log-tf * idf vectors: a second retriever unlike BM25 (no length saturation, no stopwords)."""

    def __init__(self, passages: list[dict[str, str]]) -> None:
        self.ids = [p["id"] for p in passages]
        docs = [Counter(_tokens(p["title"] + "\n" + p["text"])) for p in passages]
        df: Counter[str] = Counter()
        for d in docs:
            df.update(d.keys())
        n = len(docs)
        self.idf = {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in df.items()}
        self.vectors = [self._vec(d) for d in docs]

    def _vec(self, counts: Counter[str]) -> dict[str, float]:
        v = {t: (1.0 + math.log(c)) * self.idf.get(t, 0.0) for t, c in counts.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {t: x / norm for t, x in v.items()}

    def rank(self, query: str, k: int) -> list[tuple[str, float]]:
        q = self._vec(Counter(_tokens(query)))
        scored = [
            (pid, sum(w * dv.get(t, 0.0) for t, w in q.items()))
            for pid, dv in zip(self.ids, self.vectors, strict=True)
        ]
        scored.sort(key=lambda x: (-x[1], x[0]))
        return [x for x in scored[:k] if x[1] > 0]


def _ragmetrics() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def bm25_rank(
    passages: list[dict[str, str]], queries: dict[str, str], k: int
) -> dict[str, list[tuple[str, float]]]:
    """The collection's own RAG retriever: the shipped BM25 (default parameters) over title + text.

    Indexing the title too makes this "pipeline" a slightly different system from the text-only `bm25`
    retriever that configs rebuild, so the quickstart compares three genuinely different runs.
    """
    _ragmetrics()
    from ragmetrics.retrievers._inputs import corpus_from
    from ragmetrics.retrievers.bm25 import bm25_search

    titled = [{"id": p["id"], "text": f"{p['title']}\n{p['text']}"} for p in passages]
    return bm25_search(corpus_from(titled), queries, {"top_k": k})


def rerank_rank(
    passages: list[dict[str, str]], queries: dict[str, str], k: int, candidates: int = 50
) -> dict[str, list[tuple[str, float]]]:
    """The shipped reranker (BM25 top-`candidates` reordered by MiniLM cosine), pooled so its results are judged."""
    _ragmetrics()
    from ragmetrics.retrievers._inputs import corpus_from
    from ragmetrics.retrievers.rerank import bm25_rerank_search

    return bm25_rerank_search(corpus_from(passages), queries, {"top_k": k, "candidates": candidates})


# Reranker depths configs/rerankers.yaml compares besides the default 50; their top 10 join the pool.
EXTRA_RERANK_DEPTHS = (20, 100)
EXTRA_POOL_DEPTH = 10


def pooled_ids(
    q: dict[str, Any],
    tfidf: TfIdf,
    bm: dict[str, Any],
    rr: dict[str, Any],
    depth: int,
    extra: list[dict[str, Any]] | None = None,
) -> list[str]:
    """Top-`depth` of BM25, TF-IDF and the reranker, then the top 10 of the other reranker depths."""
    tf = tfidf.rank(q["question"], depth)
    ids = (
        [d for d, _ in bm.get(q["id"], [])[:depth]]
        + [d for d, _ in tf]
        + [d for d, _ in rr.get(q["id"], [])[:depth]]
    )
    for run in extra or []:
        ids += [d for d, _ in run.get(q["id"], [])[:EXTRA_POOL_DEPTH]]
    return list(dict.fromkeys(ids))


def extra_runs(passages: list[dict[str, str]], queries: dict[str, str]) -> list[dict[str, Any]]:
    return [rerank_rank(passages, queries, EXTRA_POOL_DEPTH, n) for n in EXTRA_RERANK_DEPTHS]


def load_source() -> list[dict[str, Any]]:
    with SRC.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    questions: list[dict[str, Any]] = data["questions"]
    return questions


def pool(depth: int, only: set[str] | None) -> None:
    passages = read_jsonl(DATA / "passages.jsonl")
    by_id = {p["id"]: p for p in passages}
    questions = [q for q in load_source() if only is None or q["id"] in only]
    queries = {q["id"]: q["question"] for q in questions}
    bm = bm25_rank(passages, queries, depth)
    rr = rerank_rank(passages, queries, depth)
    extra = extra_runs(passages, queries)
    tfidf = TfIdf(passages)
    for q in questions:
        print(f"\n##### {q['id']}: {q['question']}")
        for pid in pooled_ids(q, tfidf, bm, rr, depth, extra):
            text = " ".join(by_id[pid]["text"].split())
            print(f"--- {pid} [{by_id[pid]['title']}] {text[:500]}")


# --- assembly ------------------------------------------------------------------------------------------


def assemble(depth: int) -> None:
    passages = read_jsonl(DATA / "passages.jsonl")
    by_id = {p["id"]: p for p in passages}
    questions = load_source()
    queries = {q["id"]: q["question"] for q in questions}
    bm = bm25_rank(passages, queries, max(depth, QA_RUN_DEPTH))
    rr = rerank_rank(passages, queries, depth)
    extra = extra_runs(passages, queries)
    tfidf = TfIdf(passages)
    qrels_lines: list[str] = []
    question_rows: list[dict[str, Any]] = []
    qa_rows: list[dict[str, Any]] = []
    for q in questions:
        qid = q["id"]
        grades: dict[str, int] = {str(k): int(v) for k, v in (q.get("grades") or {}).items()}
        unknown = sorted(set(grades) - set(by_id))
        if unknown:
            raise SystemExit(f"{SRC}: {qid}: grades name unknown passages {unknown}")
        if not any(g >= 2 for g in grades.values()):
            raise SystemExit(f"{SRC}: {qid}: no passage of grade >= 2")
        pooled = pooled_ids(q, tfidf, bm, rr, depth, extra)
        judged = {pid: grades.get(pid, 0) for pid in pooled}
        judged.update(grades)  # passages found by reading beyond the pool keep their grade
        for pid in sorted(judged):
            qrels_lines.append(f"{qid} 0 {pid} {judged[pid]}")
        question_rows.append({"id": qid, "question": q["question"], "reference": q["reference"]})
        top = bm[qid][:QA_CONTEXTS]
        relevant = sorted((pid for pid, g in judged.items() if g > 0), key=lambda p: (-judged[p], p))
        qa_rows.append(
            {
                "id": qid,
                "question": q["question"],
                "reference": q["reference"],
                "contexts": [by_id[pid]["text"] for pid, _ in top],
                "context_ids": [pid for pid, _ in top],
                "answer": q["answer"],
                "answer_quality": q["answer_quality"],
                "retrieved_ids": [pid for pid, _ in bm[qid][:QA_RUN_DEPTH]],
                "retrieved_scores": [round(float(s), 6) for _, s in bm[qid][:QA_RUN_DEPTH]],
                "relevant_ids": relevant,
                "relevant_grades": [judged[p] for p in relevant],
            }
        )
    write_jsonl(DATA / "questions.jsonl", question_rows)
    write_jsonl(DATA / "qa.jsonl", qa_rows)
    (DATA / "qrels.txt").write_text("\n".join(qrels_lines) + "\n", encoding="utf-8")
    print(f"{len(question_rows)} questions, {len(qrels_lines)} judgments")


def build_embeddings() -> None:
    """MiniLM vectors of every passage, so the reranker need not embed 500 long passages on each run.

    Keyed by sha256 of the passage text and stored as float16; the reranker uses a stored vector only when
    its text hash and the embedder's name match, and embeds anything else on the fly.
    """
    import hashlib

    import numpy as np

    _ragmetrics()
    from ragmetrics.embeddings.minilm import MiniLMEmbedder

    passages = read_jsonl(DATA / "passages.jsonl")
    embedder = MiniLMEmbedder(cache_size=0)
    vectors = embedder.encode([p["text"] for p in passages])
    digests = np.array([hashlib.sha256(p["text"].encode("utf-8")).hexdigest() for p in passages])
    np.savez_compressed(
        DATA / "passage_embeddings.npz",
        model=np.array(embedder.name),
        sha256=digests,
        vectors=vectors.astype(np.float16),
    )
    print(f"{len(passages)} passage vectors ({embedder.name})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("step", choices=["passages", "pool", "assemble", "embeddings", "all"])
    parser.add_argument("--pool-depth", type=int, default=15)
    parser.add_argument("--only", default=None, help="comma-separated question ids (pool step)")
    args = parser.parse_args(argv)
    if sys.version_info[:2] != (3, 11) and args.step in ("passages", "all"):
        raise SystemExit("build the passages on CPython 3.11: help texts differ between versions")
    if args.step in ("passages", "all"):
        passages = build_passages()
        write_jsonl(DATA / "passages.jsonl", passages)
        words = [_words(p["text"]) for p in passages]
        print(
            f"{len(passages)} passages, words min {min(words)} max {max(words)} mean {sum(words) / len(words):.0f}"
        )
    if args.step == "pool":
        pool(args.pool_depth, set(args.only.split(",")) if args.only else None)
    # Embeddings before assembly: the pool includes the reranker, which reads the stored passage vectors.
    if args.step in ("embeddings", "all"):
        build_embeddings()
    if args.step in ("assemble", "all"):
        assemble(args.pool_depth)
    return 0


if __name__ == "__main__":
    sys.exit(main())
