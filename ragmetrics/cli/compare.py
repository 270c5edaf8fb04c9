"""`ragmetrics compare`: are the differences between runs real or noise?

Two ways in: score runs against qrels (`ragmetrics compare QRELS RUN RUN [...] -m ...`), or compare
results scored earlier, retrieval or judge metrics alike (`ragmetrics compare --results a.json b.json`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmetrics._textfile import read_utf8
from ragmetrics.cli._common import add_allow_disjoint, add_utilities
from ragmetrics.errors import InputError, json_fault, json_problem
from ragmetrics.options import CORRECTIONS, TESTS
from ragmetrics.schema import Report, RunResult

FORMATS = ("table", "markdown", "latex", "json", "csv")

_EPILOG = """examples:
  ragmetrics compare qrels.txt bm25.run dense.run hybrid.run -m ndcg@10 recall@100 --test wilcoxon
  ragmetrics compare --results yesterday/report.json today/report.json -m context_recall --format markdown
  ragmetrics compare qrels.txt a.run b.run c.run d.run -m ndcg@10 --tukey
  ragmetrics compare qrels.txt a1.run a2.run a3.run b1.run b2.run b3.run -m ndcg@10 \
      --group a=a1,a2,a3 --group b=b1,b2,b3            # systems over three seeds each

Pairs: every run against each earlier run (the baseline). Runs are aligned on the union of their
queries; a run lacking a query scores 0 there and is reported (--intersection: shared queries only).
A failed judge score (null) is never filled in: each pair is compared over the queries both runs scored.
Holm/Bonferroni correct within each metric's family of pairs (--correction-scope all: every pair and
metric together). --results accepts a RunResult JSON, a list of them (ragmetrics retrieval --format json),
or a Report JSON (its runs are taken); runs that share a name are renamed FILE:NAME."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="paired significance tests between runs (Fisher, t, Wilcoxon, sign) with corrections",
        description="Compare runs pairwise: mean difference, p-value, corrected p, effect size, bootstrap CI.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "inputs",
        metavar="QRELS RUN RUN",
        nargs="*",
        help="qrels file (or a utility folder), then two or more run files",
    )
    parser.add_argument(
        "--results",
        metavar="JSON",
        nargs="+",
        action="extend",
        help="compare already-scored results (unified-schema JSON) instead of scoring runs; "
        "FILE:RUN[,RUN...] picks runs of a file, RUN=ALIAS renames one (e.g. old.json:bm25=bm25_old)",
    )
    parser.add_argument(
        "-m",
        "--metrics",
        metavar="METRIC",
        nargs="+",
        action="extend",
        help="metrics to compare (required with runs; default with --results: the first run's metrics)",
    )
    parser.add_argument(
        "--baseline",
        metavar="RUN",
        help="compare every run with this one only (k-1 pairs, a milder correction) instead of every pair",
    )
    parser.add_argument("--test", choices=TESTS, default="fisher", help="paired test (default: fisher)")
    parser.add_argument(
        "--correction", choices=CORRECTIONS, default="holm", help="multiple-testing correction"
    )
    parser.add_argument(
        "--correction-scope",
        choices=("metric", "all"),
        default="metric",
        help="correction family (default: metric)",
    )
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (default: 0.05)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the randomization test and bootstrap")
    parser.add_argument(
        "--permutations", type=int, default=10_000, help="Fisher permutations (default: 10000)"
    )
    parser.add_argument(
        "--bootstrap-samples", type=int, default=10_000, help="bootstrap samples (default: 10000)"
    )
    add_allow_disjoint(parser)
    add_utilities(parser)
    parser.add_argument("--intersection", action="store_true", help="compare over the queries every run has")
    parser.add_argument(
        "--tukey",
        nargs="?",
        const="blocked",
        choices=("blocked", "one-way"),
        help="also Tukey's HSD over every pair at once (blocked: queries as blocks, the default; one-way: as "
        "scipy and ranx)",
    )
    parser.add_argument(
        "--group",
        metavar="NAME=RUN,RUN,...",
        action="append",
        help="systems run with several seeds or folds: each --group names one system and its runs; the "
        "comparison is then between systems (seed-averaged per query, hierarchical bootstrap CIs)",
    )
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    parser.add_argument(
        "--per-query-csv", metavar="PATH", type=Path, help="also write per-query scores as CSV"
    )
    parser.add_argument(
        "--plots", metavar="DIR", type=Path, help="also write PNG plots (needs the plots extra)"
    )
    parser.set_defaults(handler=run_command)


