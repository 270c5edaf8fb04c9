"""Calls, tokens, dollars and time: the dry run's estimate, and a night's estimate beside what it spent."""

from __future__ import annotations

from ragmetrics.render._text import Grid, aligned
from ragmetrics.schema import NightWork, WorkFigures

__all__ = ["estimate_lines", "work_grid"]


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _cost(value: float | None) -> str:
    return "not priced" if value is None else f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def _requests(figures: WorkFigures) -> int:
    return figures.judge_calls + figures.embedding_calls


def estimate_lines(work: NightWork, name: str) -> list[str]:
    """The dry run's answer, one figure per line, then how it was estimated."""
    e = work.estimate
    lines = [
        f"Estimate for {name} (dry run: nothing was called, nothing written)",
        f"  pipeline calls     {e.pipeline_calls:>10,}",
        f"  generator calls    {e.generator_calls:>10,}",
        f"  judge requests     {_requests(e):>10,}  ({e.judge_calls:,} chat, {e.embedding_calls:,} embedding; "
        f"{e.judge_units:,} scores, {e.cached_verdicts:,} verdicts already cached)",
        f"  tokens             ~{e.prompt_tokens:,} prompt, ~{e.completion_tokens:,} completion, "
        f"~{e.embedding_tokens:,} embedding",
        f"  cost               {_cost(e.cost_usd):>10}"
        + (f"  (chat requests asked directly; {_cost(e.cost_usd_batch)} through the Batch API)"
           if e.cost_usd_batch is not None else ""),
    ]
    if e.chunks_embedded is not None:
        lines.append(f"  chunks to embed    {e.chunks_embedded:>10,}  (retriever indexes: chunks their persisted "
                     "index lacks)")  # fmt: skip
    if e.seconds:
        stages = ", ".join(f"{stage} {_duration(s)}" for stage, s in e.seconds.items())
        lines.append(f"  time               ~{_duration(sum(e.seconds.values()))}  ({stages})")
    else:
        lines.append("  time               unknown (no earlier night to time it by)")
    lines += ["how:", *(f"  - {a}" for a in work.assumptions)]
    return lines


def _row(label: str, estimate: float | None, actual: float | None, fmt: str = "{:,.0f}") -> list[str]:
    def cell(v: float | None) -> str:
        return "" if v is None else fmt.format(v)

    diff = ""
    if estimate is not None and actual is not None and actual > 0:
        diff = f"{(estimate - actual) / actual:+.0%}"
    elif estimate is not None and actual is not None and estimate == actual == 0:
        diff = "exact"
    return [label, cell(estimate), cell(actual), diff]


STAGE_LABELS = {
    "pipeline": "pipeline seconds (its calls)",
    "generator": "generator seconds (its calls)",
    "retriever index": "retriever index building seconds",
    "retrieval": "retrieval seconds (searches, reranks)",
    "judge": "judge seconds",
}
"""What each stage's seconds hold, said in the row: the pipeline's are its calls alone, never the retrievers'
index building that happens in the same step."""


def _stage_label(stage: str, actual: WorkFigures | None) -> str:
    cached = (  # a cached night: its outputs were read, not called for
        actual is not None and stage in ("pipeline", "generator") and stage in actual.seconds
        and getattr(actual, f"{stage}_calls") == 0
    )  # fmt: skip
    return f"{stage} seconds (every output from the cache, none called)" if cached else STAGE_LABELS.get(
        stage, f"{stage} seconds"
    )


def work_grid(work: NightWork) -> Grid:
    """Estimate beside actual: requests, tokens, cost and seconds per stage."""
    e, a = work.estimate, work.actual
    grid = Grid(headers=["", "estimated", "actual", "estimate off by"], align=[*aligned(1, 3)])
    grid.title = "Calls, tokens, cost and time: estimated before judging, and spent"
    grid.rows = [
        _row("pipeline calls", e.pipeline_calls, a.pipeline_calls if a else None),
        _row("generator calls", e.generator_calls, a.generator_calls if a else None),
        _row("judge requests", _requests(e), _requests(a) if a else None),
        _row("prompt tokens", e.prompt_tokens, a.prompt_tokens if a else None),
        _row("completion tokens", e.completion_tokens, a.completion_tokens if a else None),
        _row("embedding tokens", e.embedding_tokens, a.embedding_tokens if a else None),
        _row("cost (USD)", e.cost_usd, a.cost_usd if a else None, "{:,.4f}"),
    ]
    if e.chunks_embedded is not None or (a is not None and a.chunks_embedded is not None):
        grid.rows.append(_row("chunks embedded (retriever indexes)", e.chunks_embedded,
                              a.chunks_embedded if a else None))  # fmt: skip
    for stage in dict.fromkeys([*e.seconds, *(a.seconds if a else {})]):
        grid.rows.append(
            _row(_stage_label(stage, a), e.seconds.get(stage), a.seconds.get(stage) if a else None, "{:,.1f}")
        )
    grid.notes = [
        "Actual judge requests include retries, repairs and embedding requests; the estimate counts each "
        "request the cache lacked once.",
        *(f"Estimated: {a}." for a in work.assumptions),
    ]
    return grid
