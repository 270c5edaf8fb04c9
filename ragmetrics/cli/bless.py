"""`ragmetrics bless NIGHT`: pin a night as the baseline the gate compares with (ragmetrics.nightly.artifacts)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ragmetrics.options import ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "bless",
        help="pin a night (a dated report folder, or latest) as the baseline the gate compares with",
        description="Makes OUTPUT_ROOT/baseline a link to the night, so the next `ragmetrics run` of a config "
        "writing there gates against it (when the config sets no baseline.path), its history marks it as the "
        "pinned baseline, and pruning (output.keep) never deletes it. Pin on purpose, after a change you "
        "accept: comparing each night with the last lets quality slide a little every night without failing.",
    )
    parser.add_argument("night", type=Path, help="a night's folder, e.g. ragmetrics-out/nightly/latest")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.nightly.artifacts import pin_baseline

    night: Path = args.night
    root = night.resolve().parent
    link = pin_baseline(root, night)
    print(f"pinned {night.resolve().name} as the baseline: {link} -> {night.resolve().name}")
    print("the next night of a config writing to this folder gates against it (unless it sets baseline.path)")
    return int(ExitCode.OK)
