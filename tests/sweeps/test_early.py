"""Early dropping by anytime-valid betting sequences: clear losers go, the best never does."""

from __future__ import annotations

import numpy as np

from ragmetrics.sweep.early import Race


def _batches(
    scores: dict[str, np.ndarray], size: int
) -> list[tuple[dict[str, dict[str, float | None]], list[str]]]:
    n = len(next(iter(scores.values())))
    out = []
    for start in range(0, n, size):
        qids = [f"q{i}" for i in range(start, min(n, start + size))]
        out.append(({k: {q: float(v[int(q[1:])]) for q in qids} for k, v in scores.items()}, qids))
    return out


def test_a_clear_loser_is_dropped_and_the_best_is_kept() -> None:
    rng = np.random.default_rng(1)
    good = rng.uniform(0.6, 1.0, 80)
    scores = {"best": good, "near": np.clip(good - 0.02, 0, 1), "bad": good * 0.1}
    race = Race(list(scores), alpha=0.05)
    for batch, qids in _batches(scores, 4):
        race.feed({k: batch[k] for k in race.alive}, qids)
    assert [d.name for d in race.drops] == ["bad"]
    assert race.drops[0].after < 80 and race.drops[0].high < 0
    assert race.alive == ["best", "near"]


def test_the_best_survives_many_looks_when_every_configuration_is_equal() -> None:
    rng = np.random.default_rng(4)
    drops = 0
    for _ in range(8):
        common = rng.uniform(0, 1, 60)
        scores = {f"c{i}": np.clip(common + rng.normal(0, 0.2, 60), 0, 1) for i in range(6)}
        race = Race(list(scores), alpha=0.05)
        for batch, qids in _batches(scores, 2):  # a look after every second question
            race.feed({k: batch[k] for k in race.alive}, qids)
        drops += len(race.drops)
    assert drops == 0
