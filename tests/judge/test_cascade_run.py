"""The cascade's routing and confidences without a server: scripted judges as plain scorers, so each item's path
up the cascade is known by hand."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragmetrics.judge.base import RagSample
from ragmetrics.judge.cascade.confidence import View, probability_of_yes, vote
from ragmetrics.judge.cascade.run import Stage, abstained_count, run_cascade
from ragmetrics.schema import JudgeDetail, RunMetadata, RunResult, SampleFailure


def _detail(p_yes: float | None) -> JudgeDetail:
    item: dict[str, object] = {"rating": "yes" if (p_yes or 0) >= 0.5 else "no", "reason": "scripted"}
    if p_yes is not None:
        item["probabilities"] = {"yes": p_yes, "no": round(1 - p_yes, 6)}
    return JudgeDetail(verdicts=[item], reason="scripted")


def test_confidence_from_logprobs_samples_and_annotators() -> None:
    sure_no = View(0.1, _detail(0.1))
    assert probability_of_yes(sure_no) == pytest.approx(0.1)
    one = vote([sure_no], 0.5, need_probabilities=True)
    assert one is not None and not one.positive and one.confidence == pytest.approx(0.9)
    # no log-probabilities where they are the source: confidence 0, never kept, said so
    bare = vote([View(1.0, _detail(None))], 0.5, need_probabilities=True)
    assert bare is not None and bare.confidence == 0.0 and not bare.stated
    # repeated sampling: 4 of 5 say yes -> yes with agreement ratio 0.8
    votes = [View(v, _detail(None)) for v in (1.0, 1.0, 0.0, 1.0, 1.0)]
    sampled = vote(votes, 0.5, need_probabilities=False)
    assert sampled is not None and sampled.positive and sampled.confidence == pytest.approx(0.8)
    # simulated annotators with log-probabilities: mean P(majority side) = (0.9 + 0.7 + 0.4) / 3
    annotators = [View(p, _detail(p)) for p in (0.9, 0.7, 0.4)]
    ensemble = vote(annotators, 0.5, need_probabilities=False)
    assert ensemble is not None and ensemble.positive
    assert ensemble.confidence == pytest.approx((0.9 + 0.7 + 0.4) / 3)
    tie = vote([View(1.0, _detail(None)), View(0.0, _detail(None))], 0.5, need_probabilities=False)
    assert tie is not None and not tie.positive and tie.confidence == 0.5


def _samples(n: int) -> list[RagSample]:
    return [RagSample(id=f"s{i:02d}", question=f"q {i}?", answer="a") for i in range(n)]


class _Scripted:
    """A judge whose P(yes) per sample is given; `fail` samples get a failure; it records what it was asked."""

    def __init__(self, p_yes: dict[str, float], fail: Sequence[str] = ()) -> None:
        self.p_yes, self.fail, self.asked = p_yes, set(fail), []  # type: ignore[var-annotated]

    def __call__(self, run: str, samples: Sequence[RagSample], metric: str) -> list[RunResult]:
        self.asked.extend(s.id for s in samples)
        result = RunResult(name=run, metadata=RunMetadata(metrics=[metric], kind="judge"))
        for s in samples:
            if s.id in self.fail:
                result.per_query[s.id] = {metric: None}
                result.failures.append(
                    SampleFailure(query_id=s.id, metric=metric, cause="timeout", message="t")
                )
            else:
                p = self.p_yes[s.id]
                result.per_query[s.id] = {metric: p}
                result.details[s.id] = {metric: _detail(p)}
        return [result]


def test_items_go_up_only_when_unconfident_and_the_rest_is_abstained() -> None:
    n = 60
    samples = _samples(n)
    truth = {s.id: float(i % 2 == 0) for i, s in enumerate(samples)}
    # judge 1: sure and right on s00-s29, unsure on the rest; judge 2: sure and right on s30-s49, unsure after
    first = _Scripted({s: (0.98 if t else 0.02) if i < 30 else 0.6 for i, (s, t) in enumerate(truth.items())})
    second = _Scripted({s: (0.96 if t else 0.04) if i < 50 else 0.55 for i, (s, t) in enumerate(truth.items())},
                       fail=["s45"])  # fmt: skip
    labels = {("r", s): t for s, t in truth.items()}
    calibration = {("r", f"s{i:02d}") for i in range(n) if i % 4 != 0}  # 45 calibrate, 15 held out
    out, report = run_cascade(
        [Stage("one", first), Stage("two", second)], {"r": samples}, "m", labels, calibration,
        target=0.8, delta=0.2,
    )  # fmt: skip
    assert sorted(first.asked) == [s.id for s in samples]  # each once: calibration's verdicts are reused
    assert sorted(second.asked) == [f"s{i:02d}" for i in range(30, n)]  # exactly the escalated ones, once
    assert [s.threshold.threshold for s in report.stages] == [0.98, 0.96]
    result = out["r"]
    assert all(result.per_query[f"s{i:02d}"]["m"] is not None for i in range(45))
    assert result.per_query["s45"]["m"] is None and result.failures[0].query_id == "s45"
    assert [n.query_id for n in result.not_applicable] == [f"s{i:02d}" for i in range(50, n)]
    assert abstained_count(result, "m") == 10 and report.abstained == 10 and report.failed == 1
    assert report.decided == 49 and report.coverage == pytest.approx(49 / 59)
    held_out_decided = [i for i in range(0, 50, 4) if i != 45]
    assert report.held_out == 15 and report.held_out_decided == len(held_out_decided)
    assert report.held_out_agreement == 1.0
    assert "decided by two" in result.details["s40"]["m"].reason  # type: ignore[operator]


def test_without_enough_calibration_nothing_is_certified_and_everything_abstains() -> None:
    samples = _samples(10)
    judge = _Scripted({s.id: 0.99 for s in samples})
    labels = {("r", s.id): 1.0 for s in samples}
    out, report = run_cascade([Stage("one", judge)], {"r": samples}, "m", labels, set(labels),
                              target=0.9, delta=0.1)  # fmt: skip
    assert report.stages[0].threshold.threshold is None  # 10 < 22 perfect labels needed
    assert report.decided == 0 and abstained_count(out["r"], "m") == 10
    assert out["r"].aggregate["m"] is None


def test_a_panel_step_is_confident_by_its_members_agreement() -> None:
    """Three members, no log-probabilities: all agree on s00-s29 (and are right), split 2 to 1 on the rest (the
    majority wrong). Confidence by spread: 1 then 2/3; certified at 1, the split items go on to the last judge
    even though `logprobs` is the cascade's source (a panel's agreement needs none)."""
    n = 60
    samples = _samples(n)
    truth = {s.id: float(i % 2 == 0) for i, s in enumerate(samples)}

    def member(flip: bool) -> _Scripted:
        def verdict(i: int, t: float) -> float:
            if i < 30:
                return t
            return t if flip else 1.0 - t

        return _Scripted({s: verdict(i, t) for i, (s, t) in enumerate(truth.items())})

    members = [member(False), member(False), member(True)]

    def panel(run: str, items: Sequence[RagSample], metric: str) -> list[RunResult]:
        results = [m(run, items, metric)[0] for m in members]
        for result in results:  # votes only: no probabilities in the details
            result.details = {q: {metric: JudgeDetail(verdicts=[{"rating": "x"}])} for q in result.per_query}
        return results

    last = _Scripted({s: (0.97 if t else 0.03) for s, t in truth.items()})
    labels = {("r", s): t for s, t in truth.items()}
    _, report = run_cascade(
        [Stage("trio", panel, spread=True), Stage("last", last)], {"r": samples}, "m", labels, set(labels),
        target=0.8, delta=0.2,
    )  # fmt: skip
    assert report.stages[0].threshold.threshold == 1.0 and report.stages[0].decided == 30
    assert sorted(last.asked) == [f"s{i:02d}" for i in range(30, n)]
    assert report.stages[0].unstated == 0  # a spread needs no log-probabilities


def test_annotators_verdict_is_the_side_with_the_highest_mean_probability() -> None:
    """Jung et al.'s Simulated Annotators: c = max_y mean_k P_k(y). Two annotators barely for yes and one sure
    of no give "no" at (0.49 + 0.49 + 1.0) / 3, not a vote count's "yes" at a confidence below one half."""
    annotators = [View(p, _detail(p)) for p in (0.51, 0.51, 0.0)]
    voted = vote(annotators, 0.5, need_probabilities=False)
    assert voted is not None and not voted.positive
    assert voted.confidence == pytest.approx((0.49 + 0.49 + 1.0) / 3)
    assert voted.value == 0.0  # the value of a view on the side chosen


