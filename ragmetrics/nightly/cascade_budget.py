"""A cascade's calibration under a request budget: priced and checked before any request is sent.

A cascade certifies its thresholds on the labelled calibration items before it judges anything else: with
`judge.adaptive` that is before the first batch, outside the batches the adaptive night trims to its budget.
Those requests are the night's like any other, so they count against `judge.adaptive.max_calls` and
`max_cost` (and `judge.max_requests`, the judges' hard cap, which the cascade's judges share).

How many calibration items reach a later judge is known only once the earlier judges are certified, so the
check is on an upper bound, as the dry run's (`cascade_estimate`): every view of every judge on every
calibration item, each at its own prices, less what the cache holds. A budget the bound does not fit is
refused before anything is sent, naming the key and the bound: thresholds certified on whatever part of the
labels a budget happened to reach would not be the ones the labels give. If the hard cap still stops a
calibration request (retries and repairs are requests too; for metrics whose later requests depend on an
earlier verdict the planned count is a floor), the night stops with the same clarity (`calibration_stopped`);
what was judged is cached, so a rerun with a larger budget pays only for the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragmetrics.errors import ConfigError
from ragmetrics.judge.base import RagSample
from ragmetrics.nightly.cascade_labels import labelled_items

if TYPE_CHECKING:
    from ragmetrics.nightly.config import JudgeConfig, NightlyConfig

__all__ = [
    "CalibrationCost",
    "budget_key",
    "calibration_cost",
    "calibration_estimate",
    "calibration_stopped",
    "check_calibration_budget",
    "check_priced",
]

Item = tuple[str, str]
Plan = Mapping[str, tuple[list[RagSample], list[str]]]
QuestionCosts = Callable[["NightlyConfig", Plan, list[str]], list[tuple[int, float]]]
"""(config, plan, question ids) -> (requests, USD) per question: `nightly.estimate.question_costs`"""


@dataclass(frozen=True)
class CalibrationCost:
    """What certifying the thresholds may cost: requests and USD (upper bounds), the first judge's requests
    apart (exact against the cache for one-request metrics), and the calibration items."""

    calls: int
    cost_usd: float
    first_calls: int
    items: int


def calibration_cost(
    config: NightlyConfig, plan: Plan, calibration: Mapping[str, set[Item]], question_costs: QuestionCosts
) -> CalibrationCost:
    """The bound on the calibration's requests and cost: per metric, every view of every judge on each of its
    calibration items (`question_costs`: `nightly.estimate.question_costs`, which prices a cascade so; passed
    in, as the estimate imports this module)."""
    judge = config.judge
    assert judge is not None and judge.cascade is not None
    first_only = config.model_copy(update={"judge": judge.model_copy(update={"cascade": judge.cascade[:1]})})
    calls = first_calls = items = 0
    cost = 0.0
    for metric, chosen in sorted(calibration.items()):
        part = {run: ([s for s in samples if (run, s.id) in chosen], [metric])
                for run, (samples, metrics) in plan.items() if metric in metrics}  # fmt: skip
        part = {run: p for run, p in part.items() if p[0]}
        ids = list(dict.fromkeys(s.id for samples, _ in part.values() for s in samples))
        if not ids:
            continue
        items += len(chosen)
        every = question_costs(config, part, ids)
        calls += sum(c for c, _ in every)
        cost += sum(u for _, u in every)
        first_calls += sum(c for c, _ in question_costs(first_only, part, ids))
    return CalibrationCost(calls, cost, first_calls, items)


def budget_key(judge: JudgeConfig) -> str:
    """The key whose value caps the cascade's requests: the adaptive night's budget, or the judge's own cap."""
    adaptive = judge.adaptive
    if adaptive is not None and adaptive.max_calls is not None and adaptive.max_calls == judge.max_requests:
        return "judge.adaptive.max_calls"
    return "judge.max_requests"


