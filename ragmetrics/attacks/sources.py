"""Where the targets of an attack set come from: the built-in collection, a test-set folder, a corpus with
questions and qrels (a public collection's human queries and judgments), or a corpus alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics._jsonl import numbered_jsonl
from ragmetrics.attacks.build import Target, load_corpus
from ragmetrics.errors import InputError
from ragmetrics.testset.corpus import Chunk

__all__ = ["Targets", "read_questions", "targets_from"]


@dataclass
class Targets:
    """The questions to attack, the unanswerable ones the source already has, and the corpus."""

    answerable: list[Target]
    unanswerable: list[Target]
    corpus: dict[str, Chunk]
    corpus_path: str
    source: str


def read_questions(path: Path) -> dict[str, str]:
    """id -> question from JSONL: `id` or BEIR's `_id`, and `question`, `text` or `query`."""
    out: dict[str, str] = {}
    for line, row in numbered_jsonl(path):
        qid = row.get("id", row.get("_id"))
        text = next((row[k] for k in ("question", "text", "query") if isinstance(row.get(k), str)), None)
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str) or not qid.strip():
            raise InputError("needs an id (field 'id' or '_id')", source=str(path), line=line)
        if text is None or not text.strip():
            raise InputError(
                "needs the question's text (field 'question', 'text' or 'query')", source=str(path), line=line
            )
        if qid in out:
            raise InputError(f"duplicate id {qid!r}", source=str(path), line=line)
        out[qid] = text
    return out


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    from ragmetrics.retrieval.qrels import Qrels

    return Qrels.from_trec(path).to_dict()


def _builtin() -> Targets:
    from ragmetrics import collection

    graded = collection.load_qrels().to_dict()
    answerable = [
        Target(
            id=row["id"],
            question=row["question"],
            reference=row.get("reference"),
            language="en",
            relevant={d: g for d, g in graded.get(row["id"], {}).items() if g >= 1},
        )
        for row in collection.load_qa()
    ]
    return Targets(answerable, [], load_corpus("builtin"), "builtin", "builtin")


def _testset(folder: Path, corpus: Path | None) -> Targets:
    from ragmetrics.testset.output import read_items, read_manifest

    manifest = read_manifest(folder)
    corpus_source: Any = corpus if corpus is not None else manifest.get("corpus_path")
    if corpus_source is None:
        raise InputError(
            "testset.json names no corpus_path: give the corpus with --corpus",
            source=str(folder / "testset.json"),
        )
    items = read_items(folder)
    answerable: list[Target] = []
    unanswerable: list[Target] = []
    for item in items:
        relevant = dict(zip(item.relevant_ids or item.source_ids, item.relevant_grades or [], strict=False))
        if not relevant:
            relevant = {d: 1 for d in item.source_ids}
        target = Target(
            id=item.id,
            question=item.question,
            reference=item.reference if item.answerable else None,
            language=item.language,
            relevant={d: g for d, g in relevant.items() if g >= 1},
            answerable=item.answerable,
        )
        (answerable if item.answerable else unanswerable).append(target)
    return Targets(answerable, unanswerable, load_corpus(corpus_source), str(corpus_source), str(folder))


def _generated(corpus: Path, size: int, seed: int, say: Callable[[str], None]) -> Targets:
    from ragmetrics.testset.build import build_testset

    say(f"writing {size} questions about {corpus} with the offline test-set builder")
    testset = build_testset(str(corpus), size=size, seed=seed, generator="offline", judge_checks=False)
    answerable = [
        Target(
            id=item.id,
            question=item.question,
            reference=item.reference,
            language=item.language,
            relevant=dict(zip(item.relevant_ids or [], item.relevant_grades or [], strict=False))
            or {d: 1 for d in item.source_ids},
        )
        for item in testset.items
        if item.answerable
    ]
    return Targets(answerable, [], load_corpus(corpus), str(corpus), str(corpus))


def targets_from(
    source: str,
    *,
    corpus: Path | None = None,
    questions: Path | None = None,
    qrels: Path | None = None,
    size: int = 100,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> Targets:
    """The targets of `source`: 'builtin', a test-set folder, or a corpus file (with `questions` and `qrels`:
    those; without: questions the offline builder writes)."""
    say = progress or (lambda _: None)
    if source == "builtin":
        return _builtin()
    path = Path(source).expanduser()
    if path.is_dir() and (path / "testset.json").is_file():
        return _testset(path, corpus)
    if not path.exists():
        raise InputError("not found (expected a corpus file, a test-set folder or 'builtin')", source=source)
    if (questions is None) != (qrels is None):
        raise InputError("give both --questions and --qrels, or neither", source=source)
    if questions is not None and qrels is not None:
        texts = read_questions(questions)
        judged = _qrels(qrels)
        chunks = load_corpus(path)
        answerable = [
            Target(
                id=qid,
                question=text,
                reference=None,
                language=None,
                relevant={d: g for d, g in judged[qid].items() if g >= 1},
            )
            for qid, text in texts.items()
            if any(g >= 1 for g in judged.get(qid, {}).values())
        ]
        if not answerable:
            raise InputError("no question has a relevant document in the qrels", source=str(qrels))
        return Targets(answerable, [], chunks, str(path), str(path))
    return _generated(path, size, seed, say)


def out_of_scope_targets(
    targets: Targets, count: int, seed: int, progress: Callable[[str], None] | None = None
) -> list[Target]:
    """`count` questions the corpus does not answer: the source's unanswerable ones first, then the offline
    builder's unanswerable kind over the same corpus."""
    chosen = list(targets.unanswerable[:count])
    missing = count - len(chosen)
    if missing > 0:
        from ragmetrics.testset.build import build_testset

        if progress:
            progress(f"writing {missing} out-of-scope questions with the offline test-set builder")
        built = build_testset(
            targets.corpus_path,
            size=missing,
            seed=seed,
            kinds={"unanswerable": 1.0},
            generator="offline",
            judge_checks=False,
        )
        chosen += [
            Target(
                id=f"oos-{item.id}",
                question=item.question,
                reference=None,
                language=item.language,
                relevant={},
                answerable=False,
            )
            for item in built.items
            if not item.answerable
        ]
    return chosen
