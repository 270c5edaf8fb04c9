"""Agreement between people, and the judge beside it: the ceiling a judge's agreement with people is read against.

A judge at kappa 0.6 with one person may be poor, or as good as people get: only a second person tells. With
several labellers per item this module gives, per metric:

- **percent agreement**: the share of agreeing pairs of labels on an item, averaged over items with two or more;
- **Cohen's kappa** for exactly two labellers (their shared items), **Fleiss' kappa** for any number (items with
  two or more labels; with unequal numbers per item, each item's agreement over its own pairs and the category
  shares over all labels, the usual generalisation), both on categories (nominal);
- **Krippendorff's alpha** at the level the labels have (nominal, ordinal, interval), missing labels allowed:
  1 - D_o / D_e over the coincidence matrix o_ck = sum_u (pairs of values c, k in unit u) / (m_u - 1), with
  D_o = sum o_ck d2_ck / n and D_e = sum n_c n_k d2_ck / (n (n - 1)); d2 is 1 for c != k (nominal),
  (c - k)^2 (interval), or (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 (ordinal, over the values' own ranks);

each with a percentile bootstrap interval over items (items are what was sampled; labellers are fixed), and the
items people disagree on.

**The judge beside the people** (`judge_vs_people`): on the items two or more people labelled, the mean over
pairs of people of their pairwise alpha (the people's agreement with each other) against the mean over people
of the judge's pairwise alpha with each (the judge's agreement with them), both from the same bootstrap
resamples of items, so their difference has an interval too. The judge is "within the people's own
disagreement" when that interval holds 0, above it when the interval is above 0, below it when below.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ragmetrics.trust.agreement import Estimate, cohen_kappa

__all__ = [
    "JudgeBesidePeople",
    "Level",
    "PeopleAgreement",
    "fleiss_kappa",
    "judge_vs_people",
    "krippendorff_alpha",
    "people_agreement",
    "percent_agreement",
]

Level = Literal["nominal", "ordinal", "interval"]
Standing = Literal["within", "above", "below", "unknown"]
Ratings = Mapping[str, Mapping[str, float]]
"""labeller -> item -> label."""


def _matrix(reliability: ArrayLike) -> NDArray[np.float64]:
    data = np.asarray(reliability, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError("reliability data must be labellers x items (NaN where a labeller gave no label)")
    if np.isinf(data).any():
        raise ValueError("labels must be finite (NaN marks a missing label)")
    return data


def krippendorff_alpha(reliability: ArrayLike, level: Level = "nominal") -> float:
    """Krippendorff's alpha of `reliability` (labellers x items, NaN missing) at `level` (module docstring);
    NaN when fewer than two pairable values or a single value throughout (no expected disagreement)."""
    data = _matrix(reliability)
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be nominal, ordinal or interval, not {level!r}")
    values = np.unique(data[~np.isnan(data)])
    if values.size < 2:
        return math.nan
    index = {v: i for i, v in enumerate(values.tolist())}
    k = values.size
    coincidence = np.zeros((k, k))
    for unit in data.T:
        present = unit[~np.isnan(unit)]
        m = present.size
        if m < 2:
            continue
        counts = np.zeros(k)
        for v in present.tolist():
            counts[index[v]] += 1
        coincidence += (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    totals = coincidence.sum(axis=1)
    n = totals.sum()
    if n <= 1:
        return math.nan
    d2 = _distances(values, totals, level)
    observed = float((coincidence * d2).sum()) / n
    expected = float((np.outer(totals, totals) * d2).sum()) / (n * (n - 1))
    return math.nan if expected == 0 else 1.0 - observed / expected


def _distances(values: NDArray[np.float64], totals: NDArray[np.float64], level: Level) -> NDArray[np.float64]:
    c, k = np.indices((values.size, values.size))
    if level == "nominal":
        nominal: NDArray[np.float64] = (c != k).astype(np.float64)
        return nominal
    if level == "interval":
        interval: NDArray[np.float64] = (values[c] - values[k]) ** 2
        return interval
    cumulative = np.concatenate(([0.0], np.cumsum(totals)))
    low, high = np.minimum(c, k), np.maximum(c, k)
    between = cumulative[high + 1] - cumulative[low]
    ordinal: NDArray[np.float64] = (between - (totals[c] + totals[k]) / 2) ** 2
    return ordinal


def _category_counts(data: NDArray[np.float64]) -> NDArray[np.float64]:
    """items x categories: how many labellers gave each item each category (items with two or more labels)."""
    values = np.unique(data[~np.isnan(data)])
    counts = np.stack([(data == v).sum(axis=0) for v in values], axis=1).astype(np.float64)
    shared: NDArray[np.float64] = counts[counts.sum(axis=1) >= 2]
    return shared


def fleiss_kappa(reliability: ArrayLike) -> float:
    """Fleiss' kappa of labellers x items (NaN missing) on categories (module docstring); NaN when undefined."""
    counts = _category_counts(_matrix(reliability))
    if counts.shape[0] == 0:
        return math.nan
    per_item = counts.sum(axis=1)
    agreement = ((counts * (counts - 1)).sum(axis=1) / (per_item * (per_item - 1))).mean()
    shares = counts.sum(axis=0) / per_item.sum()
    chance = float((shares**2).sum())
    return math.nan if chance >= 1.0 else float((agreement - chance) / (1.0 - chance))


