"""A Python metric of a team's own: used from a config as `function: "support_metrics:mentions_order_number"`
(with the config's folder, or `examples/metrics`, on the import path), or offered by an installed package
through the `ragmetrics.metrics` entry points when marked with `@ragmetrics.python_metric(...)`."""

from __future__ import annotations

import re

from ragmetrics import RagSample, python_metric

ORDER_NUMBER = re.compile(r"\b[A-Z]{2}-\d{6}\b")


@python_metric(
    range=(0.0, 1.0), requires=["question", "answer"], description="does the answer repeat the order number?"
)
def mentions_order_number(sample: RagSample) -> tuple[float | None, str]:
    """1 when the answer repeats the order number the question gives; not applicable when there is none."""
    asked = ORDER_NUMBER.findall(sample.question)
    if not asked:
        return None, "the question gives no order number"
    said = set(ORDER_NUMBER.findall(sample.answer or ""))
    found = [n for n in asked if n in said]
    return len(found) / len(asked), f"{len(found)} of {len(asked)} order numbers repeated"
