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


@dataclass(frozen=True)
class QuestionRow:
    """One line of a `--questions` file: the question, and what the team knows of it."""

    id: str
    question: str
    reference: str | None
    answerable: bool
    language: str | None


def read_questions(path: Path) -> dict[str, QuestionRow]:
    """id -> question row from JSONL: `id` or BEIR's `_id`; `question`, `text` or `query`; optionally
    `reference` (or `answer`), `answerable` (false: the corpus does not answer it) and `language`."""
    out: dict[str, QuestionRow] = {}
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
        reference = row.get("reference", row.get("answer"))
        if reference is not None and not isinstance(reference, str):
            raise InputError(f"field 'reference' must be text, got {type(reference).__name__}", source=str(path), line=line)
        answerable = row.get("answerable", True)
        if not isinstance(answerable, bool):
            raise InputError(f"field 'answerable' must be true or false, got {answerable!r}", source=str(path), line=line)
        language = row.get("language")
        if language is not None and not isinstance(language, str):
            raise InputError(f"field 'language' must be text, got {language!r}", source=str(path), line=line)
        out[qid] = QuestionRow(qid, text, reference.strip() or None if reference else None, answerable, language)
    if not out:
        raise InputError("holds no questions (an empty file)", source=str(path))
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


def _from_questions(corpus_path: Path, questions: Path, qrels: Path) -> Targets:
    """The team's questions over its corpus: answerable ones with a relevant document in the corpus, and the
    ones marked `answerable: false` (kept as out-of-scope attacks); references and languages carried over."""
    rows = read_questions(questions)
    judged = _qrels(qrels)
    chunks = load_corpus(corpus_path)
    relevant_ids = {d for grades in judged.values() for d, g in grades.items() if g >= 1}
    if relevant_ids and not relevant_ids & chunks.keys():
        raise InputError(
            f"none of the qrels' {len(relevant_ids)} relevant documents is in the corpus "
            f"(qrels ids such as {sorted(relevant_ids)[:3]}, corpus ids such as {sorted(chunks)[:3]}): "
            "the two must use the same document ids",
            source=str(qrels),
        )
    answerable: list[Target] = []
    unanswerable: list[Target] = []
    for row in rows.values():
        if not row.answerable:
            unanswerable.append(Target(row.id, row.question, None, row.language, {}, answerable=False))
            continue
        relevant = {d: g for d, g in judged.get(row.id, {}).items() if g >= 1}
        if relevant:
            answerable.append(Target(row.id, row.question, row.reference, row.language, relevant))
    if not answerable:
        raise InputError(
            f"no answerable question of {questions} has a relevant document (grade >= 1) in the qrels",
            source=str(qrels),
        )
    return Targets(answerable, unanswerable, chunks, str(corpus_path), str(corpus_path))


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
        return _from_questions(path, questions, qrels)
    return _generated(path, size, seed, say)


def out_of_scope_targets(
    targets: Targets, count: int, seed: int, progress: Callable[[str], None] | None = None
) -> list[Target]:
    """`count` questions the corpus does not answer: the source's unanswerable ones first, then the targets'
    own questions with a term swapped (`out_of_scope.reworded_out_of_scope`, worded as the team words them),
    then the offline builder's unanswerable kind over the same corpus."""
    import numpy as np

    from ragmetrics.attacks.out_of_scope import reworded_out_of_scope

    chosen = list(targets.unanswerable[:count])
    rng = np.random.default_rng(seed)
    chosen += reworded_out_of_scope(targets.answerable, targets.corpus, count - len(chosen), rng)
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
