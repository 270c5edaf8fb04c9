"""The night's runs compared into one Report: paired tests on the metrics every run has, descriptive
statistics for all, Tukey's HSD and the power table when asked for.
"""

from __future__ import annotations

from ragmetrics.errors import InputError
from ragmetrics.nightly.config import NightlyConfig
from ragmetrics.options import OPERATIONAL_METRICS
from ragmetrics.schema import ComparisonSettings, Report, ReportMetadata, RunResult


def compare_runs(
    config: NightlyConfig,
    results: list[RunResult],
    notes: list[str],
    clusters: dict[str, str] | None = None,
) -> Report:
    """One Report over every run; metrics that not every run has are described but not tested. With
    `clusters` (turn id -> conversation id), every test, interval, power figure and gate check counts
    conversations (`comparison.clusters`)."""
    from ragmetrics.comparison.descriptive import describe

    # The configured metrics, then latency, tokens and cost where the pipeline or generator measured them.
    wanted = [
        *config.all_metrics(),
        *(m for m in OPERATIONAL_METRICS if any(m in r.metrics for r in results)),
    ]
    everywhere = [m for m in wanted if all(m in r.metrics for r in results)]
    partial = [m for m in wanted if m not in everywhere and any(m in r.metrics for r in results)]
    for metric in list(everywhere):
        failed = [r.name for r in results if all(v is None for v in r.scores(metric))]
        if failed:
            everywhere.remove(metric)
            notes.append(
                f"{metric}: every score failed for {', '.join(failed)} (causes in the runs' failures); not compared"
            )
    c = config.compare
    if len(results) >= 2 and everywhere:
        from ragmetrics.comparison.pairs import compare_results

        report = compare_results(
            results,
            everywhere,
            test=c.test,
            correction=c.correction,
            seed=c.seed,
            alpha=c.alpha,
            permutations=c.permutations,
            # trec_eval's convention leaves out the queries a run lacks; the comparison must not score them 0.
            align="intersection" if config.retrieval.query_set == "intersection" else "union",
            clusters=clusters,
        )
    else:
        if len(results) < 2:
            notes.append("one run only: descriptive statistics, no significance tests")
        report = Report(
            runs=results,
            metrics=everywhere,
            settings=ComparisonSettings(
                test=c.test,
                correction=c.correction,
                alpha=c.alpha,
                seed=c.seed,
                permutations=c.permutations if c.test == "fisher" else None,
            ),
            metadata=ReportMetadata(
                query_count=len({q for r in results for q in r.per_query}), clusters=clusters
            ),
        )
    for metric in partial:
        have = [r.name for r in results if metric in r.metrics]
        notes.append(f"{metric}: only for {', '.join(have)}; described, not compared")
    for result in results:
        sources = result.metadata.metric_settings.get("claim_relevance")
        if isinstance(sources, dict) and sources:
            said = ", ".join(f"{n} by the {source}" for source, n in sources.items())
            notes.append(f"{result.name}: claim diagnostics decided which chunks are relevant {said}")
    for result in results:
        stats = report.descriptive.setdefault(result.name, {})
        for metric in result.metrics:
            if metric not in stats:
                described = describe(
                    result.scores(metric), not_applicable=result.not_applicable_count(metric)
                )
                if described is not None:
                    stats[metric] = described
    if c.tukey != "off" and len(results) >= 2 and everywhere:
        from ragmetrics.comparison.tukey import tukey_pairs

        try:
            report.metadata.tukey = tukey_pairs(
                results, everywhere, alpha=c.alpha, blocked=c.tukey == "blocked"
            )
        except InputError as exc:  # e.g. fewer than 2 questions every run scored: said, not fatal
            notes.append(f"Tukey's HSD not computed: {exc.what}")
    if report.comparisons:
        from ragmetrics.comparison.report_power import report_power

        targets = power_targets(config, report, notes)
        report.metadata.power = report_power(report, power=c.power, targets=targets)
    return report


def power_targets(config: NightlyConfig, report: Report, notes: list[str]) -> dict[str, float]:
    """The difference each metric's power row plans for: compare.power_targets, else the gate's max_drop."""
    targets = {m: config.baseline.threshold(m) for m in report.metrics if config.baseline.threshold(m) > 0}
    for metric, diff in config.compare.power_targets.items():
        if metric in report.metrics:
            targets[metric] = diff
        else:
            notes.append(
                f"compare.power_targets: {metric} was not compared tonight; no power row plans for it"
            )
    return targets
