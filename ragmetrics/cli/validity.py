"""`ragmetrics validity NIGHT`: which of a night's retrieval and context metrics tracks its answers."""

from __future__ import annotations

import argparse
from pathlib import Path

from ragmetrics.options import CORRECTIONS, TESTS, ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "validity",
        help="which retrieval or context metric tracks the night's answer quality (Kendall tau, bootstrap)",
        description="Reads a night's folder and, for every retrieval metric (on each qrels set), UDCG and judge "
        "context metric it holds, gives Kendall's tau-b with the answer quality per (question, run) and per "
        "system (4 runs or more), each with a bootstrap interval over questions, and the share of run pairs the "
        "metric separates (discriminative power). It names the metric that tracks the answers best, or says the "
        "data cannot tell. Writes validity.json, validity.md and two plots into the folder (or --out). Exit 2 "
        "when the night has no answers or no answer quality.",
    )
    parser.add_argument("night", type=Path, help="a night's folder (or its output root's `latest`)")
    parser.add_argument("--answer-metric", help="the answer quality (default: the night's answer_correctness, "
                        "else token_f1, exact_match, rouge_l, claim_f1)")  # fmt: skip
    parser.add_argument(
        "--metric", action="append", help="assess only this metric (repeatable; any the night has)"
    )
    parser.add_argument("--samples", type=int, help="bootstrap resamples of the questions (default 1000)")
    parser.add_argument("--confidence", type=float, help="interval level (default: the night's)")
    parser.add_argument("--seed", type=int, help="bootstrap seed (default: the night's)")
    parser.add_argument("--alpha", type=float, help="discriminative power's level (default: the night's)")
    parser.add_argument("--test", choices=TESTS, help="paired test (default: the night's)")
    parser.add_argument(
        "--correction", choices=CORRECTIONS, help="correction across pairs (default: the night's)"
    )
    parser.add_argument("--out", type=Path, help="write the files here instead of the night's folder")
    parser.add_argument("--no-plots", action="store_true", help="no PNG plots")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.errors import InputError
    from ragmetrics.labeling.session import report_json
    from ragmetrics.nightly.validity_night import study_night, write_validity
    from ragmetrics.validity.section import validity_terminal

    if args.samples is not None and args.samples < 1:
        raise InputError(f"--samples must be at least 1, got {args.samples}", field="--samples")
    folder = report_json(args.night).parent
    _report, data, result = study_night(
        folder, answer_metric=args.answer_metric, metrics=args.metric, samples=args.samples,
        confidence=args.confidence, seed=args.seed, alpha=args.alpha, test=args.test, correction=args.correction,
    )  # fmt: skip
    out = args.out or folder
    out.mkdir(parents=True, exist_ok=True)
    written = write_validity(out, data, result, plots=not args.no_plots)
    print(validity_terminal(result), end="")
    print("written: " + ", ".join(str(p) for p in written))
    return int(ExitCode.OK)
