"""`ragmetrics watch CONFIG [--once]`: judge sampled live traces as they arrive (docs/online.md)."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from types import FrameType

from ragmetrics.options import ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "watch",
        help="judge sampled live traces on a budget, in windows, with alerts",
        description="Reads new traces from the config's source (a growing OTLP JSON file, or an OTLP/HTTP receiver "
        "of its own), judges a deterministic sample of them within a budget of judge calls per window, keeps "
        "every score in OUTPUT/live.sqlite, closes each window into OUTPUT/<window>/report.json and "
        "OUTPUT/history.jsonl, and alerts (stderr, webhook) once per episode when a window is significantly "
        "worse than the baseline window. Restarts resume from the source's cursor; no trace is judged twice.",
    )
    parser.add_argument("config", type=Path, help="the watch config (YAML)")
    parser.add_argument(
        "--once",
        action="store_true",
        help="one poll for cron: read what is new, judge, close the windows that ended, exit: 1 when an alert "
        "fired, 3 when sampled traces wait for a judge that failed (kept for the next run), else 0",
    )
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.live import Watcher, load_watch_config

    config = load_watch_config(args.config)
    watcher = Watcher(config)
    if args.once:
        try:
            watcher.start()
            result = watcher.poll(final=False)
        finally:
            watcher.close()
        if result.alerts:
            return int(ExitCode.REGRESSION)
        return int(ExitCode.INCOMPLETE if result.waiting else ExitCode.OK)
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    watcher.run(stop=lambda: stopping)
    return int(ExitCode.OK)
