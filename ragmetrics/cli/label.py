"""`ragmetrics label REPORT --metric M`: label a report's samples in the browser, on 127.0.0.1
(ragmetrics.labeling)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ragmetrics.errors import InputError
from ragmetrics.options import ExitCode

if TYPE_CHECKING:
    from ragmetrics.labeling.server import LabelServer, Session
    from ragmetrics.labeling.team import TeamQueue


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
    parser.add_argument(
        "--pairwise",
        metavar="A,B",
        help="side by side: each question with runs A's and B's answers (sides drawn per question, run names "
        "hidden until you answer): which is better? Written to --labels (default preferences.jsonl), which "
        "`pairwise: {preferences: ...}` reads",
    )
    parser.add_argument(
        "--labellers",
        help="several people at once: their names, comma-separated; each gets a link of their own (a team "
        "queue: every item goes to as many of them as --overlap asks)",
    )
    parser.add_argument(
        "--overlap",
        default="1",
        help="team queue: K or K:SHARE, e.g. 2:0.2 = two people for 20%% of the items",
    )
    parser.add_argument(
        "--lease",
        type=float,
        default=600.0,
        help="team queue: seconds an item stays with someone before it is handed on (default 600)",
    )
    parser.add_argument(
        "--adjudicator", help="team queue: a labeller who also decides the items the others disagree on"
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        help="team queue: the chunk corpus with offsets (`ragmetrics chunk split`) the samples' context_ids "
        "come from; each person may then mark the text supporting the answer as spans of its documents, "
        "exported as span qrels beside the labels file",
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the labelling order")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.labeling.session import LabelSession
    from ragmetrics.testset.output import is_testset_dir

    if args.target is not None and args.target < 1:
        raise InputError("must be at least 1", field="--target")
    if not 0 <= args.port <= 65535:
        raise InputError(f"a TCP port is 0-65535 (0: any free port), not {args.port}", field="--port")
    testset = is_testset_dir(args.report)
    if args.pairwise is not None:
        return _serve_pairwise(args)
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
    team = None
    if args.corpus is not None and args.labellers is None:
        raise InputError("spans in a report's contexts are marked in a team queue: give --labellers (one name "
                         "for one person)", field="--corpus")  # fmt: skip
    if args.labellers is not None:
        from ragmetrics.labeling.passages import Passages
        from ragmetrics.labeling.team import TeamQueue, parse_overlap

        if testset:
            raise InputError("a team queue labels a report's samples, not a test set", field="--labellers")
        passages = Passages.of_samples(session.samples, args.corpus) if args.corpus is not None else None
        team = TeamQueue(session, args.labellers.split(","), overlap=parse_overlap(args.overlap), lease_s=args.lease,
                         seed=args.seed, adjudicator=args.adjudicator, items=args.target,
                         passages=passages)  # fmt: skip
    server = _listen(session, args.port, team)
    if team is not None:
        return _serve_team(server, team)
    status = session.status()
    print(
        f"ragmetrics label: {status['metric']} of run {status['run']!r}, {status['labelled']} of "
        f"{status['total']} samples labelled; open {server.url}  (Ctrl-C or the page's Finish to stop)",
        file=sys.stderr,
    )
    print(f"  {status['plan']}", file=sys.stderr)
    _serve_until_finished(server)
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


def _serve_until_finished(server: LabelServer) -> None:
    """Until the page's Finish or Ctrl-C; the server is stopped either way."""
    try:
        server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def _listen(session: Session, port: int, team: TeamQueue | None = None) -> LabelServer:
    """The page's server, started; a port that is taken (or reserved for root) is an InputError."""
    from ragmetrics.labeling.server import LabelServer

    try:
        return LabelServer(session, port=port, team=team).start()
    except OSError as exc:
        raise InputError(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", field="--port"
        ) from None


def _serve_pairwise(args: argparse.Namespace) -> int:
    """`--pairwise A,B`: the side-by-side page for one person."""
    from ragmetrics.labeling.pairwise_session import PairwiseSession

    runs = [r.strip() for r in args.pairwise.split(",")]
    if len(runs) != 2 or not all(runs):
        raise InputError(f"expected two runs A,B, got {args.pairwise!r}", field="--pairwise")
    session = PairwiseSession(args.report, (runs[0], runs[1]), args.labels or Path("preferences.jsonl"),
                              target=args.target, seed=args.seed)  # fmt: skip
    server = _listen(session, args.port)
    print(f"ragmetrics label: {session.run}, {session.plan().describe()}; open {server.url}  (Ctrl-C or the "
          "page's Finish to stop)", file=sys.stderr)  # fmt: skip
    _serve_until_finished(server)
    print(f"ragmetrics label: {session.plan().describe()}; preferences in {session.store.path}; add to the "
          f"config:\n    pairwise:\n      preferences: {session.store.path}", file=sys.stderr)  # fmt: skip
    return int(ExitCode.OK)


def _serve_team(server: LabelServer, team: TeamQueue) -> int:
    """Serve a team queue until every item has its labels (or Ctrl-C); one link per labeller."""
    import time

    queue = team.status(team.labellers[0])["queue"]
    print(f"ragmetrics label: a team queue of {len(team.order)} items, {queue['labels_needed']} labels "
          f"({queue['labels_given']} given); one link per person (keep them private):", file=sys.stderr)  # fmt: skip
    if team.passages is not None:
        shown = sum(len(team.session.samples[s].contexts or []) for s in team.order)
        selectable = sum(p is not None for s in team.order for p in (team.passages.of(s) or ("", []))[1])
        print(f"  supporting spans can be marked in {selectable} of the {shown} contexts shown (the others are "
              "not in --corpus with the same text)", file=sys.stderr)  # fmt: skip
    for name in team.labellers:
        print(f"  {name}: {team.link(server.url, name)}", file=sys.stderr)
    try:
        while not team.complete():
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    queue = team.status(team.labellers[0])["queue"]
    per = ", ".join(f"{name} {count}" for name, count in queue["per_labeller"].items())
    print(f"ragmetrics label: {queue['labels_given']} of {queue['labels_needed']} labels given ({per}); "
          f"labels in {team.session.store.path}", file=sys.stderr)  # fmt: skip
    if team.spans is not None:
        from ragmetrics.labeling.team_spans import export_paths

        qrels, agreement = export_paths(team.session.store.path)
        summary = team.spans.export(qrels, agreement, team.adjudicator)
        figures = summary["agreement"]
        iou = "" if figures["mean_iou"] is None else (
            f"; agreement on them: character IoU {figures['mean_iou']:.2f} over {figures['questions']} questions")
        where = f"span qrels in {qrels} (`ragmetrics chunk qrels --spans` reads them)" if summary["spans"] else "no spans"
        print(f"ragmetrics label: spans marked: {summary['spans']}, {where}{iou}; details in {agreement}",
              file=sys.stderr)  # fmt: skip
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
