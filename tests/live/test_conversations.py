"""A sampled later turn of a live conversation is judged with its earlier turns, sampled or not, scored polls
ago or not, exactly as `score --traces` judges the same spans; turns of ended conversations are forgotten."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.live import Watcher
from ragmetrics.live.config import WatchConfig
from ragmetrics.traces import read_traces

from .helpers import FACTS, append, trace

T0 = 1_800_000_000.0


def _turn(n: int, start: float, session: str, question: str, context: str, answer: str, *, error: bool) -> dict[str, Any]:
    request = trace(n, start, session=session, error=error)
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for span in spans:
        for attr in span["attributes"]:
            if attr["key"] == "input.value":
                attr["value"]["stringValue"] = json.dumps({"question": question})
            elif attr["key"] == "output.value":
                attr["value"]["stringValue"] = answer
            elif attr["key"] == "retrieval.documents.0.document.content":
                attr["value"]["stringValue"] = context
    return request


def _config(tmp_path: Path, path: Path, **conversations: Any) -> WatchConfig:
    return WatchConfig.model_validate({
        "source": {"kind": "otlp_file", "path": str(path), "settle_s": 0},
        # rate 0: only traces with an error are judged, so turn 1 is never sampled, turn 3 always
        "sampling": {"rate": 0.0, "always": {"errors": True}},
        "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": None},
        "window": "1d", "output": str(tmp_path / "live"), "conversations": conversations or {},
    })  # fmt: skip


def test_a_later_turn_is_judged_with_its_earlier_turns_across_polls(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    restated = FACTS[0]  # turn 3 restates what turn 1 retrieved; its own contexts are about the library
    append(path, [_turn(1, T0, "s1", "When did the harbour bridge open?", FACTS[0], FACTS[0], error=False)])
    watcher = Watcher(_config(tmp_path, path), say=lambda _m: None, clock=lambda: T0 + 100)
    first = watcher.poll(final=True)
    assert first.decided == 1 and first.sampled == 0  # not judged; its spans are gone, its turn is kept
    append(path, [_turn(2, T0 + 60, "s1", "And the library?", FACTS[1], FACTS[1], error=False),
                  _turn(3, T0 + 120, "s1", "Remind me about the bridge?", FACTS[1], restated, error=True),
                  _turn(4, T0 + 130, "s2", "Remind me about the bridge?", FACTS[1], restated, error=True)])  # fmt: skip
    second = watcher.poll(final=True)
    assert second.sampled == 2
    scores = dict(watcher.store.db.execute("SELECT trace_id, value FROM scores WHERE metric = 'faithfulness'").fetchall())
    watcher.close()
    turn3, alone = scores[f"{3:032x}"], scores[f"{4:032x}"]
    assert turn3 is not None and alone is not None and turn3 > alone  # s2 has no earlier turn to lean on
    # the same spans, read whole by score --traces' reader: the same faithfulness for the later turn
    samples = read_traces(path).samples
    offline = evaluate_rag(samples, ["faithfulness"], LocalJudge(), progress=False)
    assert offline.per_query[f"{3:032x}"]["faithfulness"] == turn3
    assert offline.per_query[f"{4:032x}"]["faithfulness"] == alone


def test_turns_of_ended_conversations_are_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    append(path, [_turn(1, T0, "old", "When did the harbour bridge open?", FACTS[0], FACTS[0], error=False)])
    now = [T0 + 10]
    watcher = Watcher(_config(tmp_path, path, keep="30m", max_turns=2), say=lambda _m: None, clock=lambda: now[0])
    watcher.poll(final=True)
    assert watcher.store.db.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == 1
    append(path, [_turn(n, T0 + 10 * n, "busy", "And the library?", FACTS[1], FACTS[1], error=False) for n in range(2, 6)])
    now[0] = T0 + 3600  # an hour later: "old" ended more than 30 minutes ago
    watcher.poll(final=True)
    kept = watcher.store.db.execute("SELECT session, COUNT(*) FROM turns GROUP BY session").fetchall()
    watcher.close()
    assert kept == [("busy", 2)]  # the latest two turns of the live conversation, none of the ended one
