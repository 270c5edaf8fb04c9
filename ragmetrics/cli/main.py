"""The `ragmetrics` command. Exit codes: 0 ok, 1 regression found, 2 usage, input or config error."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from ragmetrics._version import __version__
from ragmetrics.errors import ConfigError, InputError

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2

# Subcommand modules; each defines register(subparsers) that sets `handler` via set_defaults.
_COMMANDS = (
    "retrieval",
    "compare",
    "fuse",
    "fill_qrels",
    "run",
    "label",
    "check_metric",
    "history",
    "power",
    "testset",
    "bless",
    "score",
    "align",
    "watch",
    "attack",
    "summary",
    "sweep",
    "utility",
    "validity",
    "judges",
    "chunk",
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command's parser; with `only` (a subcommand's name), just that subcommand's module is imported, so a
    command starts without loading every other command's dependencies."""
    parser = argparse.ArgumentParser(
        prog="ragmetrics",
        description="Retrieval and judge metrics for RAG pipelines, with significance tests.",
    )
    parser.add_argument("--version", action="version", version=f"ragmetrics {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _COMMANDS if only is None else (only,):
        module = importlib.import_module(f"ragmetrics.cli.{name}")
        module.register(sub)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand module `argv` names (its first argument), or None (help, a typo: every one is loaded)."""
    first = argv[0] if argv else ""
    name = first.replace("-", "_")
    return name if name in _COMMANDS and not first.startswith("-") else None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(arguments))
    args = parser.parse_args(arguments)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except (InputError, ConfigError) as exc:
        print(f"ragmetrics: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        # A file that cannot be read or written is an input error; uncaught it would exit 1, which means
        # "regression" to a CI job.
        print(f"ragmetrics: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(
            "ragmetrics: interrupted; run the same command again to resume "
            "(judge verdicts already had are cached and not asked again)",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
