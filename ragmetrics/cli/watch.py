"""`ragmetrics watch CONFIG [--once]`: judge sampled live traces as they arrive (docs/online.md)."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from ragmetrics.options import ExitCode

if TYPE_CHECKING:
    from ragmetrics.live.config import WatchConfig


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
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--once",
        action="store_true",
        help="one poll for cron: read what is new, judge, close the windows that ended, exit: 1 when an alert "
        "fired that no earlier --once reported (this run's, or a long-running watch's), 3 when sampled traces "
        "wait for a judge that failed (kept for the next run), else 0. With source: receiver it reads the spool "
        "only: run --receive-only beside it so exporters have a server between runs",
    )
    mode.add_argument(
        "--receive-only",
        action="store_true",
        help="source: receiver only: hold the port and spool every accepted export until stopped (SIGTERM), "
        "never judge; `--once` from cron reads the spool",
    )
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.live import Watcher, load_watch_config

    config = load_watch_config(args.config)
    if args.receive_only:
        return _receive_only(config)
    if args.once:
        return _once(config)
    watcher = Watcher(config)
    stopping = _stop_on_signals()
    watcher.run(stop=lambda: stopping[0])
    return int(ExitCode.OK)


def _stop_on_signals() -> list[bool]:
    """A flag set by SIGTERM or SIGINT (a list, so the handler can set it)."""
    stopping = [False]

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping[0] = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return stopping


def _once(config: WatchConfig) -> int:
    """One poll; exit 1 while an alert is unreported, whichever process fired it (said here, then reported)."""
    from ragmetrics.live import Watcher

    watcher = Watcher(config, listen=False)
    try:
        if config.source.kind == "receiver" and not _listening(config.source.listen):
            watcher.say(
                f"ragmetrics watch: nothing listens at {config.source.listen}: exporters sending between runs get "
                "connection refused and drop their spans; run `ragmetrics watch CONFIG --receive-only` beside cron"
            )
        watcher.start()
        result = watcher.poll(final=False)
        unseen = watcher.store.unseen_alerts()
        for _, text in unseen:
            if text not in result.alerts:
                watcher.say(f"ragmetrics watch: {text}")
        watcher.store.mark_seen(key for key, _ in unseen)
    finally:
        watcher.close()
    if unseen or result.alerts:
        return int(ExitCode.REGRESSION)
    return int(ExitCode.INCOMPLETE if result.waiting else ExitCode.OK)


def _listening(listen: str) -> bool:
    import socket

    host, _, port = listen.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=1.0):
            return True
    except OSError:
        return False


def _receive_only(config: WatchConfig) -> int:
    from ragmetrics.errors import ConfigError
    from ragmetrics.live.receive_only import ReceiveOnly

    if config.source.kind != "receiver":
        raise ConfigError(
            f"--receive-only needs source: {{kind: receiver}}; this config's source is {config.source.kind!r}"
        )
    import sys

    stopping = _stop_on_signals()
    ReceiveOnly(config, say=lambda m: print(m, file=sys.stderr, flush=True)).run(lambda: stopping[0])
    return int(ExitCode.OK)
