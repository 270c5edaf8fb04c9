"""The night's retrieval runs compared again on source-only qrels, so a verdict on pooled qrels says how far it
rests on the pool's grader.

A pooled test set's relevant grades come mostly from the judge that graded the pool, and that judge can favour
the runs that were pooled or that rank with its own model (issue 66: the same night named dense significantly
best with the MiniLM grader, and nothing significant with e5). The source chunk each question was written from
is relevant with no grader involved. So every retrieval metric the night compared is scored again with only
those grades (origin `source` in grades.tsv, copies of a source chunk included: they are the same text) and
compared with the night's own test, correction, alpha and seed. The renderers put the two verdicts side by side
in the verdict line itself (`render.verdict`).

Source-only qrels have one relevant chunk per question (two for two-chunk kinds): they miss every other good
chunk, so their means are lower and a run that finds a second good chunk first is scored as a miss. Neither
verdict is the truth; where they disagree, the decision needs people's grades (`ragmetrics label DIR --metric
qrels`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ragmetrics.nightly.config_night import NightlyConfig
from ragmetrics.nightly.qa_dataset import QADataset
from ragmetrics.retrieval.run import Run
from ragmetrics.schema import Report, SourceOnlyCheck

__all__ = ["source_only_check", "source_only_qrels"]


def source_only_qrels(dataset: QADataset) -> dict[str, dict[str, int]]:
    """Question -> source chunk -> grade, for the night's questions: the grades of origin `source` in the
    test-set folder's grades.tsv ({} when the dataset is no test-set folder)."""
    from ragmetrics.testset.output import read_grades

    if dataset.testset_folder is None or not (dataset.testset_folder / "grades.tsv").is_file():
        return {}
    questions = set(dataset.relevance)
    out: dict[str, dict[str, int]] = {}
    for grade in read_grades(dataset.testset_folder):
        if grade.origin == "source" and grade.grade > 0 and grade.query_id in questions:
            out.setdefault(grade.query_id, {})[grade.doc_id] = grade.grade
    return out


def source_only_check(
    config: NightlyConfig, dataset: QADataset, runs: Mapping[str, Run | None], report: Report
) -> SourceOnlyCheck | None:
    """The compared retrieval runs scored and compared on source-only qrels, when the night's qrels hold pooled
    (judge) grades; None otherwise, or with fewer than two ranked runs."""
    nightly = report.metadata.nightly
    provenance = nightly.dataset.qrels if nightly is not None else None
    if provenance is None or not provenance.by_origin.get("judge"):
        return None
    metrics = [m for m in config.retrieval.metrics if m in report.metrics]
    compared = {r.name for r in report.runs}
    ranked = {name: run for name, run in runs.items() if run is not None and name in compared}
    qrels = source_only_qrels(dataset)
    if len(ranked) < 2 or not metrics or not qrels:
        return None
    from ragmetrics.comparison.pairs import compare_results
    from ragmetrics.nightly.runs import passage_lengths
    from ragmetrics.retrieval.evaluate import evaluate

    lengths = passage_lengths(config, dataset)
    budget = {"lengths": lengths, "straddle": config.retrieval.straddle} if lengths is not None else {}
    query_set = config.retrieval.query_set
    results = [
        evaluate(qrels, run, metrics, query_set=query_set, name=name, allow_disjoint=True, **budget)
        for name, run in ranked.items()
    ]
    c = config.compare
    pairs = compare_results(
        results,
        metrics,
        test=c.test,
        correction=c.correction,
        seed=c.seed,
        alpha=c.alpha,
        permutations=c.permutations,
        align="intersection" if query_set == "intersection" else "union",
    )
    return SourceOnlyCheck(
        questions=len(qrels),
        metrics=metrics,
        means={
            r.name: {m: value for m in metrics if (value := r.aggregate.get(m)) is not None} for r in results
        },
        comparisons=pairs.comparisons,
    )
