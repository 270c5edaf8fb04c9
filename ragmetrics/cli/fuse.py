"""`ragmetrics fuse RUN RUN [...] -o OUT`: fuse run files with any of ranx's 25 methods (RRF, CombSUM, CombMNZ,
Borda, Condorcet, ..., and the trained ProbFuse, SegFuse, SlideFuse, PosFuse, MAPFuse, BayesFuse with
--train-qrels)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragmetrics.cli._common import load_runs
from ragmetrics.options import FUSION_METHODS as METHODS
from ragmetrics.options import FUSION_NORMS as NORMS
from ragmetrics.options import ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "fuse",
        help="fuse run files into one (hybrid retrieval): rrf, combsum, bordafuse, condorcet, probfuse, ...",
        description="Fuse two or more TREC/JSON run files into one TREC run. Methods, normalisations "
        "and where they differ from ranx: the docstring of ragmetrics.retrieval.fusion.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="two or more run files")
    parser.add_argument("--method", choices=METHODS, default="rrf", help="fusion method (default: rrf)")
    parser.add_argument(
        "--norm", choices=NORMS, default="min-max", help="score normalisation (default: min-max)"
    )
    parser.add_argument(
        "--weights",
        type=float,
        nargs="+",
        metavar="W",
        help="one weight per run (wsum, wmnz, mixed, weighted_bordafuse, weighted_condorcet)",
    )
    parser.add_argument("--k", type=float, default=60.0, help="rrf's k (default: 60)")
    parser.add_argument("--gamma", type=float, help="combgmnz's gamma (required there)")
    parser.add_argument("--sigma", type=float, help="logn_isr's sigma (default: 0.01)")
    parser.add_argument("--phi", type=float, help="rbc's phi (default: 0.8)")
    parser.add_argument(
        "--train-qrels",
        metavar="QRELS",
        help="trained methods (probfuse, segfuse, slidefuse, posfuse, mapfuse, bayesfuse): the qrels of "
        "the training queries (keep the queries you evaluate on out of them)",
    )
    parser.add_argument("--segments", type=int, default=10, help="probfuse's segments (default: 10)")
    parser.add_argument("--window", type=int, default=5, help="slidefuse's window w (default: 5)")
    parser.add_argument("--name", help="the fused run's name (its TREC tag)")
    parser.add_argument(
        "-o", "--output", type=Path, required=True, metavar="OUT", help="TREC run file to write"
    )
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.errors import InputError
    from ragmetrics.options import TRAINED_FUSION_METHODS
    from ragmetrics.retrieval.fusion import fuse

    runs = load_runs(args.runs)
    model = None
    if args.method in TRAINED_FUSION_METHODS:
        if args.train_qrels is None:
            raise InputError(f"{args.method} is trained: give --train-qrels QRELS", field="train-qrels")
        from ragmetrics.retrieval.fusion_trained import train_fusion
        from ragmetrics.retrieval.qrels import Qrels

        training = Qrels.read(args.train_qrels)
        model = train_fusion(training, runs, args.method, segments=args.segments, window=args.window)
    elif args.train_qrels is not None:
        raise InputError(
            f"--train-qrels applies to the trained methods, not {args.method}", field="train-qrels"
        )
    fused = fuse(
        runs, args.method, norm=args.norm, weights=args.weights, k=args.k, gamma=args.gamma,
        sigma=args.sigma, phi=args.phi, model=model, name=args.name,
    )  # fmt: skip
    fused.to_trec(args.output)
    print(f"fused {len(args.runs)} runs ({args.method}, {args.norm}) into {args.output}", file=sys.stderr)
    return int(ExitCode.OK)
