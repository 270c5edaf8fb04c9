"""How sure a judge is of one verdict, read from what its scoring left behind.

The cascade keeps a verdict only when this confidence reaches the judge's certified threshold, so it must rank
verdicts by how likely people agree with them; it need not be calibrated (fixed-sequence testing certifies the
threshold whatever the scale). Three sources, as in Jung, Brahman & Choi (ICLR 2025):

- `logprobs`: the probability the server gave the verdict it chose (a rubric's rating, from token
  log-probabilities; the transport asks for them when the metric is probability-weighted). A verdict is a
  side of the threshold, so on a numeric scale (levels 1-5 scored 0 to 1, say) it is the probability of the
  levels on that side, normalised over the levels the server gave a probability: a judge torn between two
  levels that both say "yes" is sure of its verdict; one torn across the threshold is not. A yes/no rubric
  is the case of two levels: P(yes) or P(no), as before;
- `samples`: N verdicts sampled with distinct seeds; the share that agrees with their majority;
- `simulated_annotators`: K copies of the judge, each shown a different few labelled examples (the paper's
  Simulated Annotators); the verdict with the highest mean probability over the K, that mean its confidence
  (each annotator's probability from its log-probabilities where the server sends them, else its vote: 1 or 0).

`samples` is `simulated_annotators` with identical prompts, so both are one formula here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragmetrics.schema import JudgeDetail

__all__ = ["View", "Voted", "probability_of_positive", "probability_of_yes", "vote"]


@dataclass(frozen=True)
class View:
    """One verdict on an item: the metric's value and its detail (None: this view failed on the item)."""

    value: float
    detail: JudgeDetail


@dataclass(frozen=True)
class Voted:
    """The verdict a judge gives an item (its value, positive or not) and its confidence in it."""

    value: float
    positive: bool
    confidence: float
    detail: JudgeDetail
    stated: bool = True
    """False: the server sent no log-probabilities where they were the confidence's source"""


def probability_of_yes(view: View) -> float | None:
    """P(yes) of a binary verdict from the rating's probabilities (log-probabilities the server sent), or None
    when there are none or the verdict is not yes/no."""
    if len(view.detail.verdicts) != 1:
        return None
    probabilities = view.detail.verdicts[0].get("probabilities")
    if not isinstance(probabilities, dict) or not set(probabilities) <= {"yes", "no"} or not probabilities:
        return None
    yes, no = float(probabilities.get("yes", 0.0)), float(probabilities.get("no", 0.0))
    return yes / (yes + no) if yes + no > 0 else None


def probability_of_positive(view: View, threshold: float) -> float | None:
    """P(score >= threshold) of a rubric verdict on a scale, from its levels' probabilities (the server's
    log-probabilities, normalised over the levels it gave one) and their scores, which the rubric records
    beside them; a yes/no verdict without recorded scores falls back on P(yes) (`probability_of_yes`).

    None when there are no probabilities, or when the verdict's score and its probabilities point to
    different sides (a probability-weighted score below the threshold while most of the probability is on
    levels above it, possible with unevenly scored levels): such a judge states no confidence in its verdict.
    """
    if len(view.detail.verdicts) != 1:
        return None
    item = view.detail.verdicts[0]
    probabilities, scores = item.get("probabilities"), item.get("scores")
    if not isinstance(probabilities, dict) or not probabilities:
        return None
    if not isinstance(scores, dict) or not set(probabilities) <= set(scores):
        return probability_of_yes(view)
    total = sum(float(p) for p in probabilities.values())
    if not total > 0:
        return None
    positive = sum(float(p) for level, p in probabilities.items() if float(scores[level]) >= threshold) / total
    if (view.value >= threshold and positive < 0.5) or (view.value < threshold and positive > 0.5):
        return None
    return positive


def vote(views: Sequence[View], threshold: float, *, need_probabilities: bool) -> Voted | None:
    """The judge's verdict on the views and its confidence in it, as Jung, Brahman & Choi define it for
    Simulated Annotators: c = max over y of the mean over views of P_view(y), the verdict being that argmax.
    A view's P(yes) (`probability_of_positive`: on a numeric scale, of the levels at or above the threshold)
    comes from its log-probabilities where sent, else from its vote (1 or 0), so without any
    probabilities this is the majority vote and the share agreeing with it. The side is chosen by the mean
    probability, not by counting votes: three annotators at P(yes) 0.51, 0.51 and 0.0 say "no" with
    confidence 0.66 (a vote count would say "yes" at 0.34, a confidence below a half for the side chosen).

    `need_probabilities` (the `logprobs` source): a view without log-probabilities gives confidence 0, so its
    verdict is never kept on a confidence the judge did not state. None when there is no view.
    A tie goes to the negative side with confidence 0.5, which no threshold above one half keeps.
    """
    if not views:
        return None
    yes_shares: list[float] = []
    for view in views:
        p_yes = probability_of_positive(view, threshold)
        if p_yes is None and need_probabilities:
            return Voted(view.value, view.value >= threshold, 0.0, view.detail, stated=False)
        yes_shares.append(float(view.value >= threshold) if p_yes is None else p_yes)
    mean_yes = sum(yes_shares) / len(yes_shares)
    positive = mean_yes > 0.5
    confidence = mean_yes if positive else 1.0 - mean_yes
    # the value reported is one of the views on the chosen side (there is one: the mean leans its way, or all
    # tie at exactly one half, where a view at the threshold counts as positive, so take the first then)
    chosen = next((v for v, p in zip(views, yes_shares, strict=True) if (p > 0.5) == positive), views[0])
    return Voted(chosen.value, positive, confidence, chosen.detail, stated=True)
