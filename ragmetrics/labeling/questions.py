"""What a person is asked when labelling a metric, and the answers offered: from the metric's registry entry,
so the page asks exactly what the judge was asked."""

from __future__ import annotations

from dataclasses import dataclass

from ragmetrics.errors import InputError, JudgeError
from ragmetrics.judge.registry import spec

__all__ = ["Choice", "Question", "question_for"]


@dataclass(frozen=True)
class Choice:
    key: str  # the keyboard key that picks it
    text: str
    value: float  # the label written, in [0, 1]


@dataclass(frozen=True)
class Question:
    metric: str
    ask: str
    shows: tuple[str, ...]  # sample fields on the page, in the order shown
    choices: tuple[Choice, ...]


YES_PARTLY_NO = (Choice("y", "Yes", 1.0), Choice("p", "Partly", 0.5), Choice("n", "No", 0.0))
GRADES = (
    Choice("0", "0 - not relevant", 0.0),
    Choice("1", "1 - on topic, does not answer", 1 / 3),
    Choice("2", "2 - answers in part", 2 / 3),
    Choice("3", "3 - answers it", 1.0),
)
_ORDER = ("question", "contexts", "answer", "reference")


def question_for(metric: str) -> Question:
    """The question for `metric`; an InputError (exit 2 at the CLI) for a metric the registry does not define,
    such as a config's own Python or text metric: the page asks what the judge was asked, and for those no
    judge was asked anything."""
    try:
        entry = spec(metric)
    except JudgeError as exc:
        raise InputError(
            f"{metric!r} cannot be labelled here: {exc}. The page labels the built-in judge metrics (and a "
            "config's rubric metrics while their run is defined); a config's own Python or text metric is "
            "computed, not judged, so there is no verdict to agree with",
            field="--metric",
        ) from None
    ask = entry.description[:1].upper() + entry.description[1:]
    choices = GRADES if metric == "passage_relevance" else YES_PARTLY_NO
    shows = tuple(f for f in _ORDER if f in entry.required)
    return Question(metric, ask, shows, choices)
