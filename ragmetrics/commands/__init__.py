"""Subcommands of the `ragmetrics` CLI; each module offers `register(subparsers)` and a handler returning an exit code."""
