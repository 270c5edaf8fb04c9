"""`ragmetrics utility RUN... --questions Q --passages P -o DIR`: utility judgments (eRAG) as graded qrels
with provenance `utility`, and the probabilities of abstaining `udcg@k` reads (ragmetrics.utility,
docs/utilities.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragmetrics.cli._common import load_runs
from ragmetrics.errors import InputError
from ragmetrics.options import ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "utility",
        help="utility judgments (eRAG): each pooled passage given alone to a generator, scored as qrels",
        description="Every distinct (question, passage) pair in the runs' top k is given to the generator "
        "alone; its answer is scored against the question's reference (token_f1, exact_match or the judge's "
        "answer_correctness) and written as graded qrels (DIR/utility.qrels) with provenance (DIR/utility.json), "
        "every pair's answer (DIR/judgments.jsonl) and, where the generator gives them, the probabilities of "
        "abstaining (DIR/abstention.jsonl, for udcg@k). Answers are cached, a budget is never exceeded, and "
        "--dry-run prices a build without sending anything.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run files whose top k is pooled")
    parser.add_argument(
        "--questions", type=Path, required=True, help='JSONL of {"id", "question", "reference"}'
    )
    parser.add_argument("--passages", type=Path, required=True, help='JSONL of {"id", "text"}')
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="folder to write")
    parser.add_argument("--k", type=int, default=10, help="pool depth per run (default: 10)")
    parser.add_argument(
        "--metric", choices=["token_f1", "exact_match", "answer_correctness"], default="token_f1"
    )
    parser.add_argument(
        "--max-grade", type=int, default=3, help="grade = round(score x MAX_GRADE) (default: 3)"
    )
    gen = parser.add_argument_group("generator")
    gen.add_argument(
        "--generator", choices=["extractive", "openai", "http", "callable"], default="extractive"
    )
    gen.add_argument("--model", help="openai: the model name")
    gen.add_argument("--base-url", help="openai: an OpenAI-compatible endpoint (default: OpenAI's)")
    gen.add_argument("--api-key-env", default="OPENAI_API_KEY", help="openai: variable holding the key")
    gen.add_argument("--temperature", type=float, default=0.0)
    gen.add_argument("--max-tokens", type=int, default=64)
    gen.add_argument(
        "--logprobs", action="store_true", help="openai: ask for logprobs (probability of abstaining)"
    )
    gen.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default: 60)")
    gen.add_argument("--price-in", type=float, default=0.0, help="USD per million prompt tokens")
    gen.add_argument("--price-out", type=float, default=0.0, help="USD per million completion tokens")
    gen.add_argument("--url", help="http: the generator endpoint (POST {question, contexts: [passage]})")
    gen.add_argument("--target", help="callable: package.module:function")
    gen.add_argument("--cache-key", help="http/callable: what decides answers that the code does not show")
    parser.add_argument("--cache", type=Path, help="answer cache (default: DIR/answers.sqlite)")
    parser.add_argument("--max-requests", type=int, help="at most this many generator calls")
    parser.add_argument(
        "--max-cost", type=float, help="at most this many USD (calls reserved at their bound)"
    )
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--retries", type=int, default=1, help="re-asks of a pair after a passing failure")
    parser.add_argument("--dry-run", action="store_true", help="price the build; send nothing, write nothing")
    parser.add_argument(
        "--judge", choices=["local", "openai"], default="local", help="answer_correctness judge"
    )
    parser.add_argument("--judge-model", help="answer_correctness: the judge's model")
    parser.add_argument("--judge-base-url", help="answer_correctness: the judge's endpoint")
    parser.set_defaults(handler=run_command)


def make_generator(args: argparse.Namespace) -> Any:
    """The generator the arguments ask for; a missing setting is an InputError naming its option."""
    from ragmetrics.utility.generators import ExtractiveGenerator
    from ragmetrics.utility.openai_generator import OpenAIGenerator

    if args.generator == "extractive":
        return ExtractiveGenerator()
    if args.generator == "openai":
        if not args.model:
            raise InputError("--generator openai needs --model", field="--model")
        return OpenAIGenerator(
            model=args.model,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
            logprobs=args.logprobs,
            timeout_s=args.timeout,
            price_in=args.price_in,
            price_out=args.price_out,
        )
    from pydantic import ValidationError

    from ragmetrics.nightly.config_calls import CallSettings
    from ragmetrics.nightly.utility_generator import target_generator

    option = "--url" if args.generator == "http" else "--target"
    value = args.url if args.generator == "http" else args.target
    if not value:
        raise InputError(f"--generator {args.generator} needs {option}", field=option)
    target: Any = {"url": value} if args.generator == "http" else value
    try:
        settings = CallSettings(
            target=target, cache_key=args.cache_key, timeout_s=args.timeout, retries=args.retries
        )
    except ValidationError as exc:
        raise InputError(f"{option}: {exc.errors()[0]['msg']}", field=option) from None
    return target_generator(settings, [Path.cwd()])


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.judge.cache import VerdictCache
    from ragmetrics.utility.build import Budget, build_utility, plan_utility
    from ragmetrics.utility.inputs import read_passages, read_questions

    for name in ("k", "max_grade", "concurrency"):
        if getattr(args, name) < 1:
            raise InputError(
                f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}", field=name
            )
    questions = read_questions(args.questions)
    passages = read_passages(args.passages)
    runs = load_runs(args.runs)
    generator = make_generator(args)
    budget = Budget(max_requests=args.max_requests, max_cost=args.max_cost)
    cache_path = args.cache or args.output / "answers.sqlite"
    if args.dry_run:
        cache = VerdictCache(cache_path) if cache_path.exists() else None
        plan = plan_utility(questions, passages, runs, generator, k=args.k, cache=cache, budget=budget)
        print(json.dumps(plan.to_json(), indent=2))
        print(
            f"dry run: {plan.pairs} pairs, {plan.cached} cached, {plan.requests} requests to send "
            + (
                "at most (one of them the request a server refusing logprobs answers with HTTP 400, the pair then "
                "asked again without) "
                if plan.refused_request
                else ""
            )
            + f"(cost at most {plan.cost_bound:.6f} USD); the budget pays for {plan.within_budget}; "
            f"{len(plan.skipped_questions)} questions skipped (no reference)"
            + (
                f"; {plan.cached_without_logprobs} of those requests were answered without logprobs by a build "
                "the server refused them to: if it still refuses, one refused request and those are read from "
                "the cache"
                if plan.cached_without_logprobs
                else ""
            ),
            file=sys.stderr,
        )
        if args.metric == "answer_correctness":  # the judge's calls are its own, outside the generator's budget
            print(
                f"plus the judge's answer_correctness: up to {plan.pairs} verdicts (one per answered pair, those "
                "in the judge's cache not sent), not in the counts above nor in --max-requests/--max-cost",
                file=sys.stderr,
            )
        return int(ExitCode.OK)
    args.output.mkdir(parents=True, exist_ok=True)
    judge = None
    if args.metric == "answer_correctness":
        from ragmetrics.judge.select import make_judge
        from ragmetrics.judge.settings import JudgeSettings

        judge = make_judge(
            JudgeSettings(backend=args.judge, model=args.judge_model, base_url=args.judge_base_url)
        )
    result = build_utility(
        questions, passages, runs, generator, k=args.k, metric=args.metric, judge=judge,
        cache=VerdictCache(cache_path), budget=budget, max_grade=args.max_grade,
        concurrency=args.concurrency, retries=args.retries,
    )  # fmt: skip
    folder = result.write(args.output)
    counts = result.counts()
    print(json.dumps(counts))
    for j in result.judgments:
        if j.cause is not None:
            print(f"failed: {j.query_id} {j.doc_id}: {j.cause}: {j.message}", file=sys.stderr)
    if result.skipped_questions:
        print(
            f"skipped {len(result.skipped_questions)} questions without a reference "
            f"({counts['skipped_pairs']} pairs): {', '.join(result.skipped_questions[:10])}"
            + (" ..." if len(result.skipped_questions) > 10 else ""),
            file=sys.stderr,
        )
    print(f"wrote {folder}/utility.qrels ({counts['scored']} graded pairs) and utility.json", file=sys.stderr)
    return int(ExitCode.OK)
