"""A cascade whose first judge's server sends only the sampled token's log-probability (`top_logprobs` empty, or
holding that token alone), as servers that ignore `top_logprobs` do.

Normalised over the one level it names, such a log-probability is a probability of 1 for every verdict: a
confidence that says nothing. Before, the cascade read it as certainty, certified the first judge at 1.0 and let
it decide every item, its wrong verdicts among them. Now such a verdict states no confidence (as one without
log-probabilities): it goes up the cascade, and the night's note counts it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmetrics.cli.main import main

from .conftest import ConfigWriter
from .helpers import qa_rows, report_of, write_jsonl
from .test_cascade_night import N, _items, _setup

WRONG_FROM = 76
"""The first judge is right on c00-c75 and wrong on the rest: 95 %, enough to be certified at a fake 1.0."""


def _rows() -> list[dict[str, Any]]:
    rows = []
    for i, template in enumerate(qa_rows() * (N // len(qa_rows()) + 1)):
        if i == N:
            break
        truth = "yes" if i % 2 == 0 else "no"
        said = truth if i < WRONG_FROM else ("no" if truth == "yes" else "yes")
        sure = "yes=0.97,no=0.03" if truth == "yes" else "yes=0.03,no=0.97"
        row = dict(template)
        row["id"] = f"c{i:02d}"
        row["question"] = f"{row['question']} (case {i})"
        row["style"] = (f"[item:c{i:02d}] [small@rating:{said}] [small@probs:yes=0.7,no=0.3] "
                        f"[big@rating:{truth}] [big@probs:{sure}]")  # fmt: skip
        rows.append(row)
    return rows


@pytest.mark.parametrize("sent", [0, 1])
def test_a_server_sending_only_the_sampled_tokens_logprob_states_no_confidence(
    qa_dir: Path,
    write_config: ConfigWriter,
    servers: Any,
    monkeypatch: pytest.MonkeyPatch,
    sent: int,
) -> None:
    small, big = servers
    small.state.top_logprobs_sent = sent
    config = _setup(qa_dir, write_config, servers, monkeypatch)
    write_jsonl(qa_dir / "qa.jsonl", _rows())
    assert main(["run", str(config), "--no-progress"]) == 0
    summary = next(r for r in report_of(qa_dir / "out").runs if r.name == "pipeline").metadata.extra[
        "cascade:helpful"
    ]
    first, second = summary["judges"]
    assert first["threshold"] is None and first["decided"] == 0  # never certified nor kept on a fake 1.0
    assert first["without_logprobs"] == N
    assert sorted(_items(big)) == [f"c{i:02d}" for i in range(N)]  # every item went up to the big judge
    assert second["decided"] == N and summary["held_out_agreement"] == 1.0
    note = next(n for n in report_of(qa_dir / "out").metadata.notes if n.startswith("cascade helpful:"))
    assert f"{N} stated no confidence (no log-probabilities, or only the sampled token's" in note