def percent_agreement(reliability: ArrayLike) -> float:
    """The share of agreeing pairs of labels on an item, averaged over items with two or more labels."""
    counts = _category_counts(_matrix(reliability))
    if counts.shape[0] == 0:
        return math.nan
    per_item = counts.sum(axis=1)
    return float(((counts * (counts - 1)).sum(axis=1) / (per_item * (per_item - 1))).mean())


def _two_labellers_kappa(data: NDArray[np.float64]) -> float:
    """Cohen's kappa of the two labellers on their shared items; NaN where it is undefined (no shared item, or
    one category throughout: chance agreement is total and kappa is 0/0, as scikit-learn has it)."""
    both = ~np.isnan(data).any(axis=0)
    if both.sum() < 1:
        return math.nan
    first, second = data[0, both], data[1, both]
    categories: list[Hashable] = sorted(set(first.tolist()) | set(second.tolist()))
    if len(categories) < 2:
        return math.nan
    return cohen_kappa(first.tolist(), second.tolist(), categories)


def _why_undefined(data: NDArray[np.float64], statistic: str) -> str:
    """Why `statistic` has no value on these labellers x items (shared items only)."""
    if data.shape[1] == 0:
        return "no item has labels from two or more people"
    if statistic == "cohen" and not (~np.isnan(data).any(axis=0)).any():
        return "the two people labelled no item in common"
    values = np.unique(data[~np.isnan(data)])
    if values.size < 2:
        return (f"every label is {values[0]:g}: agreement expected by chance is total, so the chance-corrected "
                "statistic is 0/0 (undefined, not 1)")  # fmt: skip
    return "too few items for the statistic"


@dataclass(frozen=True)
class PeopleAgreement:
    """Agreement between people on one metric (module docstring)."""

    items: int
    labellers: tuple[str, ...]
    level: Level
    percent: Estimate | None
    fleiss: Estimate | None
    alpha: Estimate | None
    cohen: Estimate | None = None
    disagreements: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    undefined: dict[str, str] = field(default_factory=dict)
    """statistic (`schema.AGREEMENT_STATISTICS`' keys) -> why it has no value here (never printed as a number)."""


def _reliability(ratings: Ratings) -> tuple[list[str], list[str], NDArray[np.float64]]:
    labellers = sorted(ratings)
    items = sorted({item for by_item in ratings.values() for item in by_item})
    data = np.full((len(labellers), len(items)), np.nan)
    where = {item: i for i, item in enumerate(items)}
    for row, labeller in enumerate(labellers):
        for item, value in ratings[labeller].items():
            data[row, where[item]] = value
    return labellers, items, data


def _bootstrap(
    stat: Callable[[NDArray[np.float64]], float],
    data: NDArray[np.float64],
    *,
    resamples: int,
    seed: int,
    confidence: float,
) -> Estimate | None:
    value = stat(data)
    if not math.isfinite(value):
        return None
    rng = np.random.default_rng(seed)
    n = data.shape[1]
    draws = np.array([stat(data[:, rng.integers(0, n, size=n)]) for _ in range(resamples)])
    draws = draws[np.isfinite(draws)]
    if draws.size < resamples // 2:
        return Estimate(value, math.nan, math.nan)
    alpha = 1.0 - confidence
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return Estimate(value, float(low), float(high))


