"""What a cascade night (`judge.cascade`) may send, for `--dry-run` and the night's own estimate.

How many items go past the first judge is known only once its threshold is certified on the labels, which
costs requests, so a dry run cannot say it exactly. What it can say: the first judge is asked about every
item (the calibration items among them) once per view, exactly as counted against the cache; each later judge
is asked at most about every item (the escalated ones, and the calibration items that reach it), once per
view. The sum is an upper bound, and the note says so, with the first judge's share apart.

A view is one request per (sample, metric) per judge: one for `logprobs`, `samples` seeded requests for
`samples` and `simulated_annotators` (whose prompts carry labelled examples: those are counted as requests
even where the cache holds them, one more reason the figure is a bound), one per member of a panel step; with
`judge.repeats` = r, each of them r times (`repeated_views`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmetrics.judge.settings import JudgeSettings
    from ragmetrics.nightly.config_judge import JudgeConfig

__all__ = ["cascade_bound_note", "cascade_views", "repeated_views"]

View = tuple["JudgeSettings", dict[str, Any] | None]


def repeated_views(views: Sequence[JudgeSettings], repeats: int) -> list[tuple[int, JudgeSettings]]:
    """Each of a step's views asked `repeats` times, as (which view, its settings): repeat j of view v at seed
    seed_v + j x len(views), so no two requests of the step share a seed (a step's `samples` views are seeds
    seed, seed + 1, ...: repeated, they are seeds seed ... seed + samples x repeats - 1, each cached apart).
    Repeat 0 is the view as it is (its cache keys unchanged); every copy has `repeats` 1 (it is one request)."""
    out: list[tuple[int, JudgeSettings]] = []
    for j in range(repeats):
        for v, view in enumerate(views):
            update: dict[str, Any] = {"repeats": 1}
            if j:
                update["seed"] = (view.seed or 0) + j * len(views)
            out.append((v, view.model_copy(update=update)))
    return out


def cascade_views(judge: JudgeConfig) -> list[tuple[str, list[View]]]:
    """Each step of the cascade, in order, with the settings and cache identity of every view that sends
    requests (the local judge sends none)."""
    from ragmetrics.judge.cascade.config import CascadePanel
    from ragmetrics.judge.panel import identity, member_settings

    assert judge.cascade is not None
    base = judge.settings()
    steps: list[tuple[str, list[View]]] = []
    for step in judge.cascade:
        if isinstance(step, CascadePanel):
            members = [member_settings(one, base) for one in step.panel]
            views: list[View] = [(own, identity(own)) for _, own in repeated_views(members, judge.repeats)
                     if own.backend != "local"]  # fmt: skip
            steps.append((step.name, views))
            continue
        own = member_settings(step, base)
        name = step.label(base.model, base.base_url)
        views = []
        if own.backend != "local":  # the local judge sends no request
            count = 1 if judge.confidence == "logprobs" else judge.samples
            seed = own.seed or 0
            who = identity(own)
            if judge.confidence == "simulated_annotators":
                # an annotator's prompt carries its labelled examples, which the planner does not render: keyed
                # apart, its requests are counted whatever the cache holds (the plain judge's verdicts at the
                # same seeds are not its verdicts), so the figure stays an upper bound
                who = {**who, "planned": "simulated annotator, prompts with labelled examples"}
            seeded = [own if r == 0 and count == 1 else own.model_copy(update={"seed": seed + r}) for r in range(count)]
            views = [(view, who) for _, view in repeated_views(seeded, judge.repeats)]
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