def check_calibration_budget(
    config: NightlyConfig, plan: Plan, calibration: Mapping[str, set[Item]], question_costs: QuestionCosts
) -> CalibrationCost | None:
    """ConfigError, before anything is sent, when the calibration's bound passes the request cap or the
    adaptive night's max_cost; the bound otherwise (None without a budget)."""
    judge = config.judge
    assert judge is not None
    max_cost = judge.adaptive.max_cost if judge.adaptive is not None else None
    if judge.max_requests is None and max_cost is None:
        return None
    if max_cost is not None:
        check_priced(judge)
    bound = calibration_cost(config, plan, calibration, question_costs)
    how = (
        f"certifying the cascade's thresholds on its {bound.items} labelled calibration items may take up to "
        f"{bound.calls:,} requests (the first judge's {bound.first_calls:,}, counted against the cache; each "
        "later judge counted on every calibration item, as how many go up is known only once the judge below "
        "is certified)"
    )
    if judge.max_requests is not None and bound.calls > judge.max_requests:
        key = budget_key(judge)
        raise ConfigError(
            f"{key}: {judge.max_requests:,} requests cannot cover the cascade's calibration: {how}, before the "
            f"first question is judged; nothing was sent: raise {key} to at least {bound.calls:,} plus what the "
            "questions need"
        )
    if max_cost is not None and bound.cost_usd > max_cost:
        raise ConfigError(
            f"judge.adaptive.max_cost: {max_cost:g} USD cannot cover the cascade's calibration: {how}, at up to "
            f"{bound.cost_usd:.4g} USD at the judges' prices; nothing was sent: raise judge.adaptive.max_cost"
        )
    return bound


def check_priced(judge: JudgeConfig) -> None:
    """ConfigError naming judge.adaptive.max_cost when a judge of the cascade that sends requests has no
    price: its tokens could not be turned into USD, so the budget could never be checked. Each judge is
    priced by its own `price_per_million_tokens` (or the section's, which it overlays)."""
    from ragmetrics.nightly.cascade_estimate import cascade_views

    unpriced = [
        name
        for name, views in cascade_views(judge)
        if any(v.price_per_million_tokens is None for v, _ in views)
    ]
    if unpriced:
        raise ConfigError(
            f"judge.adaptive.max_cost needs a price for every judge of the cascade: set price_per_million_tokens "
            f"on {', '.join(repr(n) for n in unpriced)} (or on judge:), or the budget could never be checked; "
            "nothing was sent"
        )


def calibration_stopped(judge: JudgeConfig, stopped: int, spent: int) -> ConfigError:
    """The error of a calibration the request cap cut short (`stopped` verdicts not sent, `spent` sent)."""
    key = budget_key(judge)
    return ConfigError(
        f"{key}: the budget of {judge.max_requests:,} requests was spent while calibrating the cascade "
        f"({spent:,} sent; {stopped} calibration verdicts not sent: retries and repairs are requests too, and "
        "for metrics whose later requests depend on an earlier verdict the planned count is a floor). "
        "Thresholds certified on the part of the labels the budget reached would not be the ones the labels "
        f"give, so nothing more is judged; what was judged is cached: raise {key} and rerun"
    )


def calibration_estimate(config: NightlyConfig, plan: Plan, question_costs: QuestionCosts) -> str | None:
    """The dry run's line on the calibration under a budget (None without one): its bound, and whether the
    budget covers it (the night refuses one that does not, before sending anything)."""
    judge = config.judge
    assert judge is not None and judge.cascade is not None
    adaptive = judge.adaptive
    caps = [c for c in (judge.max_requests, adaptive.max_calls if adaptive else None) if c is not None]
    max_cost = adaptive.max_cost if adaptive is not None else None
    if not caps and max_cost is None:
        return None
    _, calibration, _ = labelled_items(config, plan)
    bound = calibration_cost(config, plan, calibration, question_costs)
    cap = min(caps) if caps else None
    line = (
        f"the cascade's calibration ({bound.items} labelled items) is judged before the first question and "
        f"counts against the budget: at most {bound.calls:,} requests (the first judge's {bound.first_calls:,})"
    )
    over: list[str] = []
    if cap is not None:
        key = budget_key(judge.model_copy(update={"max_requests": cap}))
        line += f", of {key} {cap:,}"
        if bound.calls > cap:
            over.append(f"{key} {cap:,}")
    if max_cost is not None:
        line += f", and at most {bound.cost_usd:.4g} USD of judge.adaptive.max_cost {max_cost:g}"
        if bound.cost_usd > max_cost:
            over.append(f"judge.adaptive.max_cost {max_cost:g} USD")
    if over:
        line += (
            f": MORE than {' and '.join(over)} allows, so the night will refuse it before sending anything"
        )
    return line
