"""A cascade step whose views (repeats, samples, annotators) only partly answer an item gives no verdict on it.

The threshold is certified on the vote of all of a step's views; a vote of the views that happened to answer is
another rule, with other confidences (one view of a `samples` step is always unanimous), which the guarantee
says nothing about. Such an item goes up the cascade, as a failed one does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmetrics.cli.main import main
from ragmetrics.judge.cascade.run import ABSTAINED
from ragmetrics.nightly.cascade_labels import split_labels

from .conftest import ConfigWriter, _load_loopback
from .helpers import report_of, write_jsonl
from .test_cascade_night import _rows, _setup
from .test_cascade_repeats import LEANING, SURE

N = 40
IDS = [f"c{i:02d}" for i in range(N)]


@pytest.fixture
def server() -> Any:
    module = _load_loopback()
    if module is None:
        pytest.skip("tests/judge/loopback.py is not in this checkout")
    small = module.LoopbackServer().start()
    yield small
    small.stop()


def test_an_item_one_repeat_failed_on_is_not_decided_by_the_other_alone(
    qa_dir: Path, write_config: ConfigWriter, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As test_cascade_repeats: right and sure on c00-c29; on c30-c39 seed 42 is right at P 0.9 and seed 43
    wrong at 0.97, so voted together they are wrong at 0.535 and the threshold is certified at 0.97. On the
    held-out two-faced items the seed-42 request is refused (HTTP 400): seed 43's wrong verdict alone sits at
    0.97, and was kept as if the step had voted, a wrong verdict decided under a threshold never certified for
    it."""
    _, held, _ = split_labels(IDS, 0.25, 0)
    hit = sorted(sid for sid in held if sid >= "c30")
    assert hit  # the split is by hash: c32 and c36
    rows = _rows()[:N]
    for i, row in enumerate(rows):
        truth, wrong = ("yes", "no") if i % 2 == 0 else ("no", "yes")
        if i < 30:
            row["style"] = f"[item:{row['id']}] [rating:{truth}] [probs:{SURE[truth]}]"
        else:
            row["style"] = (f"[item:{row['id']}] [seeded:{truth},{wrong}] "
                            f"[seeded-probs:{LEANING[truth]}|{SURE[wrong]}]")  # fmt: skip
    config = _setup(qa_dir, write_config, (server, server), monkeypatch, labelled=N, repeats=2,
                    cascade=[{"name": "small", "model": "m", "base_url": server.url}])  # fmt: skip
    write_jsonl(qa_dir / "qa.jsonl", rows)
    for sid in hit:  # the first request about each: seed 42's (a step's views are asked one after another)
        server.inject("bad_request", times=1, match=f"[item:{sid}]")
    assert main(["run", str(config), "--no-progress"]) in (0, 3)
    result = next(r for r in report_of(qa_dir / "out").runs if r.name == "pipeline")
    summary = result.metadata.extra["cascade:helpful"]
    assert summary["judges"][0]["threshold"] == pytest.approx(0.97)
    for sid in hit:
        assert result.per_query[sid]["helpful"] is None  # not decided on one view
    failed = sorted(f.query_id for f in result.failures if f.metric == "helpful")
    assert failed == hit and {f.cause for f in result.failures} == {"bad_request"}  # recorded with its cause
    abstained = {q.query_id for q in result.not_applicable if q.reason.startswith(ABSTAINED)}
    assert abstained == set(IDS[30:]) - set(hit)
    assert summary["held_out_agreement"] == 1.0
