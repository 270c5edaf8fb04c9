"""`ragmetrics label REPORT --metric M`: label a report's samples in the browser, on 127.0.0.1
(ragmetrics.labeling)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragmetrics.errors import InputError
from ragmetrics.options import ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "label",
        help="label a report's samples in the browser; the next run shows the judge's agreement and PPI",
        description="Serves a page on 127.0.0.1 that shows one sample at a time (question, contexts, answer as "
        "the judge saw them) and asks what the judge was asked; the judge's verdict is shown only after you "
        "answer. Samples come in a score-stratified order (any prefix spans the judge's score range); labels "
        "are saved after every answer to the file `human_labels:` reads, and a second session resumes there.",
    )
    parser.add_argument(
        "report",
        type=Path,
        help="a report folder of `ragmetrics run` (or its `latest` link), or a test-set folder of "
        "`ragmetrics testset`",
    )
    parser.add_argument(
        "--metric",
        required=True,
        help="the judge metric to label (e.g. faithfulness); for a test set: 'question' (is each question "
        "sensible and answered by its sources?) or 'qrels' (is each grade right?)",
    )
    parser.add_argument(
        "--run", help="the run whose outputs to label (needed when several runs have the metric)"
    )
    parser.add_argument(
        "--labels",
        type=Path,
        default=None,
        help="labels file to write and resume (.jsonl or .csv; default: human_labels.jsonl, or labels.jsonl "
        "in a test-set folder)",
    )
    parser.add_argument(
        "--target", type=int, help="labels this session aims at (default: 30, or all samples)"
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the labelling order")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.labeling.server import LabelServer
    from ragmetrics.labeling.session import LabelSession
    from ragmetrics.testset.output import is_testset_dir

    if args.target is not None and args.target < 1:
        raise InputError("must be at least 1", field="--target")
    if not 0 <= args.port <= 65535:
        raise InputError(f"a TCP port is 0-65535 (0: any free port), not {args.port}", field="--port")
    testset = is_testset_dir(args.report)
    session: LabelSession
    if testset:
        from ragmetrics.labeling.testset_session import TestsetLabelSession, default_labels_path

        labels = args.labels or default_labels_path(args.report)
        session = TestsetLabelSession(args.report, args.metric, labels, target=args.target, seed=args.seed)
    else:
        labels = args.labels or Path("human_labels.jsonl")
        session = LabelSession(
            args.report, args.metric, labels, run=args.run, target=args.target, seed=args.seed
        )
    try:
        server = LabelServer(session, port=args.port).start()
    except OSError as exc:  # the port is taken, or reserved for root
        raise InputError(
            f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}", field="--port"
        ) from None
    status = session.status()
    print(
        f"ragmetrics label: {status['metric']} of run {status['run']!r}, {status['labelled']} of "
        f"{status['total']} samples labelled; open {server.url}  (Ctrl-C or the page's Finish to stop)",
        file=sys.stderr,
    )
    print(f"  {status['plan']}", file=sys.stderr)
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    plan = session.plan()
    print(f"ragmetrics label: {plan.describe()}", file=sys.stderr)
    if testset:
        from ragmetrics.testset.review import review_testset

        if session.store.path.exists():
            review = review_testset(args.report, session.store.path)
            print(f"ragmetrics label: test set reviewed: {describe_review(review)}", file=sys.stderr)
        return int(ExitCode.OK)
    print(
        f"  labels in {session.store.path}; add to the config:\n    human_labels:\n      path: {session.store.path}",
        file=sys.stderr,
    )
    return int(ExitCode.OK)


def describe_review(review: dict[str, object]) -> str:
    """One line of a test set's review (testset.review)."""
    parts = [
        f"{review['questions_labelled']} questions labelled, {review['questions_rejected']} rejected",
        f"{review['qrels_labelled']} grades checked",
    ]
    for origin in ("source", "judge"):
        figures = review.get(f"agreement_with_{origin}")
        if isinstance(figures, dict) and "accuracy" in figures:
            parts.append(f"people agree with {origin} grades {figures['accuracy']:.0%} of {figures['pairs']}")
    return "; ".join(parts)