def _as_results(data: Any, source: str) -> list[RunResult]:
    """A Report (its runs), one RunResult, or a list of RunResults, validated against the schema."""
    try:
        if isinstance(data, dict) and "comparisons" in data and "runs" in data:
            return list(Report.model_validate(data).runs)
        if isinstance(data, dict):
            return [RunResult.model_validate(data)]
        if isinstance(data, list):
            return [RunResult.model_validate(item) for item in data]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InputError(
            f"not a ragmetrics result: {first['msg']}", source=source, field=where or None
        ) from exc
    raise InputError(
        f"expected a RunResult or Report object or a list of RunResults, got {type(data).__name__}",
        source=source,
    )


def _check_provenance(result: RunResult, source: str) -> None:
    """A result's qrels provenance (`metadata.extra.qrels`, which `ragmetrics retrieval`/`compare`/`score`
    keep): a valid record, so the comparison can say where its grades came from; a malformed one is an error
    naming the file and the field, never dropped. Results scored without one (plain qrels, older versions)
    have none: nothing to say."""
    from ragmetrics.schema import QrelsProvenance

    if "qrels" not in result.metadata.extra:
        return
    stored = result.metadata.extra["qrels"]
    field = "metadata.extra.qrels"
    if not isinstance(stored, dict):
        raise InputError(
            f"run {result.name!r}: the qrels provenance must be an object, got {type(stored).__name__}",
            source=source,
            field=field,
        )
    try:
        QrelsProvenance.model_validate(stored)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InputError(
            f"run {result.name!r}: not a qrels provenance record: {first['msg']}",
            source=source,
            field=f"{field}.{where}" if where else field,
        ) from None


def parse_selector(spec: str) -> tuple[str, list[tuple[str, str]] | None]:
    """`PATH[:RUN[=ALIAS][,RUN[=ALIAS]...]]` -> (path, [(run, alias), ...] or None for every run)."""
    if Path(spec).exists() or ":" not in spec:
        return spec, None
    path, _, picks = spec.rpartition(":")
    chosen: list[tuple[str, str]] = []
    for item in picks.split(","):
        run, _, alias = item.partition("=")
        if not run.strip():
            raise InputError(
                f"empty run name in selector {spec!r} (expected FILE:RUN[=ALIAS],...)", field="results"
            )
        chosen.append((run.strip(), alias.strip() or run.strip()))
    return path, chosen


