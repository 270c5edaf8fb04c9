"""What several subcommands share: reading and scoring run files, and the flags of an LLM judge. Subcommand modules import this, never
each other, so each stays readable on its own."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragmetrics.retrieval.run import Run
    from ragmetrics.schema import RunResult


def load_runs(paths: list[str]) -> list[Run]:
    """Read every run; when two runs share a name, each of those is named after its file instead."""
    from ragmetrics.retrieval.run import Run

    runs = [Run.read(path) for path in paths]
    counts = Counter(run.name for run in runs)
    if all(n == 1 for n in counts.values()):
        return runs
    return [
        run.renamed(str(Path(path))) if counts[run.name] > 1 else run
        for path, run in zip(paths, runs, strict=True)
    ]


def _beside_utility_manifest(qrels_path: str) -> bool:
    """Whether a qrels path is a utility folder or a file in one (its utility.json says where grades came from)."""
    from pathlib import Path

    given = Path(qrels_path)
    return ((given if given.is_dir() else given.parent) / "utility.json").is_file()


def score_files(
    qrels_path: str,
    run_paths: list[str],
    metrics: list[str],
    *,
    intersection: bool = False,
    allow_disjoint: bool = False,
    utilities_path: str | None = None,
) -> list[RunResult]:
    """Score every run file against the qrels file; the CLI's work, reusable from Python. When an
    intent-aware metric (alpha_ndcg@k, ...) is asked for, the qrels file is read in the TREC diversity format
    (`query subtopic document grade`), and the other metrics are scored on its collapsed form. udcg reads the
    abstention probabilities of `utilities_path` (JSON, JSON Lines or text; docs/utilities.md)."""
    from ragmetrics.retrieval.diversity import SubtopicQrels
    from ragmetrics.retrieval.evaluate import evaluate
    from ragmetrics.retrieval.metric_parse import parse_metrics
    from ragmetrics.retrieval.qrels import Qrels

    requests = parse_metrics(metrics)  # reject a bad metric before reading large files
    qrels: Qrels | SubtopicQrels
    provenance = None
    if any(r.spec.subtopics for r in requests):
        qrels = SubtopicQrels.from_trec(qrels_path)
    else:
        # a utility folder (or its utility.qrels): its grades, and where they came from (utility.json)
        found = None
        if _beside_utility_manifest(qrels_path):  # a plain qrels file loads nothing of the nightly job
            from ragmetrics.nightly.qrels_provenance import qrels_path_provenance

            found = qrels_path_provenance(qrels_path)
        if found is not None:
            qrels_path, provenance = str(found[0]), found[1]
        qrels = Qrels.read(qrels_path)
    utilities = None
    if utilities_path is not None:
        from ragmetrics.retrieval.utilities import AbstentionProbabilities

        utilities = AbstentionProbabilities.read(utilities_path)
    query_set = "intersection" if intersection else "qrels"
    results = [
        evaluate(qrels, run, metrics, query_set=query_set, allow_disjoint=allow_disjoint, utilities=utilities)
        for run in load_runs(run_paths)
    ]
    if provenance is not None:  # as `ragmetrics score` keeps a test set's: in the JSON, and said on stderr
        for result in results:
            result.metadata.extra["qrels"] = provenance.model_dump(mode="json")
    return results


def qrels_provenance_lines(results: list[RunResult]) -> list[str]:
    """Where the qrels' grades came from, one line per qrels set (`score_files` keeps it per result)."""
    from ragmetrics.schema import QrelsProvenance

    lines: list[str] = []
    for result in results:
        stored = result.metadata.extra.get("qrels")
        if isinstance(stored, dict):
            line = QrelsProvenance.model_validate(stored).describe()
            if line not in lines:
                lines.append(line)
    return lines


def print_qrels_provenance(results: list[RunResult]) -> None:
    """Where the qrels' grades came from, once per qrels set, on stderr."""
    import sys

    for line in qrels_provenance_lines(results):
        print(line, file=sys.stderr)


def add_utilities(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--utilities",
        metavar="PATH",
        help="per-passage abstention probabilities for udcg@k: JSON {query: {doc: p_abstain}}, JSON Lines "
        "{query_id, doc_id, p_abstain} or text 'query doc p_abstain' lines (docs/utilities.md); without it "
        "udcg uses the relevance labels alone",
    )


def add_allow_disjoint(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-disjoint",
        action="store_true",
        help="score a run that shares no query id with the qrels (all zeros) instead of refusing it",
    )


def add_judge_arguments(parser: argparse.ArgumentParser, *, base_url_help: str) -> None:
    """The flags naming an OpenAI-compatible judge and its verdict cache, one wording for every subcommand."""
    parser.add_argument("--base-url", help=base_url_help)
    parser.add_argument("--model", default="gpt-4o-mini", help="judge model")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="variable holding the API key")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(".ragmetrics-cache/verdicts.sqlite"),
        help="SQLite verdict cache: a rerun asks only what it lacks (default: .ragmetrics-cache/verdicts.sqlite)",
    )
