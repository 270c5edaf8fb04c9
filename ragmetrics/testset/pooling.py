"""Complete qrels: pool runs' top-k on the generated questions and let the judge grade what the qrels lack.

A generated question's source chunk is relevant by construction, but it is rarely the only relevant chunk;
without more judgments a system that finds a second good chunk first is scored as if it had missed. This is
TREC's answer: pool the top `pool_depth` of several systems (run files over the questions, or reference
retrievers built over the corpus now) and grade every pooled chunk the qrels lack, here with the judge's
`passage_relevance` (0-3) through `ragmetrics.qrels_fill.fill_qrels` (cache, concurrency, failures).

Judge grades map onto the test set's scale so that "answers it" meets the source grade and "on the subject but
does not answer" is not relevant: judge g -> round((g - 1) x source_grade / 2), floored at 0 (with the default
source grade 2: 3 -> 2, 2 -> 1, 1 and 0 -> 0). Judge grades never overwrite a source or person grade. An
unanswerable question keeps no qrels; a pooled chunk the judge grades 3 (answers it) means the question is
answerable after all, and it is dropped and counted (`answered_anyway`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.errors import InputError
from ragmetrics.judge.base import Judge
from ragmetrics.judge.formulas import GRADE_SCALE
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run
from ragmetrics.testset.corpus import Corpus
from ragmetrics.testset.settings import Grade, TestItem, TestsetSettings

__all__ = ["empty_chunk_ids", "judge_to_scale", "pool_grades", "pool_runs"]


def judge_to_scale(grade: int, source_grade: int) -> int:
    """A judge grade (0-3) on the test set's scale (module docstring)."""
    return max(0, round((grade - 1) * source_grade / (GRADE_SCALE - 1)))


def pool_runs(
    corpus: Corpus, items: Sequence[TestItem], pool: Sequence[Any], *, index_dir: Path | str | None = None
) -> list[tuple[Run, dict[str, Any]]]:
    """The pool's runs over the items' questions, each with what it is (its `member` record): `Run`s as given,
    run files read, and reference retriever kinds built over the whole corpus (which then sits in memory: a
    pool is for corpora a retriever can index). A retriever's record holds its kind, ranking settings and
    models (`retrievers.identity`), so a night matches its runs to the pool by what they are, not by name. With
    `index_dir` a retriever's index persists there (`ragmetrics.index`): the night's, when it names the same."""
    from ragmetrics.retrievers import ALIASES, KINDS, build_run
    from ragmetrics.retrievers.identity import ranking_identity

    queries = {i.id: i.question for i in items}
    runs: list[tuple[Run, dict[str, Any]]] = []
    passages: list[dict[str, object]] | None = None
    for entry in pool:
        if isinstance(entry, Run):
            runs.append((entry, {"name": entry.name, "run": entry.source or "given in Python"}))
            continue
        spec: Mapping[str, Any] | None = None
        if isinstance(entry, str) and (entry in KINDS or entry in ALIASES):
            spec = {"retriever": entry, "params": {}, "name": entry}
        elif isinstance(entry, Mapping) and "retriever" in entry:
            spec = entry
        if spec is not None:
            if passages is None:  # the text alone, as every retriever run indexes it (titles are not indexed)
                passages = [{"id": c.id, "text": c.text} for c in corpus]
            name = f"pool:{spec.get('name') or spec['retriever']}"
            built = build_run(str(spec["retriever"]), spec.get("params") or None, passages, queries, name=name,
                              index_dir=index_dir)  # fmt: skip
            identity = ranking_identity(str(spec["retriever"]), spec.get("params") or {})
            runs.append((built, {"name": name, **identity}))
            continue
        if isinstance(entry, str | Path):
            path = Path(entry)
            if not path.exists():
                raise InputError(
                    f"not a run file and not a retriever kind ({', '.join(KINDS)})",
                    source=str(entry),
                    field="pool",
                )
            read = Run.read(path)
            runs.append((read, {"name": read.name, "run": str(path)}))
            continue
        raise InputError(f"cannot pool a {type(entry).__name__}", field="pool")
    for run, _ in runs:
        known = set(run.to_dict())
        if not known & set(queries):
            raise InputError(
                f"run {run.name!r} has none of the test set's question ids (e.g. {next(iter(queries))!r}); pool "
                "runs made on this test set's questions.jsonl",
                field="pool",
            )
    return runs


