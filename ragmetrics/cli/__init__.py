"""The `ragmetrics` command line: `main` dispatches to one module per subcommand (retrieval, compare, run)."""

from __future__ import annotations

from ragmetrics.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
