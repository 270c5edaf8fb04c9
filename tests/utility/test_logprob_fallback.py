"""A server that refuses `logprobs` (HTTP 400) during a `--logprobs` utility build, with the real `openai` client
at the scripted loopback server: the refused request is asked again without logprobs and the build goes on
without them; every pair says why it has no probability of abstaining (never a made-up one), one warning says
so, the requests are counted at the server, a resumed build repeats nothing, and a later build at a server that
returns logprobs asks again rather than reuse an answer that had none."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import DISTINCT_PAIRS, PASSAGES, QUESTIONS, runs, write_inputs

from ragmetrics.cli.main import main
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.utility import Budget, OpenAIGenerator, build_utility, plan_utility, read_folder


def _generator(server: Any, logprobs: bool = True) -> OpenAIGenerator:
    return OpenAIGenerator(model="test-model", base_url=server.url, timeout_s=5.0, logprobs=logprobs)


def _sent(server: Any) -> tuple[int, int, int]:
    """(refused with logprobs, answered with logprobs, answered without) at the server."""
    asked = [r for r in server.records if r.prompt == "rag_answer"]
    refused = sum(1 for r in asked if r.status == 400 and r.logprobs and r.fault == "refuse_logprobs")
    with_lp = sum(1 for r in asked if r.status == 200 and r.logprobs)
    plain = sum(1 for r in asked if r.status == 200 and not r.logprobs)
    assert refused + with_lp + plain == len(asked)
    return refused, with_lp, plain


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and "logprobs" in r.getMessage()
    ]


def test_a_refusing_server_falls_back_once_and_every_pair_says_why(
    server: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server.state.refuse_logprobs = True
    cache = tmp_path / "answers.sqlite"
    with caplog.at_level(logging.WARNING, logger="ragmetrics.utility"):
        result = build_utility(
            QUESTIONS, PASSAGES, runs(), _generator(server), k=3, cache=VerdictCache(cache), concurrency=4
        )
    # one refused request, that pair asked again without logprobs, every other pair without them at once
    assert _sent(server) == (1, 0, DISTINCT_PAIRS)
    assert result.requests == DISTINCT_PAIRS + 1
    assert len(_warnings(caplog)) == 1
    assert not result.failed and all(j.grade is not None for j in result.judgments)
    assert all(j.p_abstain is None and j.p_abstain_missing == "logprobs_refused" for j in result.judgments)
    assert result.abstention() is None  # no probability is made up
    assert result.provenance["logprobs_refused"] and result.provenance["refused_requests"] == 1
    counts = result.counts()
    assert counts["with_p_abstain"] == 0
    assert counts["without_p_abstain"] == {"logprobs_refused": DISTINCT_PAIRS}
    folder = result.write(tmp_path / "out")
    assert not (folder / "abstention.jsonl").exists()
    rows = [json.loads(line) for line in (folder / "judgments.jsonl").read_text().splitlines()]
    assert {r["p_abstain_missing"] for r in rows} == {"logprobs_refused"} and len(rows) == DISTINCT_PAIRS
    assert all(r["p_abstain"] is None for r in rows)  # null, never NaN nor a number
    manifest = json.loads((folder / "utility.json").read_text())
    assert manifest["counts"]["without_p_abstain"] == {"logprobs_refused": DISTINCT_PAIRS}
    assert manifest["provenance"]["logprobs_refused"]
    assert manifest["files"]["abstention"] is None
    assert read_folder(folder).judgments[0].p_abstain_missing == "logprobs_refused"

    # the dry run says which requests a build answered without logprobs (sending nothing)
    server.reset_records()
    plan = plan_utility(QUESTIONS, PASSAGES, runs(), _generator(server), k=3, cache=VerdictCache(cache))
    # every pair to ask again (the server may return logprobs by now), and the one refused request at most
    assert (plan.requests, plan.cached_without_logprobs, plan.refused_request) == (
        DISTINCT_PAIRS + 1, DISTINCT_PAIRS, 1
    )
    assert _sent(server) == (0, 0, 0)
    # a rerun at the same refusing server: one refused probe, confirmed by the cached answer, nothing repeated
    again = build_utility(QUESTIONS, PASSAGES, runs(), _generator(server), k=3, cache=VerdictCache(cache))
    assert _sent(server) == (1, 0, 0) and again.requests == 1
    assert all(j.cached for j in again.judgments) and again.grades() == result.grades()

    # a later build at a server that returns logprobs does not take those answers for ones that had them
    server.state.refuse_logprobs = False
    server.reset_records()
    capable = build_utility(QUESTIONS, PASSAGES, runs(), _generator(server), k=3, cache=VerdictCache(cache))
    assert _sent(server) == (0, DISTINCT_PAIRS, 0)
    probabilities = capable.abstention()
    assert probabilities is not None and len(probabilities) == DISTINCT_PAIRS
    assert probabilities.p_abstain("q3", "q3-a") == pytest.approx(0.3, abs=1e-12)
    assert capable.counts()["without_p_abstain"] == {}
    # and a build that never asks for logprobs reuses the answers the fallback got, which are what it asks
    server.reset_records()
    plain = build_utility(
        QUESTIONS, PASSAGES, runs(), _generator(server, logprobs=False), k=3, cache=VerdictCache(cache)
    )
    assert _sent(server) == (0, 0, 0) and all(j.cached for j in plain.judgments)
    assert plain.counts()["without_p_abstain"] == {"not_asked": DISTINCT_PAIRS}


def test_a_budget_sized_to_the_dry_run_pays_for_every_pair_at_a_refusing_server(
    server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dry run is an upper bound: with logprobs asked it counts the one request a refusing server answers
    with HTTP 400 (before, it counted the pairs only, and a budget of exactly that many requests, or of exactly
    its cost bound, left one pair `budget_reached` at a refusing server)."""
    server.state.refuse_logprobs = True
    priced = {"price_in": 1.0, "price_out": 2.0}
    plan = plan_utility(QUESTIONS, PASSAGES, runs(),
                        OpenAIGenerator(model="test-model", base_url=server.url, logprobs=True, **priced), k=3)  # fmt: skip
    assert (plan.requests, plan.within_budget, plan.refused_request) == (DISTINCT_PAIRS + 1, DISTINCT_PAIRS + 1, 1)
    for budget in (Budget(max_requests=plan.requests), Budget(max_cost=plan.cost_bound)):
        server.reset_records()
        generator = OpenAIGenerator(model="test-model", base_url=server.url, logprobs=True, **priced)
        built = build_utility(QUESTIONS, PASSAGES, runs(), generator, k=3, budget=budget, concurrency=1)
        assert not built.failed and _sent(server) == (1, 0, DISTINCT_PAIRS), budget
    # a generator that never asks for logprobs has no such request to count
    plain = plan_utility(QUESTIONS, PASSAGES, runs(), _generator(server, logprobs=False), k=3)
    assert (plain.requests, plain.refused_request) == (DISTINCT_PAIRS, 0)
    # and the command's dry run says what it counted
    paths = write_inputs(tmp_path / "in")
    base = [
        "utility", str(paths["first"]), str(paths["second"]), "--questions", str(paths["questions"]),
        "--passages", str(paths["passages"]), "-o", str(tmp_path / "out"), "--k", "3",
        "--generator", "openai", "--model", "test-model", "--base-url", server.url, "--dry-run",
    ]  # fmt: skip
    assert main([*base, "--logprobs", "--max-requests", str(DISTINCT_PAIRS)]) == 0
    err = capsys.readouterr().err
    assert f"{DISTINCT_PAIRS + 1} requests to send at most (one of them the request a server refusing logprobs" in err
    assert f"the budget pays for {DISTINCT_PAIRS};" in err
    assert main(base) == 0
    assert f"{DISTINCT_PAIRS} requests to send (cost" in capsys.readouterr().err


