"""A night's side-by-side preferences (`pairwise:`): people's from a file, the LLM pairwise judge's asked in both
orders, each summarised per pair of runs (`comparison.preference`) beside the metric's paired comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragmetrics.comparison.preference import Interval as PreferenceInterval
from ragmetrics.comparison.preference import Preference, compare_preferences, net_preferences
from ragmetrics.errors import ConfigError
from ragmetrics.judge.base import RagSample
from ragmetrics.nightly.config_night import NightlyConfig
from ragmetrics.schema import Interval, PairwiseSummary, Report

__all__ = ["pairwise_summaries"]


def _interval(e: PreferenceInterval | None) -> Interval | None:
    return None if e is None else Interval(estimate=e.estimate, low=e.low, high=e.high)


def _pairs(config: NightlyConfig, names: Sequence[str]) -> list[tuple[str, str]]:
    assert config.pairwise is not None
    if config.pairwise.pairs is None:
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    for i, (a, b) in enumerate(config.pairwise.pairs):
        for run in (a, b):
            if run not in names:
                raise ConfigError(f"pairwise.pairs[{i}]: run {run!r} has no judged answers tonight "
                                  f"(runs with them: {', '.join(names) or 'none'})")  # fmt: skip
    return list(config.pairwise.pairs)


def _summary(
    source: str, judgements: Sequence[Preference], a: str, b: str, metric: str | None, report: Report, seed: int
) -> PairwiseSummary:
    result = compare_preferences(judgements, a, b, seed=seed)
    beside = next((c for c in report.comparisons if c.metric == metric and {c.baseline, c.candidate} == {a, b}), None)
    diff = None if beside is None else beside.mean_diff if beside.candidate == b else -beside.mean_diff
    return PairwiseSummary(
        source=source,  # type: ignore[arg-type]
        a=a, b=b, questions=result.questions, wins_a=result.wins_a, wins_b=result.wins_b, ties=result.ties,
        share_b=_interval(result.share_b), p_value=result.p_value, log_odds_b=_interval(result.log_odds_b),
        position_left=_interval(result.position), position_p=result.position_p,
        position_biased=result.position_p is not None and result.position_p < 0.05, verdict=result.verdict,
        judgements=sum(1 for j in judgements if {j.left, j.right} == {a, b}), metric=metric, metric_diff=diff,
        metric_p=None if beside is None else beside.p_corrected,
    )  # fmt: skip


def pairwise_summaries(
    config: NightlyConfig, report: Report, judged: Mapping[str, Sequence[RagSample]], notes: list[str]
) -> list[PairwiseSummary]:
    """Every requested pair from people's preferences and from the pairwise judge (module docstring)."""
    spec = config.pairwise
    if spec is None:
        return []
    names = [name for name, samples in judged.items() if any(s.answer is not None for s in samples)]
    pairs = _pairs(config, names)
    metric = spec.metric or (config.judge.metrics[0] if config.judge is not None and config.judge.metrics else None)
    people: list[Preference] = []
    if spec.preferences is not None:
        from ragmetrics.trust.preferences import load_preferences

        people = load_preferences(spec.preferences)
    out: list[PairwiseSummary] = []
    for a, b in pairs:
        mine = [p for p in people if {p.left, p.right} == {a, b}]
        if spec.preferences is not None and not mine:
            notes.append(f"pairwise: {spec.preferences} has no preferences between {a} and {b}")
        if mine:
            out.append(_summary("people", mine, a, b, metric, report, config.compare.seed or 0))
        if spec.judge:
            out.append(_judge_summary(config, judged, a, b, metric, report, mine))
    return out


def _judge_summary(
    config: NightlyConfig,
    judged: Mapping[str, Sequence[RagSample]],
    a: str,
    b: str,
    metric: str | None,
    report: Report,
    people: Sequence[Preference],
) -> PairwiseSummary:
    from ragmetrics.judge.pairwise import judge_pairwise
    from ragmetrics.judge.select import make_judge, resolve_backend

    if config.judge is None:
        raise ConfigError("pairwise.judge needs a judge section (an LLM endpoint)")
    settings = config.judge.settings()
    if settings.panel is not None:
        raise ConfigError("pairwise.judge asks one LLM which answer is better; with judge.panel set, turn "
                          "pairwise.judge off or judge the pairs in a night without the panel")  # fmt: skip
    backend, _ = resolve_backend(settings)
    if backend != "openai":
        raise ConfigError("pairwise.judge asks an LLM which answer is better: set judge.base_url (or an API key); "
                          "the local judge does not compare answers")  # fmt: skip
    raw, failures = judge_pairwise(make_judge(settings), a, judged[a], b, judged[b])
    summary = _summary("judge", raw, a, b, metric, report, config.compare.seed or 0)
    summary.failures = failures
    if people:
        mine, theirs = net_preferences(raw, a, b), net_preferences(people, a, b)
        shared = [q for q in mine if q in theirs]
        if shared:
            from ragmetrics.comparison.preference import clopper_pearson

            same = sum(1 for q in shared if mine[q] == theirs[q])
            summary.agreement_with_people = _interval(clopper_pearson(same, len(shared)))
    return summary
