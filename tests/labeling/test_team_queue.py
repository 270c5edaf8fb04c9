"""A labelling queue for several people: overlap, holds that run out and are handed on, a late label refused,
no item labelled more than its k, adjudication of disagreements, and tokens that keep each person to their own
labels (over HTTP, against the real server)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.errors import InputError
from ragmetrics.labeling.server import TOKEN_HEADER, LabelServer
from ragmetrics.labeling.session import LabelSession
from ragmetrics.labeling.team import Overlap, Reassigned, TeamQueue, parse_overlap
from ragmetrics.trust.labels import load_labels

from .helpers import make_report


def _queue(tmp_path: Path, names: list[str], overlap: Overlap, **kw: Any) -> TeamQueue:
    make_report(tmp_path / "report", count=20)
    session = LabelSession(tmp_path / "report", "faithfulness", tmp_path / "labels.jsonl")
    return TeamQueue(session, names, overlap=overlap, **kw)


def _label_all(queue: TeamQueue, who: str, value: float = 1.0) -> int:
    done = 0
    while (position := queue.next_for(who)) is not None:
        queue.label(who, position, value)
        done += 1
    return done


def test_every_item_gets_exactly_the_labels_its_overlap_asks(tmp_path: Path) -> None:
    queue = _queue(tmp_path, ["ann", "bob", "cyd"], parse_overlap("2:0.25"))
    assert sorted(queue.required.values()).count(2) == 5  # 25 % of 20
    # they take turns asking, as three people at once would
    while any((p := queue.next_for(who)) is not None and queue.label(who, p, 1.0) for who in ("ann", "bob", "cyd")):
        pass
    assert queue.complete()
    labels = load_labels(tmp_path / "labels.jsonl").labels
    per_item: dict[str, list[str]] = {}
    for label in labels:
        per_item.setdefault(label.sample_id, []).append(str(label.labeller))
    assert {s: len(v) for s, v in per_item.items()} == queue.required
    assert all(len(set(v)) == len(v) for v in per_item.values())  # k different people


def test_a_hold_runs_out_the_item_is_handed_on_and_a_late_label_refused(tmp_path: Path) -> None:
    queue = _queue(tmp_path, ["ann", "bob"], Overlap(1, 1.0), lease_s=0.2)
    held = queue.next_for("ann")
    assert held == 0 and queue.next_for("ann") == 0  # asking again: the same held item
    assert queue.next_for("bob") == 1  # ann holds 0
    queue.label("bob", 1, 0.0)
    time.sleep(0.3)  # ann stopped; her hold ran out
    assert queue.next_for("bob") == 0  # ann's item, handed on
    with pytest.raises(Reassigned, match="handed to someone else"):
        queue.label("ann", 0, 1.0)
    queue.label("bob", 0, 1.0)
    labels = load_labels(tmp_path / "labels.jsonl").labels
    assert sorted((lab.sample_id, lab.labeller) for lab in labels) == sorted(
        [(queue.order[0], "bob"), (queue.order[1], "bob")]
    )


def test_the_adjudicator_decides_disagreements(tmp_path: Path) -> None:
    queue = _queue(tmp_path, ["ann", "bob", "cyd"], Overlap(2, 1.0), adjudicator="cyd")
    assert _label_all(queue, "ann", 1.0) == 20
    assert _label_all(queue, "bob", 0.0) == 20  # every item disagrees
    assert not queue.complete()  # the disagreements wait for the adjudicator
    assert _label_all(queue, "cyd", 1.0) == 20  # each disagreement goes to cyd once
    assert queue.next_for("ann") is None and queue.next_for("cyd") is None
    labels = load_labels(tmp_path / "labels.jsonl", adjudication="cyd")
    assert set(v.value for v in labels.for_metric("faithfulness", "pipeline").values()) == {1.0}


def test_bad_team_settings_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="K:SHARE"):
        parse_overlap("two")
    with pytest.raises(InputError, match="at least 3 labellers"):
        _queue(tmp_path, ["ann", "bob"], Overlap(3, 1.0))
    with pytest.raises(InputError, match="distinct"):
        _queue(tmp_path, ["ann", "ann"], Overlap(1, 1.0))
    with pytest.raises(InputError, match="adjudicator"):
        _queue(tmp_path, ["ann", "bob"], Overlap(1, 1.0), adjudicator="dan")


def _call(url: str, token: str | None, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token is not None:
        headers[TOKEN_HEADER] = token
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), headers=headers,
                                     method="POST" if body is not None else "GET")  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_tokens_keep_each_labeller_to_their_own_labels(tmp_path: Path) -> None:
    queue = _queue(tmp_path, ["ann", "bob"], Overlap(2, 1.0))
    server = LabelServer(queue.session, team=queue).start()
    try:
        ann = next(t for t, n in queue.tokens.items() if n == "ann")
        bob = next(t for t, n in queue.tokens.items() if n == "bob")
        assert queue.link(server.url, "ann").endswith(f"#token={ann}")
        assert _call(server.url + "api/status", None)[0] == 403  # reads need a token too
        assert _call(server.url + "api/status", "not-a-token")[0] == 403
        status, body = _call(server.url + "api/next", ann)
        position = body["position"]
        status, body = _call(server.url + "api/label", ann, {"position": position, "value": 1})
        assert status == 200 and body["status"]["labeller"] == "ann" and body["status"]["labelled"] == 1
        # bob sees the item without ann's label; his own label is his, whatever the body says
        status, item = _call(server.url + f"api/item/{position}", bob)
        assert status == 200 and item["label"] is None and "score" not in item and "reason" not in item
        status, _ = _call(server.url + "api/label", bob, {"position": position, "value": 0, "labeller": "ann"})
        assert status == 200
        ratings = load_labels(tmp_path / "labels.jsonl").ratings("faithfulness", "pipeline")
        sample = queue.order[position]
        assert ratings["ann"][sample] == 1.0 and ratings["bob"][sample] == 0.0
        assert _call(server.url + f"api/item/{position}", ann)[1]["label"] == 1.0
    finally:
        server.stop()


def test_two_labellers_one_of_them_the_adjudicator_still_complete(tmp_path: Path) -> None:
    queue = _queue(tmp_path, ["ann", "cyd"], Overlap(2, 1.0), adjudicator="cyd")
    assert _label_all(queue, "ann", 1.0) == 20
    assert _label_all(queue, "cyd", 0.0) == 20  # the second label of every item: cyd's, which also decides
    assert queue.complete()


def test_the_adjudicator_is_never_one_of_the_k_while_others_can_give_them(tmp_path: Path) -> None:
    # three people, k = 2 on half the items, cyd adjudicates: cyd asking first must not take a doubled item's
    # first label (before: 5 of 17 doubled items had cyd among their two, its own disagreements decided by nobody)
    queue = _queue(tmp_path, ["ann", "bob", "cyd"], parse_overlap("2:0.5"), adjudicator="cyd")
    while any((p := queue.next_for(who)) is not None and queue.label(who, p, 1.0 if who == "ann" else 0.0)
              for who in ("cyd", "ann", "bob")):  # fmt: skip
        pass
    assert queue.complete()
    by_item: dict[str, dict[str, float]] = {}
    for label in load_labels(tmp_path / "labels.jsonl").labels:
        by_item.setdefault(label.sample_id, {})[str(label.labeller)] = label.value
    doubled = [s for s, k in queue.required.items() if k == 2]
    assert doubled and all(set(by_item[s]) >= {"ann", "bob"} for s in doubled)  # the two are never cyd
    assert all("cyd" in by_item[s] for s in doubled)  # every doubled item disagreed: cyd decided each


def test_a_labeller_who_stops_holding_an_item_does_not_stall_the_queue(tmp_path: Path) -> None:
    queue = _queue(tmp_path, ["ann", "bob", "cyd"], Overlap(2, 1.0), lease_s=0.3, adjudicator="cyd")
    held = queue.next_for("ann")  # ann takes an item and never comes back
    assert held is not None
    deadline = time.monotonic() + 10
    while not queue.complete() and time.monotonic() < deadline:
        progressed = False
        for who in ("bob", "cyd"):
            position = queue.next_for(who)
            if position is not None:
                queue.label(who, position, 1.0)
                progressed = True
        if not progressed:
            time.sleep(0.1)  # what the page does: wait while others hold items, then ask again
    assert queue.complete(), "the queue stalled on the stopped labeller's items"
