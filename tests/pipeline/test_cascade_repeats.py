"""`judge.repeats` with a cascade: each step's views asked that many times (seeds apart), voted on together.

The guarantee is unchanged: a step's verdict and its confidence are read from all its requests by one rule,
in calibration and in routing alike, so fixed-sequence testing certifies the threshold on the combined
verdict. A cascade beside a top-level `judge.panel` stays refused, pointing to a panel step.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.cli.main import main
from ragmetrics.judge.cascade.run import ABSTAINED
from ragmetrics.judge.settings import JudgeSettings

from .conftest import ConfigWriter, _load_loopback
from .helpers import report_of, write_jsonl
from .test_cascade_night import _rows, _setup

SURE = {"yes": "yes=0.97,no=0.03", "no": "yes=0.03,no=0.97"}
LEANING = {"yes": "yes=0.9,no=0.1", "no": "yes=0.1,no=0.9"}


@pytest.fixture
def server() -> Any:
    module = _load_loopback()
    if module is None:
        pytest.skip("tests/judge/loopback.py is not in this checkout")
    small = module.LoopbackServer().start()
    yield small
    small.stop()


def _seeds(server: Any) -> dict[str, list[int | None]]:
    out: dict[str, list[int | None]] = {}
    for record in server.records:
        if record.prompt == "rubric:helpful" and record.status == 200:
            m = re.search(r"\[item:(c\d\d)\]", record.user)
            assert m is not None
            out.setdefault(m.group(1), []).append(record.seed)
    return out


N = 40
IDS = [f"c{i:02d}" for i in range(N)]


def _two_faced(qa_dir: Path, write_config: ConfigWriter, server: Any, monkeypatch: pytest.MonkeyPatch,
               **judge: Any) -> Path:  # fmt: skip
    """The night of the test below: right and sure on c00-c29, two-faced by seed on c30-c39."""
    rows = _rows()[:N]
    for i, row in enumerate(rows):
        truth, wrong = ("yes", "no") if i % 2 == 0 else ("no", "yes")
        if i < 30:
            row["style"] = f"[item:{row['id']}] [rating:{truth}] [probs:{SURE[truth]}]"
        else:
            row["style"] = (f"[item:{row['id']}] [seeded:{wrong},{truth}] "
                            f"[seeded-probs:{SURE[wrong]}|{LEANING[truth]}]")  # fmt: skip
    config = _setup(qa_dir, write_config, (server, server), monkeypatch, labelled=N, repeats=2,
                    cascade=[{"name": "small", "model": "m", "base_url": server.url}], **judge)  # fmt: skip
    write_jsonl(qa_dir / "qa.jsonl", rows)
    return config


def test_repeats_are_voted_on_together_before_the_confidence_test(
    qa_dir: Path, write_config: ConfigWriter, server: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """40 items, people say yes to the even ones. On c00-c29 the judge is right and sure (P = 0.97) at every
    seed. On c30-c39 its first request (seed 42) is wrong at P = 0.97, its second (seed 43) right at 0.9: voted
    together, P(right) = (0.03 + 0.9) / 2, so the combined verdict is the wrong side at confidence 0.535. The
    threshold is certified at 0.97 and c30-c39 are abstained on. Read from one request, the wrong verdicts sat
    at the right ones' 0.97 and the judge earned no threshold at all."""
    config = _two_faced(qa_dir, write_config, server, monkeypatch)

    assert main(["run", str(config), "--dry-run", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "(small) is asked about every item, its calibration items among them: 80 requests" in " ".join(out.split())
    assert server.records == []

    assert main(["run", str(config), "--no-progress"]) == 0
    seeds = _seeds(server)
    assert sorted(seeds) == IDS and all(sorted(s) == [42, 43] for s in seeds.values())  # type: ignore[type-var]
    result = next(r for r in report_of(qa_dir / "out").runs if r.name == "pipeline")
    summary = result.metadata.extra["cascade:helpful"]
    assert summary["judges"][0]["threshold"] == pytest.approx(0.97)
    abstained = sorted(q.query_id for q in result.not_applicable if q.reason.startswith(ABSTAINED))
    assert abstained == IDS[30:]
    assert all(round(result.per_query[sid]["helpful"] or -1.0) == float(i % 2 == 0) for i, sid in enumerate(IDS[:30]))
    assert summary["held_out_agreement"] == 1.0

    server.reset_records()
    assert main(["run", str(config), "--no-progress"]) == 0
    assert _seeds(server) == {}  # each repeat's verdict cached apart


def test_an_adaptive_night_votes_a_cascades_repeats_too(
    qa_dir: Path, write_config: ConfigWriter, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _two_faced(qa_dir, write_config, server, monkeypatch, adaptive={"batch_size": 10, "seed": 0})
    assert main(["run", str(config), "--no-progress"]) == 0
    seeds = _seeds(server)
    assert all(sorted(s) == [42, 43] for s in seeds.values())  # type: ignore[type-var]  # each repeat once
    report = report_of(qa_dir / "out")
    result = next(r for r in report.runs if r.name == "pipeline")
    assert result.metadata.extra["cascade:helpful"]["judges"][0]["threshold"] == pytest.approx(0.97)
    abstained = {q.query_id for q in result.not_applicable if q.reason.startswith(ABSTAINED)}
    assert abstained == {q for q in seeds if q >= "c30"}  # the two-faced items it judged, and only those


def test_a_cascade_beside_a_panel_is_refused_pointing_to_a_panel_step(
    qa_dir: Path, write_config: ConfigWriter, server: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    config = _setup(qa_dir, write_config, (server, server), monkeypatch,
                    panel={"members": [{"name": "a", "base_url": server.url}, {"name": "b", "base_url": server.url,
                                                                                   "model": "other"}]})  # fmt: skip
    assert main(["run", str(config), "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "judge.cascade with judge.panel: a cascade's step can itself be a panel" in err
    assert "{name: trio, panel: [member, member, member]}" in err and "drop judge.panel" in err
    assert server.records == []


def test_repeated_views_keep_repeat_zero_and_never_share_a_seed() -> None:
    from ragmetrics.nightly.cascade_estimate import repeated_views

    views = [JudgeSettings(seed=42 + r) for r in range(3)]  # a step's `samples` views
    repeated = repeated_views(views, 2)
    assert [(v, s.seed) for v, s in repeated] == [(0, 42), (1, 43), (2, 44), (0, 45), (1, 46), (2, 47)]
    assert all(s.repeats == 1 for _, s in repeated)
    assert repeated_views([JudgeSettings(seed=None)], 1)[0][1].seed is None  # repeat 0: the view as it is
