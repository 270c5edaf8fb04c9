"""`ragmetrics score FILE -m METRIC ...`: score a QA file with no config (judge and retrieval metrics)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragmetrics.cli._common import add_judge_arguments
from ragmetrics.errors import InputError
from ragmetrics.options import ExitCode
from ragmetrics.schema import JudgeInfo, RunResult


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score a QA file (question, contexts, answer, reference; ids optional) with no config",
        description="Reads FILE as `ragmetrics run` reads a dataset (JSONL, JSON, CSV, Parquet, a saved datasets "
        "folder or a test-set folder; rows without ids are numbered row-<n>) and prints each metric's mean: "
        "judge metrics by the local judge unless --base-url names an OpenAI-compatible endpoint, retrieval "
        "metrics from the rows' retrieved_ids against their relevant_ids. For comparisons, history and the "
        "gate, write a config (`ragmetrics run`).",
    )
    parser.add_argument("file", type=Path, nargs="?", help="the QA file (optional with --traces)")
    parser.add_argument(
        "--traces",
        type=Path,
        help="a trace file (OTLP JSON or a Langfuse export): the traced answers, contexts and rankings are "
        "scored, matched to FILE's questions when FILE is given, and latency, tokens and cost are printed too "
        "(docs/traces.md)",
    )
    parser.add_argument("-m", "--metric", nargs="+", required=True, dest="metrics", help="metrics to score")
    parser.add_argument("--per-query", action="store_true", help="one row per question too")
    parser.add_argument("--format", default="table", choices=["table", "json", "markdown", "csv"])
    add_judge_arguments(
        parser, base_url_help="OpenAI-compatible endpoint for an LLM judge (default: the local judge)"
    )
    parser.add_argument(
        "--on-bad-row", choices=["fail", "skip"], default="fail", help="a bad row stops, or is skipped"
    )
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.judge.registry import judge_metric_names
    from ragmetrics.judge.select import make_judge
    from ragmetrics.judge.settings import JudgeSettings
    from ragmetrics.nightly.dataset import read_qa
    from ragmetrics.retrieval.evaluate import evaluate
    from ragmetrics.retrieval.metric_parse import parse_metric

    if args.file is None and args.traces is None:
        raise InputError("give the QA file, or --traces with a trace file", field="file")
    if args.traces is not None:
        from ragmetrics.nightly.config_dataset import DatasetConfig
        from ragmetrics.nightly.load import load_dataset

        dataset = load_dataset(
            DatasetConfig(path=args.file, traces=args.traces, on_bad_row=args.on_bad_row), progress=False
        )
    else:
        dataset = read_qa(args.file, on_bad_row=args.on_bad_row)
    system_name = _system_name(args)
    judged = [m for m in args.metrics if m in judge_metric_names()]
    retrieval = [m for m in args.metrics if m not in judged]
    for name in retrieval:
        try:
            parse_metric(name)
        except (ValueError, KeyError):
            import difflib

            close = difflib.get_close_matches(name, judge_metric_names(), n=1, cutoff=0.6)
            hint = (
                f"; did you mean {close[0]!r}?" if close else " (docs/judge.md and docs/metrics.md list them)"
            )
            raise InputError(
                f"{name!r} is neither a judge nor a retrieval metric{hint}", field="--metric"
            ) from None
    from ragmetrics.nightly.applicability import mark_not_applicable, not_applicable_note

    notes: list[str] = []
    results = []
    if retrieval:
        unjudged = dataset.unjudged()
        results.append(
            mark_not_applicable(
                evaluate(dataset.qrels(), dataset.run(system_name), retrieval, name=system_name), unjudged
            )
        )
        note = not_applicable_note(unjudged, dataset.unanswerable)
        if note is not None:
            notes.append(note)
    judge_info = None
    if judged:
        settings = JudgeSettings(
            backend="openai" if args.base_url else "local",
            base_url=args.base_url,
            model=args.model,
            api_key_env=args.api_key_env,
            cache_path=args.cache,
        )
        # The samples carry `answerable` from the file: an unanswerable one's reference-based scores are n/a.
        result = evaluate_rag(list(dataset), judged, make_judge(settings), name=system_name, progress=False)
        judge_info = result.metadata.judge
        results.append(result)
    if dataset.traced is not None:
        from ragmetrics.nightly.answers import operational_result
        from ragmetrics.nightly.completeness import mark_call_failures
        from ragmetrics.nightly.runs import traced_answers

        traced = traced_answers(system_name, dataset)
        # A question without a trace fails with that cause in every result, never a 0 or a missing field.
        mark_call_failures(
            {str(i): r for i, r in enumerate(results)}, {str(i): traced for i in range(len(results))}
        )
        results.append(operational_result(traced))
        notes.extend(traced.notes)
    system = results[0]
    for more in results[1:]:
        system = system.merge(more)
    if retrieval:
        from ragmetrics.nightly.qrels_provenance import qrels_provenance

        provenance = qrels_provenance(dataset.relevance, dataset.source, dataset.testset_folder)
        if provenance is not None:  # where the grades came from: in the JSON, and said under the table
            system.metadata.extra["qrels"] = provenance.model_dump(mode="json")
            notes.insert(0, provenance.describe())
    _print(system, args, judge_info, notes)
    for bad in dataset.skipped:
        print(f"skipped: {bad.describe(dataset.source)}", file=sys.stderr)
    return int(ExitCode.INCOMPLETE if system.failures else ExitCode.OK)


def _system_name(args: argparse.Namespace) -> str:
    """The scored system's name in the table: the traces' or the QA file's name."""
    path = args.traces if args.traces is not None else args.file
    return str(path.stem if path.is_file() else path.name) or "system"


def _print(system: RunResult, args: argparse.Namespace, judge: JudgeInfo | None, notes: list[str]) -> None:
    """One table (or one JSON document) for the one system scored; who judged, what failed (grouped by cause,
    every sample in the JSON) and the notes on stderr, or below the table where a person reads it."""
    from ragmetrics.nightly.completeness import failure_summary
    from ragmetrics.render.judge_note import judge_line, judge_note
    from ragmetrics.render.safe_text import visible_controls
    from ragmetrics.render.tables import format_results

    table = format_results(
        [system], system.metrics, args.format, per_query=args.per_query, failure_notes=False
    )
    print(table.rstrip())
    note = judge_note(judge, system.metrics)  # the local judge: named, with its measured weaknesses
    said = [note] if note else [judge_line(judge)] if judge is not None else []
    said.extend(line.removeprefix("ragmetrics: ") for line in failure_summary([system], [], 0.0))
    said.extend(f"note: {n}" for n in notes)
    if not said:
        return
    text = "\n".join(visible_controls(line) for line in "\n".join(said).split("\n"))
    if args.format == "table":
        print(text)
    else:  # the data format on stdout stays one document
        print(text, file=sys.stderr)
