"""`ragmetrics fuse RUN RUN [...] -o OUT`: fuse run files (RRF, CombSUM, CombMNZ, CombMAX, weighted sum)."""

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
        help="fuse run files into one (hybrid retrieval): rrf, combsum, combmnz, combmax, wsum",
        description="Fuse two or more TREC/JSON run files into one TREC run. Methods, normalisations "
        "and where they differ from ranx: the docstring of ragmetrics.retrieval.fusion.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="two or more run files")
    parser.add_argument("--method", choices=METHODS, default="rrf", help="fusion method (default: rrf)")
    parser.add_argument(
        "--norm", choices=NORMS, default="min-max", help="score normalisation (default: min-max)"
    )
    parser.add_argument("--weights", type=float, nargs="+", metavar="W", help="one weight per run (wsum)")
    parser.add_argument("--k", type=float, default=60.0, help="rrf's k (default: 60)")
    parser.add_argument("--name", help="the fused run's name (its TREC tag)")
    parser.add_argument(
        "-o", "--output", type=Path, required=True, metavar="OUT", help="TREC run file to write"
    )
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.retrieval.fusion import fuse

    fused = fuse(
        load_runs(args.runs), args.method, norm=args.norm, weights=args.weights, k=args.k, name=args.name
    )
    fused.to_trec(args.output)
    print(f"fused {len(args.runs)} runs ({args.method}, {args.norm}) into {args.output}", file=sys.stderr)
    return int(ExitCode.OK)
