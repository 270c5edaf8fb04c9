"""`ragmetrics align LABELS --metric M --samples NIGHT|QA_FILE -o DIR`: fit a judge metric to people's labels."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Literal

from ragmetrics.cli._common import add_judge_arguments
from ragmetrics.errors import InputError
from ragmetrics.options import ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "align",
        help="align a judge metric to your people's labels, measured on labels it never saw",
        description="Reads LABELS (the labelling page's file, or a CSV/JSONL/Parquet of sample_id, metric, label "
        "and optionally run) and the samples they label (a night's report folder, whose judged_samples.jsonl "
        "holds what the judge saw, or a QA file). The labels are split into folds stratified by label; each "
        "step (LLM judge: few-shot examples, refined guidance, calibration; local judge: its evidence head "
        "refit, calibration) is fitted on training folds and kept only when its held-out agreement beats the "
        "judge as it was beyond the bootstrap noise. DIR gets the aligned metric (aligned.json; use it with "
        "`judge: {aligned: DIR}`) when a step was kept, and a report in JSON, Markdown and HTML always "
        "(docs/trust.md).",
    )
    parser.add_argument(
        "labels",
        type=Path,
        nargs="?",
        help="the labels file (default with --config: its human_labels, a file or dataset columns)",
    )
    parser.add_argument(
        "-m", "--metric", nargs="+", required=True, dest="metrics", help="judge metric(s) to align"
    )
    parser.add_argument(
        "--samples",
        type=Path,
        help="a night's report folder (or its report.json) or a QA file (default with --config: the config's "
        "latest night when it kept judged samples, else its dataset)",
    )
    parser.add_argument(
        "--run", help="the run whose outputs were labelled (a night folder with several runs)"
    )
    parser.add_argument("-o", "--out", type=Path, required=True, help="output folder")
    parser.add_argument("--config", type=Path, help="take the judge (and your own metrics) from this config")
    parser.add_argument(
        "--judge", choices=["local", "openai"], help="judge backend (default: local unless --base-url)"
    )
    add_judge_arguments(parser, base_url_help="OpenAI-compatible endpoint for an LLM judge")
    parser.add_argument("--folds", type=int, default=5, help="folds, stratified by label (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--statistic",
        default="balanced_accuracy",
        choices=["balanced_accuracy", "accuracy", "kappa", "roc_auc", "spearman", "kendall"],
        help="the held-out statistic that decides whether a step is kept",
    )
    parser.add_argument(
        "--steps", nargs="+", choices=["few_shot", "instructions", "head", "calibration"], help="steps to try"
    )
    parser.add_argument("--scale", type=float, help="labels are whole-number grades 0..SCALE")
    parser.add_argument("--budget", type=int, help="at most this many judge calls (one sample scored once)")
    parser.add_argument(
        "--dry-run", action="store_true", help="print how many judge calls each step may make, and stop"
    )
    parser.set_defaults(handler=run_command)


def _samples(path: Path, run: str | None) -> tuple[list[object], str | None]:
    from ragmetrics.nightly.judged_samples import FILENAME, read_judged_samples

    folder = path if path.is_dir() else path.parent
    if (path.is_dir() and (folder / FILENAME).exists()) or path.name in ("report.json", FILENAME):
        runs = read_judged_samples(folder / FILENAME)
        if run is None:
            if len(runs) != 1:
                raise InputError(
                    f"the night has runs {', '.join(runs)}: say which one was labelled with --run",
                    field="--run",
                )
            run = next(iter(runs))
        if run not in runs:
            raise InputError(
                f"no run {run!r} in {folder / FILENAME} (runs: {', '.join(runs)})", field="--run"
            )
        return list(runs[run].values()), run
    if path.is_dir() and (folder / "report.json").exists():
        raise InputError(f"{folder} has no {FILENAME}: run the config again with a judge", source=str(folder))
    from ragmetrics.nightly.dataset import read_qa

    return list(read_qa(path)), run


def _labels_and_samples(args: argparse.Namespace, config: Any) -> tuple[Any, list[object], str | None]:
    """The labels (LABELS, or the config's human_labels) and the samples they label (--samples, or the
    config's latest night, or its dataset)."""
    from ragmetrics.nightly.judged_samples import FILENAME
    from ragmetrics.trust.labels import labels_from_columns, load_labels

    if args.labels is None and (config is None or config.human_labels is None):
        raise InputError("give the labels file, or --config with a human_labels section", field="labels")
    samples_path = args.samples
    if samples_path is None:
        if config is None:
            raise InputError("give --samples: a night's report folder or a QA file", field="--samples")
        latest = config.output.dir / "latest"
        samples_path = latest if (latest / FILENAME).exists() else None
    dataset = None
    if samples_path is None or (args.labels is None and config.human_labels.columns is not None):
        from ragmetrics.nightly.load import load_dataset

        columns = sorted(set((config.human_labels.columns or {}).values())) if config.human_labels else []
        dataset = load_dataset(config.dataset, progress=False, keep=columns)
    if args.labels is not None:
        labels = load_labels(args.labels, scale=args.scale)
    elif config.human_labels.columns is not None:
        assert dataset is not None
        scale = args.scale if args.scale is not None else config.human_labels.scale
        labels = labels_from_columns(
            dataset.kept, config.human_labels.columns, source=dataset.source, scale=scale
        )
    else:
        scale = args.scale if args.scale is not None else config.human_labels.scale
        labels = load_labels(config.human_labels.path, scale=scale)
    if samples_path is None:
        assert dataset is not None
        return labels, list(dataset), args.run
    samples, run = _samples(samples_path, args.run)
    return labels, samples, run


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.alignment import align_judge, plan_alignment
    from ragmetrics.alignment.aligner import LLM_STEPS, LOCAL_STEPS
    from ragmetrics.alignment.labelled import join_labels
    from ragmetrics.judge.base import RagSample
    from ragmetrics.judge.select import resolve_backend
    from ragmetrics.judge.settings import JudgeSettings

    config = None
    if args.config is not None:
        from ragmetrics.nightly.config_load import load_config

        config = load_config(args.config)
        if config.judge is None:
            raise InputError("the config has no judge section", source=str(args.config), field="judge")
        fields = set(JudgeSettings.model_fields)
        settings = JudgeSettings(**{k: v for k, v in config.judge.model_dump().items() if k in fields})
    else:
        backend: Literal["openai", "local"] = args.judge or ("openai" if args.base_url else "local")
        settings = JudgeSettings(
            backend=backend, base_url=args.base_url, model=args.model, api_key_env=args.api_key_env,
            cache_path=args.cache,
        )  # fmt: skip
    labels, samples, run = _labels_and_samples(args, config)
    typed = [s for s in samples if isinstance(s, RagSample)]
    say = (lambda m: print(m, file=sys.stderr)) if sys.stderr.isatty() else (lambda m: None)

    def one(metric: str) -> int:
        backend, _ = resolve_backend(settings)
        steps = args.steps or list(LOCAL_STEPS if backend == "local" else LLM_STEPS)
        if args.dry_run:
            data = join_labels(typed, labels, metric, run=run, folds=args.folds)
            plan = plan_alignment(len(data.samples), args.folds, steps)
            print(f"{metric} ({backend} judge):")
            print("\n".join(plan.lines()))
            if args.budget is not None and plan.total > args.budget:
                print(f"  over the budget of {args.budget:,}: steps that do not fit are skipped and said so")
            return 0
        report = align_judge(
            typed, labels, metric, judge=settings, out_dir=args.out, run=run, folds=args.folds, seed=args.seed,
            statistic=args.statistic, steps=args.steps, budget=args.budget, say=say,
        )  # fmt: skip
        print(report.verdict)
        for step in report.steps:
            print(f"  {step.name}: {'kept' if step.kept else 'not kept'}: {step.why}")
        print(f"  {report.curve_note}")
        stem = args.out / f"{report.metric}.alignment"
        print(
            f"  report: {stem}.md, {stem}.html, {stem}.json"
            + (f"; aligned: {report.written}" if report.written else "")
        )
        return 0

    from ragmetrics.errors import JudgeError

    try:
        if config is not None:
            from ragmetrics.nightly.pipeline import own_metrics

            with own_metrics(config):
                for metric in args.metrics:
                    one(metric)
        else:
            for metric in args.metrics:
                one(metric)
    except JudgeError as exc:
        print(f"ragmetrics: alignment incomplete (exit 3): {exc.cause}: {exc}", file=sys.stderr)
        return int(ExitCode.INCOMPLETE)
    return int(ExitCode.OK)