def test_resume_after_the_fallback_asks_only_what_is_missing(server: Any, tmp_path: Path) -> None:
    server.state.refuse_logprobs = True
    cache = tmp_path / "answers.sqlite"
    # a build cut short by its budget: the refused request, then 7 answers without logprobs
    cut = build_utility(
        QUESTIONS, PASSAGES, runs(), _generator(server), k=3, cache=VerdictCache(cache),
        budget=Budget(max_requests=8), concurrency=1,
    )  # fmt: skip
    assert _sent(server) == (1, 0, 7) and cut.failed == {"budget_reached": DISTINCT_PAIRS - 7}
    assert cut.counts()["without_p_abstain"] == {"logprobs_refused": 7}
    server.reset_records()
    rest = build_utility(
        QUESTIONS, PASSAGES, runs(), _generator(server), k=3, cache=VerdictCache(cache), concurrency=4
    )
    refused, with_lp, plain = _sent(server)
    # one refused request (the first goes alone, whatever the concurrency), then only the missing pairs
    assert refused == 1 and with_lp == 0 and plain == DISTINCT_PAIRS - 7
    assert not rest.failed and sum(j.cached for j in rest.judgments) == 7
    assert rest.counts()["without_p_abstain"] == {"logprobs_refused": DISTINCT_PAIRS}
    # every pair sent without logprobs once over both builds: nothing repeated
    assert rest.requests == refused + plain


