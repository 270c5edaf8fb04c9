"""`ragmetrics history DIR`: the nights under an output root over time (ragmetrics.history): drift, what
changed, and history.html."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragmetrics.errors import InputError
from ragmetrics.options import ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "history",
        help="the nights under an output folder over time: drift, what changed, history.html",
        description="Reads history.jsonl (and any dated folder's report.json it lacks) under DIR, the output.dir "
        "of a nightly config, and prints per run and metric the latest mean, the reference (the pinned "
        "baseline, or the first night of the window), the Mann-Kendall trend over the last N comparable nights "
        "corrected across series, and what changed between nights; writes history.html. Exit 1 with "
        "--fail-on-drift when a series drifts.",
    )
    parser.add_argument("dir", type=Path, help="the output root holding the dated folders")
    parser.add_argument("--nights", type=int, default=7, help="nights in the trend test (at least 5)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level after correction")
    parser.add_argument(
        "--correction",
        default="holm",
        choices=["holm", "bonferroni", "none"],
        help="correction of the drift trend tests across the run x metric series (default: holm)",
    )
    parser.add_argument("--out", type=Path, help="where to write the page (default DIR/history.html)")
    parser.add_argument("--no-page", action="store_true", help="print only; do not write history.html")
    parser.add_argument("--fail-on-drift", action="store_true", help="exit 1 when a series drifts")
    parser.add_argument(
        "--to-mlflow",
        metavar="TRACKING_URI",
        help="also log every night under DIR to this MLflow tracking server (idempotent: nights already there "
        "are not duplicated; the backlog of nights a tracker missed is cleared); docs/mlflow.md",
    )
    parser.add_argument(
        "--experiment",
        help="with --to-mlflow: the experiment (default: each night's own, as its config says: "
        "output.mlflow.experiment, else the config's name)",
    )
    parser.add_argument(
        "--mlflow-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="with --to-mlflow: each request to the tracker gives up after this long (default 30)",
    )
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.history.analysis import analyse, pinned_baseline
    from ragmetrics.history.changes import changes_between
    from ragmetrics.history.page import write_page
    from ragmetrics.history.store import HISTORY_PAGE, load_history
    from ragmetrics.history.trend import MIN_NIGHTS
    from ragmetrics.render.safe_text import visible_controls

    if not args.dir.is_dir():
        raise InputError("not a folder", source=str(args.dir))
    if args.nights < MIN_NIGHTS:
        raise InputError(f"--nights must be at least {MIN_NIGHTS}, got {args.nights}")
    if not 0 < args.alpha < 1:
        raise InputError(f"--alpha must be in (0, 1), got {args.alpha}")
    if args.to_mlflow is not None:
        _to_mlflow(args)
    history = load_history(args.dir)
    for problem in history.problems:
        print(f"warning: {visible_controls(problem)}")
    records = history.records
    if not records:
        raise InputError("no night recorded here (no history.jsonl and no dated folder with a report.json)",
                         source=str(args.dir))  # fmt: skip
    notes = changes_between(records)
    baseline = pinned_baseline(records)
    drifts = analyse(
        records, notes, nights=args.nights, alpha=args.alpha, correction=args.correction, baseline=baseline
    )
    first, last = records[0].created_at, records[-1].created_at
    print(
        f"{len(records)} nights, {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC; pinned baseline: "
        + (records[baseline].folder if baseline is not None else "none among these nights")
    )
    from ragmetrics._format import format_p
    from ragmetrics.render._text import Grid, aligned, to_terminal

    grid = Grid(
        headers=["run", "metric", "latest", "reference", "Δ", "nights", "slope/night", "p (corr.)", "drift"],
        align=[*aligned(2, 6), "left"],
    )
    grid.title = f"Trend over the last {args.nights} comparable nights ({args.correction} correction)"
    grid.styles = []
    for d in drifts:
        delta = d.delta
        grid.rows.append(
            [
                d.run,
                d.metric,
                "n/a" if d.latest_mean is None else f"{d.latest_mean:.4f}",
                "n/a"
                if d.reference_mean is None
                else f"{d.reference_mean:.4f}" + (" (baseline)" if d.reference_is_baseline else ""),
                "n/a" if delta is None else f"{delta:+.4f}",
                str(len(d.window)),
                "" if d.test is None else f"{d.test.slope:+.4f}",
                "" if d.p_corrected is None else format_p(d.p_corrected),
                "DRIFT" if d.flagged else d.note,
            ]
        )
        grid.styles.append(["red" if d.flagged else None] * len(grid.headers))
    print(to_terminal(grid).rstrip())
    if notes:
        print("What changed:")
        for k, a in enumerate(notes, start=1):
            print(
                visible_controls(f"  {k}. {records[a.night].created_at:%Y-%m-%d %H:%M} ({a.kind}): {a.text}")
            )
    if not args.no_page:
        page = write_page(
            args.out or args.dir / HISTORY_PAGE,
            history,
            nights=args.nights,
            alpha=args.alpha,
            correction=args.correction,
        )
        print(f"history: {page}")
    if args.fail_on_drift and any(d.flagged for d in drifts):
        return int(ExitCode.REGRESSION)
    return int(ExitCode.OK)


def _to_mlflow(args: argparse.Namespace) -> None:
    """Every dated folder with a report.json under DIR, to MLflow, each night completed where an earlier try
    left it short; the backlog cleared of what was logged. Once the tracker fails, the nights after it are
    not tried (they are queued, and said)."""
    import importlib.util

    if importlib.util.find_spec("mlflow") is None:
        raise InputError(
            "the mlflow package is not installed: pip install 'ragmetrics[mlflow]'", field="--to-mlflow"
        )
    if not args.mlflow_timeout > 0:
        raise InputError(f"--mlflow-timeout must be positive, got {args.mlflow_timeout}")
    from ragmetrics.mlflow.nights import MlflowTarget, TrackerDown, log_night, read_backlog, write_backlog
    from ragmetrics.mlflow.tracker import shown_uri

    folders = sorted(p.parent for p in args.dir.glob("*/report.json") if not p.parent.is_symlink())
    target = MlflowTarget(args.to_mlflow, args.experiment, args.mlflow_timeout)  # None: each night's config's
    experiments: list[str] = []
    failed: list[str] = []
    down: str | None = None
    for folder in folders:
        if down is not None:
            failed.append(folder.name)
            continue
        try:
            logged = log_night(folder, target)
        except InputError as exc:  # said; the other nights go on
            failed.append(folder.name)
            print(f"mlflow: {folder.name}: {exc}")
            continue
        except TrackerDown as exc:
            failed.append(folder.name)
            print(f"mlflow: {folder.name}: {exc}")
            down = str(exc)
            continue
        if logged.experiment not in experiments:
            experiments.append(logged.experiment)
    write_backlog(args.dir, [n for n in read_backlog(args.dir) if n in failed] + failed)
    named = ", ".join(json.dumps(e, ensure_ascii=False) for e in experiments)
    print(f"mlflow: {len(folders) - len(failed)} of {len(folders)} nights logged to {shown_uri(args.to_mlflow)}"
          + (f", experiment {named}" if experiments else "")
          + (f"; {len(failed)} queued" + (" (the tracker failed; the nights after it were not tried)" if down else "")
             if failed else ""))  # fmt: skip
