"""`ragmetrics fill-qrels QRELS RUN... --queries Q --passages P -o OUT`: grade the runs' unjudged top-k
documents with a judge and write qrels with the judge's grades marked (ragmetrics.qrels_fill)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ragmetrics._textfile import read_utf8
from ragmetrics.cli._common import add_judge_arguments, load_runs
from ragmetrics.errors import InputError, json_problem
from ragmetrics.options import ExitCode
from ragmetrics.schema import MetricAgreement


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "fill-qrels",
        help="grade the runs' unjudged top-k documents with a judge (LLM or local), marked apart",
        description="Every (query, document) pair in the runs' top k that the qrels do not judge is graded 0-3 "
        "by the judge (passage_relevance, cached like every verdict). Writes the combined qrels and, beside it, "
        "OUT.judge.tsv with the judge-made grades and reasons; prints the judge's agreement with the human "
        "grades of the same pool.",
    )
    parser.add_argument("qrels", help="qrels file (TREC, JSON, JSONL, Parquet)")
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run files whose top k is pooled")
    parser.add_argument("--queries", type=Path, required=True, help="JSONL of {id, text}, or TSV id<TAB>text")
    parser.add_argument("--passages", type=Path, required=True, help="JSONL of {id, text} (BEIR: _id)")
    parser.add_argument("--top-k", type=int, default=10, help="pool depth per run (default: 10)")
    parser.add_argument("--judge", choices=["local", "openai"], default="local", help="judge backend")
    add_judge_arguments(parser, base_url_help="OpenAI-compatible endpoint (judge openai)")
    parser.add_argument("--scale", type=int, help="write judge grades on 0..SCALE (your qrels' top grade)")
    parser.add_argument(
        "--compare-with",
        type=Path,
        metavar="QRELS",
        help="held-back human grades: print the filled grades' agreement",
    )
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="OUT", help="qrels file to write")
    parser.set_defaults(handler=run_command)


def _texts(path: Path, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line_no, line in enumerate(read_utf8(path).splitlines(), start=1):
        if not line.strip():
            continue
        key: object
        text: object
        if path.suffix.lower() in (".tsv", ".txt"):
            cells = line.split("\t", 1)
            if len(cells) != 2:
                raise InputError("expected id<TAB>text", source=str(path), line=line_no)
            key, text = cells
        else:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(json_problem(exc), source=str(path), line=line_no) from None
            key = obj.get("id", obj.get("_id")) if isinstance(obj, dict) else None
            text = obj.get("text") if isinstance(obj, dict) else None
            if isinstance(obj, dict) and obj.get("title"):
                text = f"{obj['title']}\n{text}" if isinstance(text, str) else text
        if not isinstance(key, str | int) or not isinstance(text, str) or not text.strip():
            raise InputError(f"{what}: expected an id and a non-empty text", source=str(path), line=line_no)
        if str(key) in out:
            raise InputError(f"duplicate {what} id {key!r}", source=str(path), line=line_no, field="id")
        out[str(key)] = text
    return out


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.judge.select import make_judge
    from ragmetrics.judge.settings import JudgeSettings
    from ragmetrics.qrels_fill import fill_qrels
    from ragmetrics.retrieval.qrels import Qrels

    settings = JudgeSettings(
        backend=args.judge,
        base_url=args.base_url,
        model=args.model,
        api_key_env=args.api_key_env,
        cache_path=args.cache,
    )
    judge = make_judge(settings)
    filled = fill_qrels(
        Qrels.read(args.qrels),
        load_runs(args.runs),
        _texts(args.queries, "query"),
        _texts(args.passages, "passage"),
        judge,
        top_k=args.top_k,
    )
    qrels_path, marks = filled.write(args.output, scale=args.scale)
    print(
        f"pool: {filled.pool_pairs} (query, document) pairs in the top {args.top_k}; "
        f"{filled.human_in_pool} judged by people, {filled.filled} graded by the judge "
        f"({len(filled.failures)} failed, listed below)"
    )
    _print_agreement("on the human-judged pairs of the pool", filled.agreement)
    if args.compare_with is not None:
        _print_agreement(
            f"with {args.compare_with} on the filled pairs",
            filled.agreement_with(Qrels.read(args.compare_with)),
        )
    for failure in filled.failures:
        print(f"failed: {failure.query_id}: {failure.cause}: {failure.message}", file=sys.stderr)
    print(f"wrote {qrels_path} (people and judge) and {marks} (judge grades, reasons)")
    return int(ExitCode.OK)


def _print_agreement(where: str, agreement: MetricAgreement | None) -> None:
    if agreement is None:
        print(f"judge agreement {where}: no pair to compare")
        return
    parts = [f"judge agreement {where} ({agreement.n_labeled} pairs):"]
    for name in ("accuracy", "balanced_accuracy", "kappa", "spearman"):
        value = getattr(agreement, name)
        if value is not None and None not in (value.estimate, value.low, value.high):
            parts.append(f"{name} {value.estimate:.3f} [{value.low:.3f}, {value.high:.3f}]")
    bias = agreement.bias.estimate
    print(" ".join(parts) + (f"; bias {bias:+.3f}" if bias is not None else ""))