def empty_chunk_ids(corpus: Corpus) -> set[str]:
    """The ids of the corpus's chunks whose text is empty or only whitespace (one pass over the corpus)."""
    return {chunk.id for chunk in corpus if not chunk.text.strip()}


def pool_grades(
    corpus: Corpus,
    items: Sequence[TestItem],
    grades: list[Grade],
    pool: Sequence[Any],
    judge: Judge,
    settings: TestsetSettings,
    *,
    index_dir: Path | str | None = None,
) -> tuple[list[Grade], dict[str, Any], dict[str, str]]:
    """Source grades plus the judge's grades of the pool (module docstring); the pool's account; and the
    unanswerable questions a pooled chunk answers (question id -> chunk id)."""
    from ragmetrics.qrels_fill import fill_qrels

    members = pool_runs(corpus, items, pool, index_dir=index_dir)
    ids = {i.id for i in items}
    depth = settings.pool_depth
    # An empty chunk answers nothing: skipped here as drafting skips it (a text empty or only whitespace),
    # taken out of every pooled ranking before its top `depth` is read, so each run still pools `depth`
    # chunks with text and no empty chunk reaches the judge.
    empty = empty_chunk_ids(corpus)
    skipped: set[str] = set()
    trimmed: list[Run] = []
    for run, _ in members:
        rankings: dict[str, dict[str, float]] = {}
        for qid, ranking in run.to_dict().items():
            if qid not in ids:
                continue
            skipped.update(d for d in list(ranking)[:depth] if d in empty)
            kept = {d: v for d, v in ranking.items() if d not in empty}
            if kept:
                rankings[qid] = kept
        if rankings:
            trimmed.append(Run.from_dict(rankings, name=run.name))
    pooled_docs = {
        doc for run in trimmed for ranking in run.to_dict().values() for doc in list(ranking)[:depth]
    }
    texts = {
        cid: (f"{c.title}\n{c.text}" if c.title else c.text)
        for cid, c in corpus.texts_of(pooled_docs).items()
    }
    missing = sorted(pooled_docs - set(texts))
    if missing:
        raise InputError(
            f"{len(missing)} pooled chunk id(s) are not in the corpus, e.g. {missing[0]!r}", field="pool"
        )
    known = {(g.query_id, g.doc_id): g for g in grades}
    human: dict[str, dict[str, int]] = {}
    for g in grades:
        human.setdefault(g.query_id, {})[g.doc_id] = g.grade
    who = judge.info()
    info: dict[str, Any] = {
        "runs": [r.name for r, _ in members],
        "members": [member for _, member in members],
        "judge": {"backend": who.backend, "model": who.model, "embedding_model": who.embedding_model},
        "empty_chunks_skipped": len(skipped),
        "empty_chunks_unjudged": len(skipped),
        "depth": depth,
        "pairs": 0,
        "graded": 0,
        "relevant_added": 0,
        "failures": 0,
    }
    answered: dict[str, str] = {}
    if not trimmed:
        return grades, info, answered
    filled = fill_qrels(
        Qrels.from_dict(human) if human else Qrels.from_dict({next(iter(ids)): {}}),
        trimmed,
        {i.id: i.question for i in items},
        texts,
        judge,
        top_k=depth,
        check_agreement=False,
    )
    unanswerable = {i.id for i in items if not i.answerable}
    out = list(grades)
    for qid, docs in sorted(filled.judge_grades.items()):
        for doc, grade in sorted(docs.items()):
            if qid in unanswerable:
                if grade >= GRADE_SCALE:
                    answered.setdefault(qid, doc)
                continue
            if (qid, doc) in known:
                continue
            scaled = judge_to_scale(grade, settings.source_grade)
            out.append(
                Grade(
                    query_id=qid,
                    doc_id=doc,
                    grade=scaled,
                    origin="judge",
                    reason=filled.reasons.get((qid, doc)),
                )
            )
            info["relevant_added"] += int(scaled > 0)
    info["pairs"] = filled.pool_pairs
    info["graded"] = filled.filled
    info["failures"] = len(filled.failures)
    info["failure_examples"] = [f"{f.query_id}: {f.cause}" for f in filled.failures[:5]]
    return out, info, answered
