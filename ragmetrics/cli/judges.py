"""`ragmetrics judges LABELS --samples QA --candidates FILE -o DIR`: which judge to pay for (docs/judges.md)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError, InputError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "judges",
        help="score candidate judges and panels on your labels; name the cheapest not worse than the best",
        description="Score every candidate judge and panel on the team's labels (agreement with intervals, "
        "cost, latency), name the cheapest candidate not worse than the best by a paired non-inferiority "
        "test, and write a table, a cost-against-agreement chart and a config snippet for it.",
    )
    parser.add_argument("labels", type=Path, help="labels file: sample_id, metric, label (CSV, JSONL, Parquet)")
    parser.add_argument("--samples", type=Path, required=True, help="the labelled samples (a QA file)")
    parser.add_argument("--candidates", type=Path, required=True, help="YAML: {judge: {...}, candidates: [...]}")
    parser.add_argument("-o", "--out", type=Path, required=True, help="output folder")
    parser.add_argument("--metric", action="append", help="judge metric(s) to score on (default: every labelled)")
    parser.add_argument("--run", help="use the labels of this run (labels with a `run` column)")
    parser.add_argument("--scale", type=float, help="labels are whole-number grades 0..SCALE")
    parser.add_argument("--margin", type=float, default=0.05,
                        help="non-inferiority margin in accuracy (default 0.05)")  # fmt: skip
    parser.add_argument("--alpha", type=float, default=0.05, help="one-sided level of the test (default 0.05)")
    parser.add_argument("--threshold", type=float, default=0.5, help="a score at least this is a yes (default 0.5)")
    parser.add_argument("--folds", type=int, default=5, help="cross-fitting folds of learned panels (default 5)")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-plot", action="store_true", help="skip the chart (no matplotlib needed)")
    parser.set_defaults(handler=_handle)


def _key(loc: tuple[int | str, ...]) -> str:
    parts = [str(p) for i, p in enumerate(loc) if not (i == 2 and loc[0] == "candidates" and p in ("judge", "panel")
                                                      and len(loc) > 3)]  # fmt: skip
    return ".".join(parts)


def load_candidates(path: Path, named: Sequence[str] = ()) -> tuple[Any, list[Any]]:
    """The candidates file and the metrics of the team's own it defines (`judge.metric_files`,
    `judge.custom_metrics`, as in a night's config) or names (`judge.metrics`, and `named`: the metrics to
    score) that a night resolves by name (a shipped conversation rubric, an installed package's metric), every
    problem a ConfigError naming the file and the key."""
    from pydantic import ValidationError

    from ragmetrics._yaml import read_yaml_file
    from ragmetrics.judge.panel_config import CandidatesFile
    from ragmetrics.nightly.candidate_metrics import load_own_metrics

    data, own = load_own_metrics(read_yaml_file(path, what="candidates"), path, named)
    try:
        return CandidatesFile.model_validate(data), own
    except ValidationError as exc:
        err = exc.errors()[0]
        key = _key(tuple(err["loc"]))
        message = str(err["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{path}: {key + ': ' if key else ''}{message}") from None


def _check_numbers(args: argparse.Namespace) -> None:
    for name in ("margin", "alpha", "threshold"):
        value = getattr(args, name)
        if not (math.isfinite(value) and 0 < value < 1):
            raise InputError(f"--{name} must be in (0, 1), got {value}", field=f"--{name}")
    if args.folds < 2:
        raise InputError(f"--folds must be at least 2, got {args.folds}", field="--folds")
    if args.resamples < 100:
        raise InputError(f"--resamples must be at least 100, got {args.resamples}", field="--resamples")


def _handle(args: argparse.Namespace) -> int:
    from ragmetrics._async import run_sync
    from ragmetrics.nightly.dataset import read_qa
    from ragmetrics.panels.report import write_outputs
    from ragmetrics.panels.run import judge_candidates
    from ragmetrics.trust.labels import load_labels

    _check_numbers(args)
    human = load_labels(args.labels, scale=args.scale)
    # the metrics to score resolve as a night's judge.metrics would (a shipped rubric, a package's metric)
    candidates, own = load_candidates(args.candidates, args.metric or human.metrics())
    dataset = read_qa(args.samples)
    # a sample carries its other columns, as in a night: a rubric of the team's may read them
    samples = [s.model_copy(update={"extra": dict(dataset.extras[s.id])})
               if s.extra is None and dataset.extras.get(s.id) else s for s in dataset]  # fmt: skip
    outcome = run_sync(
        judge_candidates(
            samples,
            human,
            candidates,
            metrics=args.metric,
            run=args.run,
            threshold=args.threshold,
            margin=args.margin,
            alpha=args.alpha,
            folds=args.folds,
            resamples=args.resamples,
            seed=args.seed,
            source=str(args.candidates),
            own_metrics=own,
        )
    )
    table = write_outputs(outcome, args.out)
    if not args.no_plot:
        from ragmetrics.render.judges_plot import JudgePoint, save_cost_agreement_plot

        c = outcome.choice
        points = [JudgePoint(r.name, r.cost_usd, r.accuracy.value, r.accuracy.low, r.accuracy.high,
                             r.name == c.best, r.name == c.chosen) for r in c.rows]  # fmt: skip
        save_cost_agreement_plot(points, "Judges: cost against agreement with people",
                                 args.out / "cost_vs_agreement.png")  # fmt: skip
    print(table)
    print(json.dumps({"chosen": outcome.choice.chosen, "best": outcome.choice.best}))
    return 0
