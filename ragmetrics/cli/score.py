"""`ragmetrics score FILE -m METRIC ...`: score a QA file with no config (judge and retrieval metrics)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragmetrics.cli._common import add_judge_arguments
from ragmetrics.errors import InputError
from ragmetrics.options import ExitCode


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
    parser.add_argument("file", type=Path, help="the QA file")
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
    from ragmetrics.render.tables import format_results
    from ragmetrics.retrieval.evaluate import evaluate
    from ragmetrics.retrieval.metrics import parse_metric

    dataset = read_qa(args.file, on_bad_row=args.on_bad_row)
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
    results = []
    if retrieval:
        results.append(evaluate(dataset.qrels(), dataset.run("pipeline"), retrieval, name="retrieval"))
    if judged:
        settings = JudgeSettings(
            backend="openai" if args.base_url else "local",
            base_url=args.base_url,
            model=args.model,
            api_key_env=args.api_key_env,
            cache_path=args.cache,
        )
        results.append(
            evaluate_rag(list(dataset), judged, make_judge(settings), name="judge", progress=False)
        )
    for result in results:
        print(format_results([result], result.metrics, args.format, per_query=args.per_query).rstrip())
        for failure in result.failures:
            print(
                f"failed: {failure.query_id} / {failure.metric}: {failure.cause}: {failure.message}",
                file=sys.stderr,
            )
    for bad in dataset.skipped:
        print(f"skipped: {bad.describe(str(args.file))}", file=sys.stderr)
    if any(r.failures for r in results):
        return int(ExitCode.INCOMPLETE)
    return int(ExitCode.OK)