def test_a_bad_request_that_is_not_about_logprobs_stays_that_pairs_failure(
    server: Any, tmp_path: Path
) -> None:
    server.inject("bad_request", times=None, match="thing number 2")  # q2's asks, with logprobs or not
    cache = VerdictCache(tmp_path / "a.db")
    result = build_utility(QUESTIONS, PASSAGES, runs(), _generator(server), k=3, cache=cache, concurrency=1)
    assert result.failed == {"bad_request": 3}
    assert all("with logprobs and without" in str(j.message) for j in result.judgments if j.cause)
    # logprobs stay on for the others: they have their probability
    others = [j for j in result.judgments if j.query_id != "q2"]
    assert all(j.p_abstain is not None and math.isfinite(j.p_abstain) for j in others)
    assert "logprobs_refused" not in result.counts()["without_p_abstain"]
    assert result.provenance["logprobs_refused"] is None


def test_the_cli_build_says_it_once(
    server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    server.state.refuse_logprobs = True
    paths = write_inputs(tmp_path / "in")
    out = tmp_path / "utility"
    with caplog.at_level(logging.WARNING, logger="ragmetrics.utility"):
        code = main([
            "utility", str(paths["first"]), str(paths["second"]), "--questions", str(paths["questions"]),
            "--passages", str(paths["passages"]), "-o", str(out), "--k", "3", "--generator", "openai",
            "--model", "test-model", "--base-url", server.url, "--logprobs", "--concurrency", "1",
        ])  # fmt: skip
    assert code == 0
    assert len(_warnings(caplog)) == 1  # the CLI leaves logging to Python's default: one line on stderr
    printed = capsys.readouterr()
    assert "failed:" not in printed.err
    assert json.loads(printed.out.splitlines()[0])["without_p_abstain"] == {
        "logprobs_refused": DISTINCT_PAIRS
    }
    manifest = json.loads((out / "utility.json").read_text())
    assert manifest["counts"]["scored"] == DISTINCT_PAIRS
    assert manifest["counts"]["without_p_abstain"] == {"logprobs_refused": DISTINCT_PAIRS}


def test_a_night_at_a_refusing_server_says_so_in_its_notes(server: Any, tmp_path: Path) -> None:
    import yaml

    from ragmetrics.nightly.pipeline import run_pipeline

    server.state.refuse_logprobs = True
    data = {
        "name": "utility at a refusing server",
        "dataset": {"builtin": "pydocs", "limit": 3},
        "retrieval": {"metrics": ["ndcg@3"]},
        "runs": [{"source": "dataset", "name": "pipeline"}],
        "output": {"dir": "out", "plots": False, "formats": ["json"]},
        "progress": False,
        "utility_qrels": {
            "k": 3,
            "generator": "openai",
            "openai": {"model": "test-model", "base_url": server.url, "logprobs": True},
        },
    }
    config = tmp_path / "night.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    outcome = run_pipeline(config, write=False)
    assert _sent(server) == (1, 0, 9)  # 3 questions x top 3, one refused request first
    (run,) = outcome.report.runs
    stored = run.metadata.extra["utility_qrels"]
    assert (
        stored["counts"]["without_p_abstain"] == {"logprobs_refused": 9} and stored["with_p_abstain"] is False
    )
    assert stored["qrels"]["utility"]["logprobs_refused"]
    assert any("answered HTTP 400 to a request with logprobs" in n and "(9 pairs" in n for n in outcome.notes)
    assert any(
        n.startswith("qrels of utility/utility.qrels:") and "refused logprobs" in n for n in outcome.notes
    )
    assert any("udcg uses u = 1" in n for n in outcome.notes)


def test_a_first_pair_failing_on_its_own_leaves_the_next_request_alone(server: Any, tmp_path: Path) -> None:
    """The build's first pair fails for a cause of its own (a 400 with logprobs and without): the server's
    answer to logprobs is still unknown, so the next request with them goes alone too, and a refusing server
    still sees one refused request, whatever the concurrency."""
    server.state.refuse_logprobs = True
    server.inject("bad_request", times=None, match="Thing number 1 is answer 1.")  # q1-a only: the first pair
    result = build_utility(
        QUESTIONS,
        PASSAGES,
        runs(),
        _generator(server),
        k=3,
        cache=VerdictCache(tmp_path / "a.db"),
        concurrency=4,
    )
    asked = [r for r in server.records if r.prompt == "rag_answer"]
    refused = sum(1 for r in asked if r.fault == "refuse_logprobs")
    assert refused == 1 and result.provenance["logprobs_refused"]
    assert result.failed == {"bad_request": 1}
    assert sum(1 for r in asked if r.status == 200 and not r.logprobs) == DISTINCT_PAIRS - 1


def test_a_night_mixing_cached_probabilities_with_refused_pairs_says_how_udcg_counts_them(
    server: Any, tmp_path: Path
) -> None:
    """Answers with a probability cached from a server that gave them, beside pairs answered after a refusal:
    udcg reads the probabilities it has and a pair without one adds nothing to its sum but counts (the
    reference code's rule); the night says that, never that udcg uses u = 1 for those pairs."""
    import yaml

    from ragmetrics.nightly.pipeline import run_pipeline

    def night(k: int) -> Path:
        data = {
            "name": "utility, probabilities from an earlier night",
            "dataset": {"builtin": "pydocs", "limit": 3},
            "retrieval": {"metrics": ["udcg@3"]},
            "runs": [{"source": "dataset", "name": "pipeline"}],
            "output": {"dir": "out", "plots": False, "formats": ["json"]},
            "progress": False,
            "utility_qrels": {
                "k": k,
                "cache": "answers.sqlite",
                "generator": "openai",
                "openai": {"model": "test-model", "base_url": server.url, "logprobs": True},
            },
        }
        path = tmp_path / f"night{k}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return path

    run_pipeline(night(2), write=False)  # the top 2 answered with their probabilities, cached
    server.state.refuse_logprobs = True
    outcome = run_pipeline(night(3), write=False)  # the third passage of each question: refused
    stored = outcome.report.runs[0].metadata.extra["utility_qrels"]
    assert stored["with_p_abstain"] is True and stored["counts"]["without_p_abstain"] == {
        "logprobs_refused": 3
    }
    assert not any("u = 1" in n for n in outcome.notes), outcome.notes
    assert any("adds nothing to udcg's sum" in n and "3 pairs" in n for n in outcome.notes), outcome.notes
