"""A cascade under a request budget: one cap over all its judges, and its calibration inside the budget.

The scripted servers of test_cascade_night (a small judge sure and right on c00-c39, unsure on c40-c79; a big
judge) count every request they receive, each retry included. A budget (`judge.adaptive.max_calls`, or the
judge's own hard cap `judge.max_requests`) caps the requests of the whole cascade: before, each judge of the
cascade had the whole budget to itself, and the calibration that certifies the thresholds was sent before the
adaptive night's budget was ever checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmetrics.cli.main import main
from ragmetrics.judge.cascade.run import ABSTAINED

from .conftest import ConfigWriter
from .helpers import report_of
from .test_cascade_night import N, _setup

CALIBRATING = 60  # 80 labelled items, a quarter held out
BOUND = 2 * CALIBRATING  # both judges counted on every calibration item


def _requests(*servers: Any) -> int:
    """Every chat request the servers received, whatever its answer (a refused or retried one costs too)."""
    return sum(s.count(path="/v1/chat/completions") for s in servers)


def test_an_adaptive_cascade_shares_its_budget_over_its_judges_retries_included(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """The big judge answers each item's first two requests with 429 (retried at once): the 30 calibration
    items that go up to it take 90 requests, the small judge's 60 beside them. The planned bound (120) fits
    the budget of 130, so the night starts; the cap shared by both judges stops it at 130 requests, and says
    the calibration was cut short. With a cap per judge, each judge stayed under 130 and together they sent
    150."""
    small, big = servers
    for i in range(40, N):
        big.inject("rate_limit", times=2, match=f"[item:c{i:02d}]")
    config = _setup(qa_dir, write_config, servers, monkeypatch, max_retries=3, breaker_failures=10_000,
                    adaptive={"batch_size": 20, "seed": 0, "max_calls": 130})  # fmt: skip
    code = main(["run", str(config), "--no-progress"])
    assert _requests(small, big) <= 130
    assert code == 2
    err = capsys.readouterr().err
    assert "judge.adaptive.max_calls: the budget of 130 requests was spent while calibrating the cascade" in err
    assert "nothing more is judged" in err


def test_a_budget_too_small_for_the_calibration_is_refused_before_anything_is_sent(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    small, big = servers
    config = _setup(qa_dir, write_config, servers, monkeypatch,
                    adaptive={"batch_size": 20, "seed": 0, "max_calls": BOUND - 1})  # fmt: skip
    # the dry run prices the calibration against the budget and says the night will refuse it
    assert main(["run", str(config), "--dry-run", "--no-progress"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (f"the cascade's calibration ({CALIBRATING} labelled items) is judged before the first question and "
            f"counts against the budget: at most {BOUND} requests (the first judge's {CALIBRATING}), of "
            f"judge.adaptive.max_calls {BOUND - 1}: MORE than judge.adaptive.max_calls {BOUND - 1} allows") in out  # fmt: skip
    assert main(["run", str(config), "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"judge.adaptive.max_calls: {BOUND - 1} requests cannot cover the cascade's calibration" in err
    assert f"on its {CALIBRATING} labelled calibration items may take up to {BOUND} requests" in err
    assert f"the first judge's {CALIBRATING}" in err and f"at least {BOUND}" in err
    assert _requests(small, big) == 0  # refused, not overspent

    def cascade(big_price: bool = True) -> list[dict[str, Any]]:  # fresh mappings: no YAML aliases written
        def priced() -> dict[str, Any]:
            return {"price_per_million_tokens": {"prompt": 1.0, "completion": 1.0}}

        return [{"name": "small", "model": "judge-model", "base_url": small.url, **priced()},
                {"name": "big", "model": "judge-model", "base_url": big.url, **(priced() if big_price else {})}]  # fmt: skip

    # each judge priced by its own member keys (none at the top of judge:): the calibration's bound in USD
    config = _setup(qa_dir, write_config, servers, monkeypatch, cascade=cascade(),
                    adaptive={"batch_size": 20, "seed": 0, "max_cost": 1e-6})  # fmt: skip
    assert main(["run", str(config), "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "judge.adaptive.max_cost: 1e-06 USD cannot cover the cascade's calibration" in err
    assert _requests(small, big) == 0
    # a judge without a price: the budget could never be checked, said before anything is sent
    config = _setup(qa_dir, write_config, servers, monkeypatch, cascade=cascade(big_price=False),
                    adaptive={"batch_size": 20, "seed": 0, "max_cost": 1.0})  # fmt: skip
    assert main(["run", str(config), "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "judge.adaptive.max_cost needs a price for every judge of the cascade" in err and "on 'big'" in err
    assert _requests(small, big) == 0

    # a budget the calibration fits: it is counted in the night's usage, within the budget, and said so
    config = _setup(qa_dir, write_config, servers, monkeypatch,
                    adaptive={"batch_size": 20, "seed": 0, "max_calls": 150})  # fmt: skip
    assert main(["run", str(config), "--no-progress"]) == 0
    sent = _requests(small, big)
    report = report_of(qa_dir / "out")
    assert report.metadata.nightly is not None and report.metadata.nightly.adaptive is not None
    assert sent <= 150 and report.metadata.nightly.adaptive.calls == sent
    note = next(n for n in report.metadata.notes if n.startswith("cascade calibration:"))
    # small on every calibration item, big on the calibration items it passed up (c40-c79 among them)
    assert f"on {CALIBRATING} labelled items (planned at most {BOUND})" in note
    spent = int(note.split(":")[1].split()[0])
    assert CALIBRATING < spent < BOUND and "judge.adaptive.max_calls 150" in note


def test_the_judges_hard_cap_is_one_cap_over_the_whole_cascade(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`judge.max_requests: 50` on a night of 80 items: 15 calibration items (20 labels) leave 35 requests;
    the small judge spends them, the items past them go up and find the budget spent. Capped per judge, the
    big judge had 50 more of its own (100 in all)."""
    small, big = servers
    config = _setup(qa_dir, write_config, servers, monkeypatch, labelled=20, max_requests=50)
    # exit 3: more failures than max_failure_rate allows (the budget's, each recorded)
    assert main(["run", str(config), "--no-progress"]) in (0, 1, 3)
    assert _requests(small, big) == 50
    result = next(r for r in report_of(qa_dir / "out").runs if r.name == "pipeline")
    stopped = [f for f in result.failures if f.metric == "helpful"]
    assert stopped and {f.cause for f in stopped} == {"budget_reached"}  # recorded per sample, never dropped
    decided = [q for q, s in result.per_query.items() if s.get("helpful") is not None]
    abstained = [n for n in result.not_applicable if n.reason.startswith(ABSTAINED)]
    assert len(decided) + len(abstained) + len(stopped) == N
