"""`ragmetrics run CONFIG`: the nightly evaluation. Exit: 0 ok, 1 regression, 2 usage/input/config error,
3 incomplete night, 130 stop."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run an evaluation config (dataset, runs, metrics, comparison, artifacts, regression gate)",
        description=(
            "Score every run of a config, compare them, write the artifacts into a dated folder and, with a "
            "baseline, fail on a significant drop. Exit codes: 0 ok, 1 regression, 2 usage, input or config "
            "error, 3 incomplete (more failed scores than max_failure_rate allows), 4 not comparable with the "
            "baseline (judge, prompts, questions or judgments changed since it), 130 interrupted by SIGINT or "
            "SIGTERM (rerun to resume: stored verdicts are not asked again)."
        ),
    )
    parser.add_argument(
        "config", type=Path, metavar="CONFIG", help="a YAML config, e.g. configs/nightly.yaml"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="PATH",
        help="an earlier report.json to gate on (overrides the config)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        metavar="DIR",
        help="where the dated artifact folder goes (overrides output.dir)",
    )
    parser.add_argument(
        "--engine",
        choices=("local", "ray"),
        help="where the work runs (overrides engine.kind; ray needs pip install '.[ray]' in a clone)",
    )
    parser.add_argument(
        "--refresh-pipeline",
        action="store_true",
        help="call the pipeline and generator again for every question instead of reusing cached outputs",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the calls, tokens, cost and time the run would take; call nothing, write nothing",
    )
    parser.add_argument(
        "--adaptive",
        action="store_true",
        help="judge until every decision is settled (anytime-valid), not every question: judge.adaptive with "
        "its defaults unless the config sets it (docs/adaptive.md)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(handler=_run)


def _dry_run(args: argparse.Namespace) -> int:
    from ragmetrics.nightly.config_load import load_config
    from ragmetrics.nightly.estimate import estimate_night
    from ragmetrics.nightly.pipeline import own_metrics
    from ragmetrics.render.safe_text import visible_controls
    from ragmetrics.render.work import estimate_lines

    config = load_config(args.config)
    with own_metrics(config):
        work = estimate_night(config, output_dir=args.output, refresh_pipeline=args.refresh_pipeline)
    print("\n".join(visible_controls(line) for line in estimate_lines(work, config.name)))
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.dry_run:
        return _dry_run(args)
    from ragmetrics.nightly.artifacts import partial_metrics_table
    from ragmetrics.nightly.pipeline import run_pipeline
    from ragmetrics.render.tables import format_report

    with _terminate_as_interrupt():
        outcome = run_pipeline(
            args.config,
            baseline=args.baseline,
            output_dir=args.output,
            progress=False if args.no_progress else None,
            engine=args.engine,
            refresh_pipeline=args.refresh_pipeline,
            adaptive=args.adaptive,
        )
    from ragmetrics.render.safe_text import visible_controls

    def show(text: str) -> None:
        """Plain lines (not rich tables) that may carry run names or ids: control characters made visible."""
        print("\n".join(visible_controls(line) for line in text.split("\n")))

    from ragmetrics.render.qrels_note import qrels_lines, report_qrels, verdict_warnings
    from ragmetrics.render.verdict import verdict_lines

    verdict = verdict_lines(outcome.report)
    # Runs the pooled qrels may favour are said with the verdict, before any table, never under it.
    warnings = verdict_warnings(report_qrels(outcome.report)) if verdict else []
    if verdict:  # the answer first; the tables below are the evidence
        show("Verdict:\n" + "\n".join(f"  {line}" for line in [*verdict, *warnings]) + "\n")
    print(format_report(outcome.report, "table").rstrip())
    partial = partial_metrics_table(outcome.report)
    if partial:  # the tables above cover compared metrics only; these means would otherwise go unseen
        print("\nMetrics not every run has (mean per run; not compared):")
        show("\n".join(partial))
    from ragmetrics.render.sufficiency import report_sufficiency, sufficiency_terminal

    sufficiency = report_sufficiency(outcome.report)
    if sufficiency is not None:
        show("\n" + sufficiency_terminal(sufficiency))
    from ragmetrics.render.judge_note import judge_note
    from ragmetrics.render.trust import trust_lines

    provenance = qrels_lines(report_qrels(outcome.report), warnings=not warnings)
    if provenance:
        show("\n" + "\n".join(provenance))

    nightly = outcome.report.metadata.nightly
    metrics = dict.fromkeys(m for run in outcome.report.runs for m in run.metrics)
    note = judge_note(nightly.judge if nightly is not None else None, metrics)
    if note:
        print(f"\n{note}")

    trust = trust_lines(outcome.report)
    if trust:
        print("\nHow far to trust the judge (docs/trust.md):")
        show("\n".join(f"  {line}" for line in trust))
    disagreements = [p for p in outcome.report.metadata.power if p.why is not None]
    if disagreements:
        print("\nWhere a CI and its test disagree (ragmetrics power REPORT for every pair):")
        show("\n".join(f"  {p.candidate} vs {p.baseline} on {p.metric}: {p.why}" for p in disagreements))
    work = nightly.work if nightly is not None else None
    if work is not None and work.actual is not None:
        e, a = work.estimate, work.actual
        print(
            f"judge requests: {e.judge_calls + e.embedding_calls:,} estimated, {a.judge_calls:,} made; "
            f"pipeline and generator calls: {a.pipeline_calls + a.generator_calls:,}"
            + (f"; cost ${a.cost_usd:,.4f}" if a.cost_usd is not None else "")
        )
    if outcome.folder is not None:
        print(f"artifacts: {outcome.folder}")
    if outcome.history_page is not None:
        print(f"history: {outcome.history_page}")
    if outcome.gate is not None:
        from ragmetrics.render._text import to_terminal
        from ragmetrics.render.baseline import baseline_grid, baseline_rows

        rows = baseline_rows(outcome.report, outcome.gate)
        if rows:
            print(to_terminal(baseline_grid(rows, outcome.gate)).rstrip())
        show(outcome.gate.describe())
    if outcome.incomplete:
        import sys

        print(
            f"ragmetrics: the night is INCOMPLETE (exit 3): {len(outcome.incomplete)} run/metric pairs failed on "
            "more of their samples than max_failure_rate allows; causes above and in report.json failures",
            file=sys.stderr,
        )
    elif outcome.gate is not None and outcome.gate.refused_stale and not outcome.gate.failed:
        import sys

        print(
            f"ragmetrics: the night is INCOMPLETE (exit 3): {len(outcome.gate.from_cache)} runs were scored on "
            "outputs from pipeline_cache alone and baseline.require_fresh is set; tonight's build was not called "
            "(--refresh-pipeline calls it; keep pipeline_cache out of CI caches)",
            file=sys.stderr,
        )
    elif outcome.gate is not None and outcome.gate.untrusted and not outcome.gate.failed:
        import sys

        print(
            f"ragmetrics: JUDGE BELOW THE AGREEMENT FLOOR (exit 5): {len(outcome.gate.untrusted)} run/metric pairs "
            "neither pass nor fail; the judge's agreement with your labels is listed above",
            file=sys.stderr,
        )
    elif outcome.gate is not None and outcome.gate.not_comparable and not outcome.gate.failed:
        import sys

        print(
            f"ragmetrics: NOT COMPARABLE with the baseline (exit 4): {len(outcome.gate.not_comparable)} run/metric "
            "pairs were judged differently or on other data; what changed is listed above",
            file=sys.stderr,
        )
    return outcome.exit_code


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # Passed on as SIGINT where Python handles SIGINT: inside the judge's event loop asyncio turns it into a
    # clean cancellation, while a KeyboardInterrupt thrown into whichever task is running escapes as "Task
    # exception was never retrieved" with a traceback. Where SIGINT is ignored (a job started with `&` by a
    # script), raising it would ignore SIGTERM too: the running loop's main task is cancelled instead, the
    # same clean stop (ragmetrics._async.request_stop), and outside a loop the exception is raised here.
    from ragmetrics._async import request_stop

    if callable(signal.getsignal(signal.SIGINT)):
        signal.raise_signal(signal.SIGINT)
    elif not request_stop():
        raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (what cron, CI and container runtimes send on a timeout) stops a run exactly as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
