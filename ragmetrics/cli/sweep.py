"""`ragmetrics sweep CONFIG`: a grid of retrieval configurations, its winner held out (docs/sweeps.md).

A command of its own rather than `ragmetrics run` with a section: a night scores a few named runs and gates on
them; a sweep chooses among many configurations, and what it writes (the winner, its confirmation on held-out
questions, the winner's curse, the Pareto chart) is not a night's report. The config file is the same, so the
dataset, metrics, judge and comparison settings are written once. Exit: 0 ok, 2 config or input error."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="run a config's sweep: a grid of retrievers, k, rerankers, fusion weights (and chunkings), its "
        "winner chosen on half the questions and confirmed on the other half",
        description="Run the grid of the config's `sweep:` section, each shared stage once; choose the winner "
        "on the selection half (dropping clear losers early), confirm it on the confirmation half against the "
        "baseline and the runner-up (paired tests, Holm), report the winner's curse gap and the Pareto chart "
        "of quality against latency, tokens and cost. Writes sweep.json, sweep.md, pareto.png, sweep.html.",
    )
    parser.add_argument("config", type=Path, metavar="CONFIG", help="a YAML config with a sweep: section")
    parser.add_argument(
        "--output",
        type=Path,
        metavar="DIR",
        help="where the files go (default: OUTPUT_DIR/sweep of the config)",
    )
    parser.add_argument(
        "--engine", choices=("local", "ray"), help="where the first stages run (overrides sweep.ray)"
    )
    parser.add_argument("--no-plots", action="store_true", help="write no pareto.png / sweep.html")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from ragmetrics.errors import ConfigError
    from ragmetrics.nightly.config_load import load_config
    from ragmetrics.sweep.report import write_outputs
    from ragmetrics.sweep.run import run_sweep

    config = load_config(args.config)
    if config.sweep is None:
        raise ConfigError(f"{args.config}: no 'sweep:' section (docs/sweeps.md)")
    use_ray = args.engine == "ray" if args.engine else config.sweep.ray
    out_dir = args.output or (config.output.dir / "sweep")
    if use_ray:
        from ragmetrics.engines.ray.sweep import RayStages

        with RayStages(address=config.engine.address, num_cpus=config.engine.num_cpus) as ray_stages:
            result = run_sweep(config, mapper=ray_stages.map)
    else:
        result = run_sweep(config)
    s = write_outputs(result, out_dir, plots=config.output.plots and not args.no_plots)
    w = s["winner"]
    embedded = s["stages"]["embedded"]
    print(
        f"ragmetrics sweep: {s['configurations']} configurations; winner {w['name']} "
        f"({s['metric']} {w['selection_mean']} selection, {w['confirmation_mean']} confirmation, "
        f"gap {w['gap']}); {s['early_drop']['units_avoided']} units avoided by early dropping; "
        f"judged on {s['qrels']['source']}; "
        + ("indexes in memory" if embedded is None else f"{embedded} chunks embedded")
        + f"; {out_dir}",
        file=sys.stderr,
    )
    return 0
