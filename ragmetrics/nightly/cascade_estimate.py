"""What a cascade night (`judge.cascade`) may send, for `--dry-run` and the night's own estimate.

How many items go past the first judge is known only once its threshold is certified on the labels, which
costs requests, so a dry run cannot say it exactly. What it can say: the first judge is asked about every
item (the calibration items among them) once per view, exactly as counted against the cache; each later judge
is asked at most about every item (the escalated ones, and the calibration items that reach it), once per
view. The sum is an upper bound, and the note says so, with the first judge's share apart.

A view is one request per (sample, metric) per judge: one for `logprobs`, `samples` seeded requests for
`samples` and `simulated_annotators` (whose prompts carry labelled examples: those are counted as requests
even where the cache holds them, one more reason the figure is a bound), one per member of a panel step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmetrics.judge.settings import JudgeSettings
    from ragmetrics.nightly.config_judge import JudgeConfig

__all__ = ["cascade_bound_note", "cascade_views"]

View = tuple["JudgeSettings", dict[str, Any] | None]


def cascade_views(judge: JudgeConfig) -> list[tuple[str, list[View]]]:
    """Each step of the cascade, in order, with the settings and cache identity of every view that sends
    requests (the local judge sends none)."""
    from ragmetrics.judge.cascade.config import CascadePanel
    from ragmetrics.judge.panel import identity, member_settings

    assert judge.cascade is not None
    base = judge.settings()
    steps: list[tuple[str, list[View]]] = []
    for step in judge.cascade:
        views: list[View] = []
        if isinstance(step, CascadePanel):
            for one in step.panel:
                own = member_settings(one, base)
                if own.backend != "local":
                    views.append((own, identity(own)))
            steps.append((step.name, views))
            continue
        own = member_settings(step, base)
        name = step.label(base.model, base.base_url)
        if own.backend != "local":
            count = 1 if judge.confidence == "logprobs" else judge.samples
            seed = own.seed or 0
            who = identity(own)
            views = [(own if r == 0 and count == 1 else own.model_copy(update={"seed": seed + r}), who)
                     for r in range(count)]  # fmt: skip
        steps.append((name, views))
    return steps


def cascade_bound_note(first: str, first_calls: int, later: list[tuple[str, int]]) -> str:
    """The estimate's note: the first judge's requests, each later judge's bound, and that the total is one."""
    rest = "; ".join(f"{name}: at most {calls:,}" for name, calls in later)
    later_part = (
        f"; each later judge only about the items escalated to it, unknown before the thresholds are "
        f"certified, so at most every item: {rest}"
        if later
        else ""
    )
    return (
        f"a cascade: the judge requests are an UPPER BOUND. The first judge ({first}) is asked about every item, "
        f"its calibration items among them: {first_calls:,} requests{later_part}"
    )
