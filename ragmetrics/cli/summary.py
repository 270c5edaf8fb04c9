"""`ragmetrics summary REPORT`: a night as Markdown for a pull request comment or a CI job summary
(ragmetrics.render.summary)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragmetrics.errors import InputError
from ragmetrics.options import ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "summary",
        help="a night as a short Markdown summary for a pull request comment or a CI job summary",
        description="Writes a self-contained Markdown summary of a night (the gate's verdict, the verdict "
        "lines, what dropped with its worst questions, the means with intervals, links to the artifacts), "
        "sized to fit a PR comment. It starts with <!-- ragmetrics-summary --> so a workflow can update its one "
        "comment (examples/ci/). Exit 0; the night's own exit code is the gate's.",
    )
    parser.add_argument("report", type=Path, help="a night's folder, its `latest` link, or a report.json")
    parser.add_argument("--format", choices=["github", "gitlab", "markdown"], default="markdown")
    parser.add_argument("--artifacts-url", help="where the night's folder is published (links to its files)")
    parser.add_argument("--max-chars", type=int, default=60_000, help="at most this long (GitHub: 65,536)")
    parser.add_argument("-o", "--output", type=Path, help="write here (default: standard output)")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.labeling.session import report_json
    from ragmetrics.nightly.gate import load_baseline
    from ragmetrics.render.summary import summary_markdown

    if args.max_chars < 500:
        raise InputError(f"--max-chars must be at least 500, got {args.max_chars}", field="--max-chars")
    report = load_baseline(report_json(args.report))
    text = summary_markdown(
        report, fmt=args.format, artifacts_url=args.artifacts_url, max_chars=args.max_chars
    )
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return int(ExitCode.OK)