def people_agreement(
    ratings: Ratings,
    *,
    level: Level = "nominal",
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PeopleAgreement:
    """Agreement between the labellers of `ratings` (labeller -> item -> label) on the items two or more of them
    labelled; percent agreement and the kappas read labels as categories, alpha at `level`."""
    labellers, items, data = _reliability(ratings)
    shared = (~np.isnan(data)).sum(axis=0) >= 2
    data = data[:, shared]
    items = [item for item, keep in zip(items, shared, strict=True) if keep]

    def boot(stat: Callable[[NDArray[np.float64]], float]) -> Estimate | None:
        if not items:
            return None
        return _bootstrap(stat, data, resamples=resamples, seed=seed, confidence=confidence)

    disagreements = [
        (item, {labellers[r]: float(data[r, c]) for r in range(len(labellers)) if not math.isnan(data[r, c])})
        for c, item in enumerate(items)
        if np.unique(data[~np.isnan(data[:, c]), c]).size > 1
    ]
    estimates = {
        "percent": boot(percent_agreement),
        "fleiss": boot(fleiss_kappa),
        "alpha": boot(lambda d: krippendorff_alpha(d, level)),
        "cohen": boot(_two_labellers_kappa) if len(labellers) == 2 else None,
    }
    undefined = {name: _why_undefined(data, name) for name, value in estimates.items()
                 if value is None and (name != "cohen" or len(labellers) == 2)}  # fmt: skip
    return PeopleAgreement(
        items=len(items),
        labellers=tuple(labellers),
        level=level,
        percent=estimates["percent"],
        fleiss=estimates["fleiss"],
        alpha=estimates["alpha"],
        cohen=estimates["cohen"],
        disagreements=disagreements,
        undefined=undefined,
    )


@dataclass(frozen=True)
class JudgeBesidePeople:
    """The judge's mean pairwise alpha with each person beside the people's with each other, on the same items."""

    items: int
    level: Level
    people: Estimate | None
    judge: Estimate | None
    difference: Estimate | None
    """judge minus people."""

    @property
    def standing(self) -> Standing:
        """'within', 'above' or 'below' the people's own disagreement ('unknown' without an interval)."""
        d = self.difference
        if d is None or not (math.isfinite(d.low) and math.isfinite(d.high)):
            return "unknown"
        if d.low > 0:
            return "above"
        return "below" if d.high < 0 else "within"

    def sentence(self) -> str:
        def text(e: Estimate | None) -> str:
            return "undefined" if e is None else f"{e.value:.2f} [{e.low:.2f}, {e.high:.2f}]"

        where = {
            "within": "the judge is within the people's own disagreement",
            "above": "the judge agrees with people more than they agree with each other",
            "below": "the judge agrees with people less than they agree with each other",
            "unknown": ("the people's agreement with each other is undefined here, so where the judge stands "
                        "cannot be told" if self.people is None else "too few items to tell where the judge stands"),
        }[self.standing]
        return (f"judge vs people alpha {text(self.judge)}; people vs each other {text(self.people)} "
                f"({self.items} items labelled by two or more): {where}")  # fmt: skip


def _mean_pairwise(data: NDArray[np.float64], pairs: Sequence[tuple[int, int]], level: Level) -> float:
    values = [krippendorff_alpha(data[[a, b]], level) for a, b in pairs]
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan


def judge_vs_people(
    ratings: Ratings,
    judge: Mapping[str, float],
    *,
    level: Level = "nominal",
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> JudgeBesidePeople:
    """The judge beside the people (module docstring): `judge` item -> the judge's label on the same scale as
    the people's (categories for nominal and ordinal)."""
    labellers, items, data = _reliability(ratings)
    shared = ((~np.isnan(data)).sum(axis=0) >= 2) & np.array([item in judge for item in items], dtype=bool)
    data = data[:, shared]
    kept = [item for item, keep in zip(items, shared, strict=True) if keep]
    full = np.vstack([data, np.array([[judge[item] for item in kept]])])
    people_pairs = list(combinations(range(len(labellers)), 2))
    judge_pairs = [(len(labellers), person) for person in range(len(labellers))]
    if not kept:
        return JudgeBesidePeople(0, level, None, None, None)
    rng = np.random.default_rng(seed)
    n = len(kept)
    columns = [np.arange(n)] + [rng.integers(0, n, size=n) for _ in range(resamples)]
    people = np.array([_mean_pairwise(full[:, c], people_pairs, level) for c in columns])
    judged = np.array([_mean_pairwise(full[:, c], judge_pairs, level) for c in columns])
    alpha = 1.0 - confidence

    def estimate(values: NDArray[np.float64]) -> Estimate | None:
        if not math.isfinite(values[0]):
            return None
        draws = values[1:][np.isfinite(values[1:])]
        if draws.size < resamples // 2:
            return Estimate(float(values[0]), math.nan, math.nan)
        low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
        return Estimate(float(values[0]), float(low), float(high))

    return JudgeBesidePeople(n, level, estimate(people), estimate(judged), estimate(judged - people))
