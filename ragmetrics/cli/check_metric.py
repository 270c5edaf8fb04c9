"""`ragmetrics check-metric FILE`: a rubric metric's labelled samples through the configured judge, and the
judge's agreement with the labels, before anyone trusts the metric (ragmetrics.metric_check)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragmetrics.cli._common import add_judge_arguments
from ragmetrics.errors import ConfigError
from ragmetrics.options import ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "check-metric",
        help="a rubric metric's labelled samples through the judge: agreement with the labels",
        description="Reads a rubric metric file (one YAML definition; docs/judge.md, 'Your own metrics'), judges "
        "its labelled samples (the rubric's 'labelled' items and 'labelled_file', never shown to the judge) and "
        "its anchor examples (each with itself left out of the prompt), and prints how often the judge's rating "
        "is the person's. The judge comes from a config's judge section (--config) or the flags below; "
        "verdicts are cached like every other. Exit 1 when --min-agreement is given and not reached.",
    )
    parser.add_argument("file", type=Path, help="the rubric metric's YAML file")
    parser.add_argument(
        "--config", type=Path, help="take the judge settings from this config's judge section"
    )
    add_judge_arguments(parser, base_url_help="OpenAI-compatible endpoint (without --config)")
    parser.add_argument(
        "--min-agreement",
        type=float,
        metavar="X",
        help="exit 1 when the exact agreement (checklists: check decisions agreed) is below X",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the check as JSON")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics._async import run_sync
    from ragmetrics.judge.backends.llm import LLMJudge
    from ragmetrics.judge.openai.scrub import public_url
    from ragmetrics.judge.own_metrics import load_metric_file
    from ragmetrics.judge.rubric import RubricMetric
    from ragmetrics.judge.settings import JudgeSettings
    from ragmetrics.metric_check import MetricCheck, check_metric, format_check, write_check

    definition = load_metric_file(args.file)
    if not isinstance(definition, RubricMetric):
        raise ConfigError(
            f"{args.file}: metric {definition.name!r} is a {definition.type} metric; check-metric measures a "
            "rubric's judge against labels (a deterministic metric has no judge to check)"
        )
    if args.min_agreement is not None and not 0 <= args.min_agreement <= 1:
        raise ConfigError(f"--min-agreement must be in [0, 1], got {args.min_agreement}")
    if args.config is not None:
        from ragmetrics.nightly.config_load import load_config

        config = load_config(args.config)
        if config.judge is None:
            raise ConfigError(f"{args.config}: has no judge section to take the judge from")
        settings = config.judge.settings()
    else:
        settings = JudgeSettings(
            backend="openai",
            base_url=args.base_url,
            model=args.model,
            api_key_env=args.api_key_env,
            cache_path=args.cache,
        )
    if settings.backend != "openai":
        raise ConfigError(
            f"rubric metric {definition.name!r} needs an LLM judge (judge.backend: openai); the local judge "
            "compares embeddings and cannot read a criterion"
        )
    judge = LLMJudge(settings)

    async def check() -> MetricCheck:
        try:
            return await check_metric(definition, judge)
        finally:
            await judge.aclose()

    result = run_sync(check())
    judge_line = f"{settings.model} at {public_url(settings.base_url) or 'https://api.openai.com/v1'}"
    print(format_check(result, definition, judge_line))
    if args.json is not None:
        write_check(result, args.json)
    if args.min_agreement is not None:
        figure = result.agreement.get("exact", result.agreement.get("check_decisions"))
        if figure is None or figure < args.min_agreement:
            shown = "none (no item was rated)" if figure is None else f"{figure:.3f}"
            print(
                f"ragmetrics: agreement {shown} is below --min-agreement {args.min_agreement}",
                file=sys.stderr,
            )
            return int(ExitCode.REGRESSION)
    return int(ExitCode.OK)