class _Unstating(_Scripted):
    """A judge that sends no log-probabilities for the samples in `bare` (their verdicts carry none)."""

    def __init__(self, p_yes: dict[str, float], bare: Sequence[str]) -> None:
        super().__init__(p_yes)
        self.bare = set(bare)

    def __call__(self, run: str, samples: Sequence[RagSample], metric: str) -> list[RunResult]:
        results = super().__call__(run, samples, metric)
        for sid in self.bare & {s.id for s in samples}:
            results[0].details[sid] = {metric: _detail(None)}
        return results


def test_a_verdict_without_log_probabilities_is_never_kept_even_where_every_verdict_is_right() -> None:
    """The first judge is sure and right everywhere, but states no probability on 6 of 60 items. Their
    confidence is unknown, not zero: counted at 0 in the calibration, a laxest threshold of 0 would be
    certified (every verdict is right) and keep them on a confidence never stated. They go up the cascade."""
    samples = _samples(60)
    truth = {s.id: float(i % 2 == 0) for i, s in enumerate(samples)}
    bare = [f"s{i:02d}" for i in range(0, 60, 10)]
    first = _Unstating({s: 0.98 if t else 0.02 for s, t in truth.items()}, bare)
    second = _Scripted({s: 0.97 if t else 0.03 for s, t in truth.items()})
    labels = {("r", s): t for s, t in truth.items()}
    out, report = run_cascade([Stage("one", first), Stage("two", second)], {"r": samples}, "m", labels,
                              set(labels), target=0.8, delta=0.2)  # fmt: skip
    assert report.stages[0].threshold.threshold == pytest.approx(0.98)
    assert sorted(second.asked) == bare  # exactly the verdicts without a stated confidence went up
    assert report.stages[0].unstated == 6 and report.stages[0].decided == 54
    # 6 items cannot certify the second judge (11 are needed at 0.8 / 0.1): abstained on, never scored
    assert all(out["r"].per_query[s]["m"] is None for s in bare) and abstained_count(out["r"], "m") == 6
