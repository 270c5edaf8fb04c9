"""Step 5 of a test-set build (`build`'s module doc): the qrels completed from a pool of runs or reference
retrievers, graded by the judge (`add_pool`), and which judge grades them (`pool_grader`).

Why its own module: a built test set can be pooled again later, from Python or the CLI, without building."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmetrics.errors import InputError
from ragmetrics.judge.base import Judge
from ragmetrics.testset.build_result import FilterRecord, TestSet, attach_qrels
from ragmetrics.testset.corpus import open_corpus
from ragmetrics.testset.settings import TestsetSettings

__all__ = ["add_pool", "pool_grader"]


def pool_grader(judge: Judge, settings: TestsetSettings) -> Judge:
    """The judge that grades the pool: `judge`, or with `pool_judge: e5` and the local judge, the local judge
    on e5, so the grades do not come from the model the dense retrievers being compared rank with."""
    if settings.pool_judge != "e5" or judge.backend != "local":
        return judge
    from ragmetrics.judge.backends.local import LocalJudge

    if isinstance(judge, LocalJudge) and judge.info().settings.get("local_model") == "e5":
        return judge
    return LocalJudge(model="e5")


def add_pool(
    testset: TestSet,
    pool: Sequence[Any],
    judge: Judge,
    *,
    corpus: Any = None,
    index_dir: Path | str | None = None,
) -> TestSet:
    """Complete `testset`'s qrels in place from `pool` (runs over its questions, run files, or reference
    retriever kinds), graded by `judge` (`testset.pooling`); `corpus` defaults to the one it was built from.
    Unanswerable questions a pooled chunk answers are dropped and counted (`answered_anyway`)."""
    from ragmetrics.testset.pooling import pool_grades

    if corpus is None and testset.corpus is None:
        raise InputError("the test set does not know its corpus: pass corpus=", field="corpus")
    source = open_corpus(corpus if corpus is not None else testset.corpus)
    grades, info, answered = pool_grades(source, testset.items, testset.grades, pool, judge, testset.settings,
                                         index_dir=index_dir)  # fmt: skip
    for item in testset.items:
        if item.id in answered:
            testset.filtered.append(
                FilterRecord(
                    "answered_anyway",
                    item.kind,
                    item.question,
                    [],
                    f"the judge graded chunk {answered[item.id]!r} as answering it",
                )
            )
    testset.items = [i for i in testset.items if i.id not in answered]
    testset.grades = [g for g in grades if g.query_id not in answered]
    testset.pool = info
    attach_qrels(testset.items, testset.grades)
    testset.share_duplicates()
    return testset