def load_results(paths: list[str]) -> list[RunResult]:
    """Read result files (with optional FILE:RUN=ALIAS selectors); runs from different files that share a
    name are renamed FILE:NAME."""
    loaded: list[tuple[str, RunResult]] = []
    for spec in paths:
        path, chosen = parse_selector(spec)
        text = read_utf8(path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(json_problem(exc), source=path, line=json_fault(exc)[0]) from exc
        results = _as_results(data, path)
        for result in results:
            _check_provenance(result, path)
        if chosen is not None:
            by_name = {r.name: r for r in results}
            picked = []
            for run, alias in chosen:
                if run not in by_name:
                    raise InputError(
                        f"no run {run!r}; runs: {', '.join(by_name)}", source=path, field="results"
                    )
                picked.append(by_name[run].model_copy(update={"name": alias}))
            results = picked
        loaded += [(path, result) for result in results]
    counts = Counter(result.name for _, result in loaded)
    return [
        result.model_copy(update={"name": f"{path}:{result.name}"}) if counts[result.name] > 1 else result
        for path, result in loaded
    ]


def _score_runs(args: argparse.Namespace) -> list[RunResult]:
    if len(args.inputs) < 3:
        raise InputError(
            f"give QRELS and at least two RUN files (got {len(args.inputs)} path(s)), or --results JSON JSON",
            field="inputs",
        )
    if not args.metrics:
        raise InputError("-m/--metrics is required when scoring runs", field="metrics")
    from ragmetrics.cli._common import score_files

    return score_files(
        args.inputs[0],
        args.inputs[1:],
        list(dict.fromkeys(args.metrics)),
        intersection=args.intersection,
        allow_disjoint=args.allow_disjoint,
        utilities_path=args.utilities,
    )


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", source=str(path)) from exc


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.render.tables import format_report, per_query_csv

    if args.results and args.inputs:
        raise InputError("give either QRELS RUN RUN ... or --results JSON ..., not both", field="inputs")
    if args.results and args.utilities:
        raise InputError(
            "--utilities is read when scoring runs (QRELS RUN RUN ...); --results are already scored",
            field="utilities",
        )
    results = load_results(args.results) if args.results else _score_runs(args)
    report = _seed_report(args, results) if args.group else _pairwise_report(args, results)
    if args.tukey:
        from ragmetrics.comparison.tukey import tukey_pairs

        report.metadata.tukey = tukey_pairs(
            report.runs, report.metrics, alpha=args.alpha, blocked=args.tukey == "blocked"
        )
    from ragmetrics.cli._common import qrels_provenance_lines

    # where the grades came from belongs to the comparison itself (its notes: every format shows them, a
    # markdown report pasted elsewhere included), as a night's report carries its qrels provenance; results
    # scored earlier carry theirs in metadata.extra.qrels (checked as they were loaded)
    said = qrels_provenance_lines(results)
    report.metadata.notes = [*report.metadata.notes, *said]
    color = args.format == "table" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    sys.stdout.write(format_report(report, args.format, color=color))
    for line in said:
        print(line, file=sys.stderr)
    if args.per_query_csv is not None:
        _write(args.per_query_csv, per_query_csv(report))
        print(f"per-query scores: {args.per_query_csv}", file=sys.stderr)
    if args.plots is not None:
        from ragmetrics.render.plots import save_plots

        written = save_plots(report, args.plots)
        print(f"plots: {len(written)} PNG files in {args.plots}", file=sys.stderr)
    return 0


def _groups(specs: list[str], results: list[RunResult]) -> dict[str, list[RunResult]]:
    """`NAME=RUN,RUN,...` per system -> the loaded results of its runs; every run in at most one group."""
    by_name = {r.name: r for r in results}
    groups: dict[str, list[RunResult]] = {}
    used: dict[str, str] = {}
    for spec in specs:
        name, sep, runs = spec.partition("=")
        names = [r.strip() for r in runs.split(",") if r.strip()]
        if not sep or not name.strip() or not names:
            raise InputError(f"--group {spec!r}: expected NAME=RUN,RUN,...", field="group")
        if name.strip() in groups:
            raise InputError(f"--group {name.strip()!r} is given twice", field="group")
        for run in names:
            if run not in by_name:
                raise InputError(
                    f"--group {name.strip()!r}: no run {run!r}; runs: {', '.join(by_name)}", field="group"
                )
            if run in used:
                raise InputError(f"run {run!r} is in both {used[run]!r} and {name.strip()!r}", field="group")
            used[run] = name.strip()
        groups[name.strip()] = [by_name[r] for r in names]
    return groups


def _seed_report(args: argparse.Namespace, results: list[RunResult]) -> Report:
    from ragmetrics.comparison.pairs import check_test
    from ragmetrics.comparison.seeds import seed_report

    if args.baseline:
        raise InputError(
            "--baseline and --group do not combine: every pair of systems is compared", field="group"
        )
    groups = _groups(args.group, results)
    metrics = list(dict.fromkeys(args.metrics)) if args.metrics else list(results[0].metadata.metrics)
    return seed_report(
        groups, metrics, test=check_test(args.test), correction=args.correction, alpha=args.alpha,
        seed=args.seed, permutations=args.permutations, bootstrap_samples=args.bootstrap_samples,
    )  # fmt: skip


def _pairwise_report(args: argparse.Namespace, results: list[RunResult]) -> Report:
    from ragmetrics.comparison.pairs import compare_results

    return compare_results(
        results,
        list(dict.fromkeys(args.metrics)) if args.metrics else None,
        test=args.test,
        correction=args.correction,
        seed=args.seed,
        alpha=args.alpha,
        permutations=args.permutations,
        bootstrap_samples=args.bootstrap_samples,
        correction_scope=args.correction_scope,
        align="intersection" if args.intersection else "union",
        baseline=args.baseline,
    )
