"""`ragmetrics retrieval QRELS RUN [RUN ...] -m METRIC [...]`: score runs against qrels, one row per run."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from ragmetrics.cli._common import add_allow_disjoint, add_utilities, print_qrels_provenance, score_files
from ragmetrics.retrieval.metric_reference import metric_help

if TYPE_CHECKING:
    from ragmetrics.schema import RunResult

FORMATS = ("table", "json", "markdown", "latex", "csv")

_EPILOG = f"""metrics (name[@k][-lN], rbp.P; trec_eval spellings such as P_10, ndcg_cut_10, recip_rank accepted):
{metric_help()}

By default the mean is over every qrels query and a query a run lacks scores 0 (trec_eval -c);
--intersection averages over the queries both have (trec_eval's default). Files ending in .json or
.jsonl are read as JSON / JSON Lines, anything else as TREC text. --format json prints the unified result
schema: one object for one run, a list for several."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "retrieval",
        help="score runs against qrels (ndcg, map, mrr, precision, recall, ...)",
        description="Score one or more runs against qrels with retrieval metrics.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "qrels",
        metavar="QRELS",
        help="relevance judgements (TREC qrels, .json or .jsonl), or a utility folder (`ragmetrics utility -o "
        "DIR`; its provenance is said on stderr and kept in --format json)",
    )
    parser.add_argument("runs", metavar="RUN", nargs="+", help="ranked results (TREC run, .json or .jsonl)")
    parser.add_argument(
        "-m",
        "--metrics",
        metavar="METRIC",
        nargs="+",
        action="extend",
        required=True,
        help="metrics to compute, e.g. ndcg@10 map mrr precision@5-l2 rbp.80",
    )
    parser.add_argument("--per-query", action="store_true", help="also print one row per query")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    add_allow_disjoint(parser)
    add_utilities(parser)
    parser.add_argument(
        "--also-qrels",
        metavar="QRELS2",
        help="also score every run against these qrels (e.g. judge-filled ones from fill-qrels): each run "
        "gets a second row, named 'RUN [QRELS2's file name]', beside its row on QRELS",
    )
    parser.add_argument(
        "--intersection",
        action="store_true",
        help="average over the queries both qrels and run have (trec_eval's default) instead of all qrels queries",
    )
    parser.set_defaults(handler=run_command)


def render(results: list[RunResult], metrics: list[str], fmt: str, per_query: bool) -> str:
    if fmt == "json":
        if len(results) == 1:
            return results[0].model_dump_json(indent=2) + "\n"
        return json.dumps([r.model_dump(mode="json") for r in results], indent=2) + "\n"
    from ragmetrics.render.tables import format_results

    return format_results(results, metrics, fmt, per_query)


def run_command(args: argparse.Namespace) -> int:
    metrics = list(dict.fromkeys(args.metrics))
    results = score_files(
        args.qrels,
        args.runs,
        metrics,
        intersection=args.intersection,
        allow_disjoint=args.allow_disjoint,
        utilities_path=args.utilities,
    )
    if args.also_qrels:
        from pathlib import Path

        label = Path(args.also_qrels).name
        second = score_files(
            args.also_qrels,
            args.runs,
            metrics,
            intersection=args.intersection,
            allow_disjoint=args.allow_disjoint,
            utilities_path=args.utilities,
        )
        paired = []
        for first, other in zip(results, second, strict=True):
            paired += [first, other.model_copy(update={"name": f"{other.name} [{label}]"})]
        results = paired
    text = render(results, metrics, args.format, args.per_query)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    print_qrels_provenance(results)
    for result in results:
        missing, extra = result.metadata.missing_queries, result.metadata.extra_queries
        if missing:
            scored = "left out" if args.intersection else "scored 0"
            print(
                f"note: run {result.name!r} lacks {len(missing)} qrels queries ({scored}): {_some(missing)}",
                file=sys.stderr,
            )
        if extra:
            print(
                f"note: run {result.name!r} has {len(extra)} queries the qrels lack (left out): {_some(extra)}",
                file=sys.stderr,
            )
    return 0


def _some(ids: list[str], shown: int = 5) -> str:
    """The first few query ids, and how many more: enough to find them, never a wall of ids."""
    listed = ", ".join(repr(q) for q in sorted(ids)[:shown])
    return listed + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
