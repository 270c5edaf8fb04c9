"""A night judged by a cascade (judge.cascade): two scripted OpenAI-compatible servers play a cheap and a strong
judge of a yes/no rubric (real `openai` client, log-probabilities in the replies, faults injected), and the
requests each receives are counted at the server.

80 samples, people say yes to the even ones. The small judge is sure (P = 0.97) and right on c00-c39, unsure
(P = 0.6, always "yes") on the rest; the big judge is sure and right on c00-c67 and unsure and wrong on c68-c79.
With agreement 0.8 and delta 0.2 (0.1 per judge), the small judge is certified at 0.97, the big one at its
sure level: c40-c67 are decided by the big judge, c68-c79 abstained on. Both servers serve one model name: each
member's verdicts are cached under its endpoint too, or the big judge would be answered from the small one's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main
from ragmetrics.judge.cascade.config import labels_needed
from ragmetrics.judge.cascade.run import ABSTAINED
from ragmetrics.nightly.gate import check_regressions
from ragmetrics.schema import ComparisonSettings, NotApplicableScore, Report, RunMetadata, RunResult

from .conftest import ConfigWriter
from .helpers import qa_rows, report_of, write_jsonl

KEY_ENV = "RAGMETRICS_CASCADE_TEST_KEY"
N = 80
HELPFUL = {
    "name": "helpful",
    "type": "rubric",
    "question": "Does the answer help?",
    "reads": ["question", "answer", "style"],
    "scale": {"type": "binary"},
}


def _markers(i: int) -> str:
    truth = "yes" if i % 2 == 0 else "no"
    wrong = "no" if truth == "yes" else "yes"
    sure = "yes=0.97,no=0.03" if truth == "yes" else "yes=0.03,no=0.97"
    small = (
        f"[small@rating:{truth}] [small@probs:{sure}]"
        if i < 40
        else "[small@rating:yes] [small@probs:yes=0.6,no=0.4]"
    )
    if i < 68:
        big = f"[big@rating:{truth}] [big@probs:{sure.replace('0.97', '0.95').replace('0.03', '0.05')}]"
    else:
        unsure = "yes=0.55,no=0.45" if wrong == "yes" else "yes=0.45,no=0.55"
        big = f"[big@rating:{wrong}] [big@probs:{unsure}]"
    return f"[item:c{i:02d}] {small} {big}"


def _rows() -> list[dict[str, Any]]:
    template = qa_rows()
    rows = []
    for i in range(N):
        row = dict(template[i % len(template)])
        row["id"] = f"c{i:02d}"
        row["question"] = f"{row['question']} (case {i})"
        row["style"] = _markers(i)
        rows.append(row)
    return rows


def _setup(qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch,
           labelled: int = N, **judge: Any) -> Path:  # fmt: skip
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-secret")
    write_jsonl(qa_dir / "qa.jsonl", _rows())
    (qa_dir / "helpful.yaml").write_text(yaml.safe_dump(HELPFUL), encoding="utf-8")
    lines = ["sample_id,metric,label"] + [f"c{i:02d},helpful,{1 - i % 2}" for i in range(labelled)]
    (qa_dir / "labels.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    small, big = servers
    settings: dict[str, Any] = {
        "backend": "openai",
        "api_key_env": KEY_ENV,
        "cache_path": "cache/verdicts.sqlite",
        "timeout_s": 10,
        "max_retries": 1,
        "metric_files": ["helpful.yaml"],
        "metrics": ["helpful"],
        "cascade": [
            {"name": "small", "model": "judge-model", "base_url": small.url},
            {"name": "big", "model": "judge-model", "base_url": big.url},
        ],
        "agreement": 0.8,
        "delta": 0.2,
        "held_out": 0.25,
        "labels": "labels.csv",
    }
    settings.update(judge)
    return write_config(judge=settings, retrieval={"metrics": ["ndcg@10"]})


def _items(server: Any, status: int | None = 200) -> list[str]:
    """The items a server answered (each request's [item:..] marker), one entry per request."""
    found = []
    for record in server.records:
        if record.prompt == "rubric:helpful" and (status is None or record.status == status):
            m = re.search(r"\[item:(c\d\d)\]", record.user)
            assert m is not None
            found.append(m.group(1))
    return found


def test_the_second_judge_gets_only_the_escalated_items_and_a_rerun_sends_nothing(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _setup(qa_dir, write_config, servers, monkeypatch)
    small, big = servers
    assert main(["run", str(config), "--no-progress"]) == 0
    assert sorted(_items(small)) == [f"c{i:02d}" for i in range(N)]  # every item once
    assert sorted(_items(big)) == [f"c{i:02d}" for i in range(40, N)]  # exactly the escalated ones, once each
    result = next(r for r in report_of(qa_dir / "out").runs if r.name == "pipeline")
    scores = {q: s.get("helpful") for q, s in result.per_query.items()}
    assert all(scores[f"c{i:02d}"] is not None for i in range(68))
    assert all(scores[f"c{i:02d}"] is None for i in range(68, N))  # abstained on: never scored
    abstained = [n for n in result.not_applicable if n.metric == "helpful"]
    assert sorted(n.query_id for n in abstained) == [f"c{i:02d}" for i in range(68, N)]
    assert all(n.reason.startswith(ABSTAINED) for n in abstained)
    summary = result.metadata.extra["cascade:helpful"]
    assert (summary["decided"], summary["abstained"], summary["failed"]) == (68, 12, 0)
    assert summary["coverage"] == pytest.approx(68 / 80)
    assert [j["judge"] for j in summary["judges"]] == ["small", "big"]
    assert summary["judges"][0]["threshold"] == pytest.approx(0.97)
    assert summary["judges"][1]["threshold"] == pytest.approx(0.95)
    assert [j["asked"] for j in summary["judges"]] == [80, 40]
    assert (
        summary["held_out"] == 20 and summary["held_out_agreement"] == 1.0
    )  # every decided verdict is right
    assert result.aggregate["helpful"] == pytest.approx(sum(1 - i % 2 for i in range(68)) / 68, abs=0.05)

    small.reset_records()
    big.reset_records()
    assert main(["run", str(config), "--no-progress"]) == 0
    assert _items(small, status=None) == [] and _items(big, status=None) == []  # all from the cache


def test_a_failed_first_verdict_goes_up_and_the_last_judges_failure_is_recorded(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _setup(qa_dir, write_config, servers, monkeypatch, retry_failed="never")
    small, big = servers
    small.inject("server_error", times=None, match="[item:c10]")  # the small judge never answers c10
    big.inject("server_error", times=None, match="[item:c50]")  # nor the big one c50
    assert main(["run", str(config), "--no-progress"]) in (0, 1)
    assert sorted(set(_items(big, status=None))) == sorted(["c10", *(f"c{i:02d}" for i in range(40, N))])
    assert sorted(_items(big)) == sorted(["c10", *(f"c{i:02d}" for i in range(40, N) if i != 50)])
    result = next(r for r in report_of(qa_dir / "out").runs if r.name == "pipeline")
    assert result.per_query["c10"]["helpful"] == 1.0 or result.per_query["c10"]["helpful"] == pytest.approx(
        0.95
    )
    assert [(f.query_id, f.cause) for f in result.failures if f.metric == "helpful"] == [
        ("c50", "server_error")
    ]
    assert result.metadata.extra["cascade:helpful"]["failed"] == 1
    # each judge's failures are in the night's note, the first judge's too (its items went up, not unsure)
    note = next(n for n in report_of(qa_dir / "out").metadata.notes if n.startswith("cascade helpful:"))
    assert "small: asked about 80 items, 39 decided, 1 failed (sent up the cascade)" in note
    assert ", 1 failed (sent up the cascade) (threshold 0.95)" in note


def test_bad_cascade_input_exits_2_naming_the_key(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    small, big = servers
    config = _setup(qa_dir, write_config, servers, monkeypatch, labels=None)
    assert main(["run", str(config), "--no-progress"]) == 2
    assert "judge.labels: a cascade needs people's labels" in capsys.readouterr().err

    for bad in (0.0, 1.0, 1.5):
        config = _setup(qa_dir, write_config, servers, monkeypatch, agreement=bad)
        assert main(["run", str(config), "--no-progress"]) == 2
        assert "judge.agreement: Input should be" in capsys.readouterr().err

    config = _setup(qa_dir, write_config, servers, monkeypatch,
                    cascade=[{"name": "a", "backend": "vllm", "base_url": small.url}, {"name": "b"}])  # fmt: skip
    assert main(["run", str(config), "--no-progress"]) == 2
    assert "judge.cascade[0].backend: Input should be 'openai' or 'local'" in capsys.readouterr().err

    config = _setup(qa_dir, write_config, servers, monkeypatch,
                    cascade=[{"name": "a", "base_url": small.url}, {"name": "trio", "panel": [{"name": "b"}]}])  # fmt: skip
    assert main(["run", str(config), "--no-progress"]) == 2
    assert "judge.cascade[1].panel: List should have at least 2 items" in capsys.readouterr().err

    needed = labels_needed(0.8, 0.2, 2, 0.25)
    assert needed == 15  # 11 to calibrate (0.8^11 = 0.086 <= 0.1 < 0.8^10 = 0.107), 11 / 0.75 rounded up
    config = _setup(qa_dir, write_config, servers, monkeypatch, labelled=needed - 1)
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert (
        "judge.labels" in err
        and f"has {needed - 1} labelled items" in err
        and f"needs at least {needed}" in err
    )
    assert _items(small, status=None) == [] and _items(big, status=None) == []  # refused before judging
    config = _setup(qa_dir, write_config, servers, monkeypatch, labelled=needed)
    assert main(["run", str(config), "--no-progress"]) in (0, 1)

    # a label of a sample the night does not have is named, not silently left out
    config = _setup(qa_dir, write_config, servers, monkeypatch)
    with (qa_dir / "labels.csv").open("a", encoding="utf-8") as f:
        f.write("nosuch,helpful,1\n")
    assert main(["run", str(config), "--no-progress"]) == 2
    assert f"line {N + 2}" in (err := capsys.readouterr().err) and "unknown sample id 'nosuch'" in err

    # log-probabilities give a yes/no rubric's verdict a confidence; faithfulness has none to give
    config = _setup(qa_dir, write_config, servers, monkeypatch, metrics=["helpful", "faithfulness"])
    small.reset_records()
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "judge.confidence" in err and "'faithfulness' is not a yes/no rubric" in err
    assert _items(small, status=None) == []


def test_the_gate_reads_decided_queries_and_says_how_many_were_abstained() -> None:
    def result(values: list[float | None]) -> RunResult:
        r = RunResult(
            name="a",
            per_query={f"q{i:02d}": {"m": v} for i, v in enumerate(values)},
            not_applicable=[
                NotApplicableScore(query_id=f"q{i:02d}", metric="m", reason=f"{ABSTAINED} (m)")
                for i, v in enumerate(values)
                if v is None
            ],
            metadata=RunMetadata(metrics=["m"], num_queries=len(values)),
        )
        r.recompute_aggregate()
        return r

    high = [0.9, 0.8, 0.95, 0.85, 0.9, 0.7, 0.8, 0.9, 0.75, 0.85, 0.9, 0.8]
    tonight = [None, None, *high[2:]]  # abstained on the first two
    reports = [
        Report(runs=[result(v)], metrics=["m"], settings=ComparisonSettings(test="t", correction="holm"))
        for v in (tonight, high)
    ]
    gate = check_regressions(
        reports[0], reports[1], baseline_source="b.json", thresholds=lambda m: 0.0, test="t"
    )
    assert "a / m: read on the 10 queries decided in both reports; the cascade abstained on 2 tonight, 0 in the " \
           "baseline" in gate.notes  # fmt: skip
    assert not gate.failed  # the same scores on the decided queries: no drop


def test_simulated_annotators_each_see_their_own_examples_and_vote(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three annotators (the judge shown 2 different labelled examples each) per item. The first example of the
    first annotator carries [trait:x] and people's "no": that annotator follows it on every [trait:x] item (the
    scripted judge obeys a matching example), the other two rate them "yes", so those items get "yes" with
    confidence 2/3, and people say "no": the threshold is certified at 1 (all three agree, and are right) and
    the [trait:x] items are abstained on."""
    from ragmetrics.nightly.cascade_night import split_labels

    small, _ = servers
    n, held_out = 40, 0.25
    ids = [f"c{i:02d}" for i in range(n)]
    pool, _, _ = split_labels(ids, held_out, 6)
    trait = {pool[0]} | {sid for i, sid in enumerate(ids) if i % 5 == 0 and sid not in pool}
    truth = {sid: "no" if sid in trait else ("yes" if i % 2 == 0 else "no") for i, sid in enumerate(ids)}
    rows = _rows()[:n]
    for row in rows:
        sid = row["id"]
        rating = "yes" if sid in trait else truth[sid]
        row["style"] = f"[item:{sid}] [rating:{rating}]" + (" [trait:x]" if sid in trait else "")
    config = _setup(qa_dir, write_config, servers, monkeypatch, confidence="simulated_annotators", samples=3,
                    shots=2, held_out=held_out, cascade=[{"name": "small", "model": "m", "base_url": small.url}])  # fmt: skip
    write_jsonl(qa_dir / "qa.jsonl", rows)
    lines = ["sample_id,metric,label"] + [f"{sid},helpful,{int(truth[sid] == 'yes')}" for sid in ids]
    (qa_dir / "labels.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["run", str(config), "--no-progress"]) == 0
    asked = _items(small)
    assert sorted(asked) == sorted(ids * 3)  # each item once per annotator
    result = next(r for r in report_of(qa_dir / "out").runs if r.name == "pipeline")
    summary = result.metadata.extra["cascade:helpful"]
    assert summary["judges"][0]["threshold"] == pytest.approx(1.0)
    abstained = sorted(q.query_id for q in result.not_applicable if q.reason.startswith(ABSTAINED))
    # only a vote split 2 to 1 explains this: the same examples for all three would give confidence 1 either way
    assert abstained == sorted(trait)
    assert summary["held_out_agreement"] == 1.0
    small.reset_records()
    assert main(["run", str(config), "--no-progress"]) == 0
    assert _items(small, status=None) == []  # every annotator's verdicts are cached apart


def test_an_adaptive_night_with_a_cascade_reads_decided_items_and_counts_the_abstained(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, big = servers
    config = _setup(qa_dir, write_config, servers, monkeypatch, adaptive={"batch_size": 20, "seed": 0})
    assert main(["run", str(config), "--no-progress"]) == 0
    report = report_of(qa_dir / "out")
    assert report.metadata.nightly is not None and report.metadata.nightly.adaptive is not None
    not_judged = report.metadata.nightly.adaptive.not_judged
    result = next(r for r in report.runs if r.name == "pipeline")
    asked_small, asked_big = _items(small), _items(big)
    assert len(asked_small) == len(set(asked_small)) and len(asked_big) == len(set(asked_big))  # each once
    assert set(asked_big) == {
        q for q in asked_small if int(q[1:]) >= 40
    }  # only what the small judge passed up
    abstained = {n.query_id for n in result.not_applicable if n.reason.startswith(ABSTAINED)}
    assert abstained == {q for q in asked_small if int(q[1:]) >= 68}
    assert all(result.per_query[q]["helpful"] is None for q in abstained)  # read as no score, never as 0
    assert not set(not_judged) & set(asked_small)  # what was not judged was never sent
    note = next(n for n in report.metadata.notes if n.startswith("cascade helpful:"))
    assert f"{len(abstained)} abstained (never scored)" in note


def test_sampled_confidence_is_the_seeded_verdicts_agreement(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`confidence: samples`: five requests per item with five seeds, each answered by that seed's rating. On
    c00-c29 all five give people's verdict (confidence 1); on c30-c39 three of five give the wrong one (the
    verdict is wrong, its confidence 0.6). Only the laxer level could let the wrong verdicts in, and there the
    record fails the test, so the threshold is 1 and c30-c39 are abstained on. Were the five views one cached
    verdict, or one seed, every item would be decided at confidence 1, the wrong ones included."""
    small, _ = servers
    n = 40
    ids = [f"c{i:02d}" for i in range(n)]
    rows = _rows()[:n]
    for i, row in enumerate(rows):
        truth, wrong = ("yes", "no") if i % 2 == 0 else ("no", "yes")
        seeded = [truth] * 5 if i < 30 else [wrong, wrong, truth, wrong, truth]
        row["style"] = f"[item:{row['id']}] [seeded:{','.join(seeded)}]"
    config = _setup(qa_dir, write_config, servers, monkeypatch, confidence="samples", samples=5, labelled=n,
                    cascade=[{"name": "small", "model": "m", "base_url": small.url}])  # fmt: skip
    write_jsonl(qa_dir / "qa.jsonl", rows)
    assert main(["run", str(config), "--no-progress"]) == 0
    seeds: dict[str, list[int | None]] = {}
    for record in small.records:
        if record.prompt == "rubric:helpful" and record.status == 200:
            m = re.search(r"\[item:(c\d\d)\]", record.user)
            assert m is not None
            seeds.setdefault(m.group(1), []).append(record.seed)
    # each item once per seed: the judge's seed (42 by default) and the four after it
    assert sorted(seeds) == ids and all(sorted(s) == list(range(42, 47)) for s in seeds.values())  # type: ignore[type-var]
    result = next(r for r in report_of(qa_dir / "out").runs if r.name == "pipeline")
    summary = result.metadata.extra["cascade:helpful"]
    assert summary["judges"][0]["threshold"] == pytest.approx(1.0)
    abstained = sorted(q.query_id for q in result.not_applicable if q.reason.startswith(ABSTAINED))
    assert abstained == ids[30:]
    assert all(result.per_query[sid]["helpful"] == float(i % 2 == 0) for i, sid in enumerate(ids[:30]))
    small.reset_records()
    assert main(["run", str(config), "--no-progress"]) == 0
    assert _items(small, status=None) == []  # every seed's verdict cached apart


def test_dry_run_bounds_a_cascades_requests_and_says_it_is_a_bound(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """The night sends 80 requests to the small judge and 40 to the big one (the escalated items). A dry run
    cannot know the 40 before the thresholds are certified: it counts the small judge's 80 exactly and the big
    one's at most 80, and says the 160 is a bound, never a figure below what the night makes."""
    config = _setup(qa_dir, write_config, servers, monkeypatch)
    small, big = servers
    assert main(["run", str(config), "--dry-run", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert _items(small, status=None) == [] and _items(big, status=None) == []  # a dry run sends nothing
    assert "UPPER BOUND" in out and "(small) is asked about every item" in out
    assert "80 requests" in out and "big: at most 80" in out
    assert re.search(r"\b160\b", out)
