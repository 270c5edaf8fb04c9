"""A labelling queue for several people (`ragmetrics label ... --labellers ann,bob,cyd`).

Each labeller gets a link of their own carrying a token (in the URL's fragment, so it never reaches a log or a
Referer header); every request of the page carries it and the server answers as that labeller only: their own
labels, their own progress, never another's label and never the judge's verdict before they answer.

**Overlap.** Every item of the queue needs k labels from k different people: `overlap` "2:0.2" gives 20 % of
the items (chosen by the seed, spread over the labelling order) two labels and the rest one; "2" gives every
item two. Items are handed out in the session's order (stratified by the judge's score), each to a person who
has not labelled it, while its labels plus the hands-out still running are fewer than k.

**Leases.** An item handed out is held for `lease_s`; a person who stops (closed tab, killed browser, lunch)
loses the hold when it runs out and the item goes to the next person who asks. A label is accepted from a
person who holds the item, or who does not but whose label still fits (labels plus others' holds below k):
an item is never labelled more than k times, and a late answer after the item was handed on is refused (the
page says so and moves on). Labels are written by `LabelStore` (a lock, a re-read, an atomic replace), so
people labelling at once never lose one another's labels, and a killed server loses only holds.

**Spans.** With `passages` (where the contexts an item shows lie in their documents, labeling.passages), a
person may also mark the text that supports the answer to the question: a span of a document (its
characters), checked to lie inside a passage shown for the item, stored with its labeller
(labeling.team_spans, beside the labels file, under the same kind of lock) and exported as span qrels. Only
the person who holds an item, or has labelled it, marks spans on it.

**Adjudication.** With `adjudicator`, an item whose labels disagree gets one more label from that person (who
sees it like any other item); `human_labels: {adjudication: <their name>}` then makes their label decide.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmetrics.errors import InputError
from ragmetrics.labeling.passages import Passages
from ragmetrics.labeling.session import LabelSession, Verdict
from ragmetrics.labeling.spans import check_grade, span_of_selection, spans_in_passage
from ragmetrics.labeling.team_spans import TeamSpans, team_spans_path

__all__ = ["Overlap", "Reassigned", "TeamQueue", "parse_overlap"]


@dataclass(frozen=True)
class Overlap:
    """k labels for `share` of the items, 1 for the rest."""

    k: int
    share: float


def parse_overlap(text: str) -> Overlap:
    """'2:0.2' (two labels for 20 % of the items), '2' (two for every item)."""
    head, _, tail = text.partition(":")
    try:
        k, share = int(head), float(tail) if tail else 1.0
    except ValueError:
        raise InputError(f"expected K or K:SHARE (e.g. 2:0.2), not {text!r}", field="--overlap") from None
    if k < 1 or not 0.0 < share <= 1.0 or not math.isfinite(share):
        raise InputError(f"K is at least 1 and SHARE in (0, 1]; got {text!r}", field="--overlap")
    return Overlap(k, share)


class Reassigned(ValueError):
    """A label for an item that was handed to someone else after this person's hold ran out."""


class TeamQueue:
    """The queue behind several people's pages (module docstring)."""

    def __init__(
        self,
        session: LabelSession,
        labellers: list[str],
        *,
        overlap: Overlap,
        lease_s: float = 600.0,
        seed: int = 0,
        adjudicator: str | None = None,
        items: int | None = None,
        passages: Passages | None = None,
    ) -> None:
        names = [n.strip() for n in labellers]
        if len(names) < 1 or any(not n for n in names) or len(set(names)) != len(names):
            raise InputError(f"labellers must be distinct non-empty names, got {labellers}", field="--labellers")
        if overlap.k > len(names):
            raise InputError(f"{overlap.k} labels per item need at least {overlap.k} labellers", field="--overlap")
        if adjudicator is not None and adjudicator not in names:
            raise InputError(f"adjudicator {adjudicator!r} is not one of the labellers", field="--adjudicator")
        if lease_s <= 0:
            raise InputError("the lease must be positive", field="--lease")
        if passages is not None and "contexts" not in session.question.shows:
            raise InputError(f"the {session.metric} question shows no contexts to mark spans in", field="--corpus")
        self.session = session
        self.labellers = names
        self.adjudicator = adjudicator
        self.lease_s = lease_s
        self.tokens = {secrets.token_urlsafe(24): name for name in names}
        self.order = session.order[: items if items is not None else len(session.order)]
        rng = np.random.default_rng(seed)
        doubled = set(rng.permutation(len(self.order))[: round(overlap.share * len(self.order))].tolist())
        self.required = {sid: overlap.k if i in doubled else 1 for i, sid in enumerate(self.order)}
        self._holds: dict[str, dict[str, float]] = {}  # sample -> labeller -> hold's end (monotonic)
        started = time.monotonic()
        self._seen = dict.fromkeys(names, started)  # labeller -> their last request (monotonic)
        self._lock = threading.Lock()
        self.passages = passages
        self.spans = TeamSpans(team_spans_path(session.store.path)) if passages is not None else None
        if self.spans is not None:
            self.spans.check()

    def labeller_of(self, token: str) -> str | None:
        for known, name in self.tokens.items():
            if secrets.compare_digest(known, token):
                return name
        return None

    def link(self, base_url: str, labeller: str) -> str:
        token = next(t for t, name in self.tokens.items() if name == labeller)
        return f"{base_url}#token={token}"

    # -- the queue -------------------------------------------------------------------------------------------

    def _labels(self) -> dict[str, dict[str, float]]:
        return self.session.store.by_labeller(self.session.run, self.session.metric)

    def _live(self, sample: str, now: float) -> dict[str, float]:
        holds = {who: end for who, end in self._holds.get(sample, {}).items() if end > now}
        self._holds[sample] = holds
        return holds

    def next_for(self, labeller: str) -> int | None:
        """The position of the next item for `labeller` (held for them), or None when nothing is left to them."""
        with self._lock:
            now = time.monotonic()
            self._seen[labeller] = now
            labels = self._labels()
            for position, sample in enumerate(self.order):
                mine = labels.get(sample, {})
                if labeller in mine:
                    continue
                live = self._live(sample, now)
                if labeller in live:
                    return position
                if self._wants(sample, labeller, mine, live, now):
                    self._holds[sample][labeller] = now + self.lease_s
                    return position
            return None

    def _active(self, labeller: str, now: float) -> bool:
        """Whether `labeller` asked for anything within a lease (someone who has stopped has not)."""
        return now - self._seen[labeller] <= self.lease_s

    def _wants(
        self, sample: str, labeller: str, labels: dict[str, float], live: dict[str, float], now: float
    ) -> bool:
        """Whether the item may go to `labeller` now: another label fits beside those given and held. The
        adjudicator is never one of an item's k while the other people still working can give them (its
        label must decide their disagreement, not take part in it); when they cannot (only k people, or the
        others have stopped), it gives the missing label so the queue finishes."""
        k = self.required[sample]
        given = len(labels) + len(live)
        if self.adjudicator is not None and k >= 2 and len(labels) >= k and len(set(labels.values())) > 1:
            return labeller == self.adjudicator and self.adjudicator not in labels and not live
        if labeller == self.adjudicator and k >= 2:
            others = [p for p in self.labellers if p != labeller and p not in labels and p not in live
                      and self._active(p, now)]  # fmt: skip
            if given + len(others) >= k:
                return False
        return given < k

    def waiting_for(self, labeller: str) -> bool:
        """Whether items `labeller` may still get are held by others now (their holds may run out)."""
        with self._lock:
            self._seen[labeller] = time.monotonic()
            labels = self._labels()
            return any(labeller not in labels.get(s, {}) and not self._done(s, labels.get(s, {}))
                       and (labeller == self.adjudicator or self.adjudicator is None
                            or len(labels.get(s, {})) < self.required[s])
                       for s in self.order)  # fmt: skip

    def label(self, labeller: str, position: int, value: float) -> Verdict:
        """Record `labeller`'s label at `position` (module docstring: held, or still fitting; else Reassigned)."""
        if not 0 <= position < len(self.order):
            raise IndexError(f"no item at position {position}")
        sample = self.order[position]
        with self._lock:
            now = time.monotonic()
            self._seen[labeller] = now
            labels = self._labels().get(sample, {})
            live = self._live(sample, now)
            if labeller not in labels and labeller not in live:
                others = {who: end for who, end in live.items() if who != labeller}
                if not self._wants(sample, labeller, labels, others, now):
                    raise Reassigned(f"item {position + 1} was handed to someone else after your hold ran out")
            verdict = self.session.label(position, value, labeller=labeller)
            self._holds.get(sample, {}).pop(labeller, None)
            return verdict

    def item(self, labeller: str, position: int) -> dict[str, Any]:
        """What `labeller`'s page shows: the texts and their own label, never another's or the verdict; with
        passages, where each context lies in its document and their own spans in it."""
        shown = self.session.item(position)
        shown["label"] = self._labels().get(self.order[position], {}).get(labeller)
        if self.passages is not None:
            placed = self.passages.of(self.order[position])
            shown["passages"] = [None if p is None else dict(zip(("doc_id", "start", "end"), p.place, strict=True))
                                 for p in (placed[1] if placed else [])]  # fmt: skip
            shown["passage_spans"] = self._passage_spans(labeller, position)
        return shown

    def _passage_spans(self, labeller: str, position: int) -> list[list[dict[str, int]] | None]:
        """`labeller`'s spans in each context of the item at `position`, in the context's characters."""
        assert self.passages is not None and self.spans is not None
        placed = self.passages.of(self.order[position])
        if placed is None:
            return []
        query_id, shown = placed
        theirs = self.spans.by_labeller(query_id).get(labeller, [])
        return [None if p is None else spans_in_passage(theirs, query_id, p.place) for p in shown]

    def select_span(
        self, labeller: str, position: int, doc_id: str, start: int, end: int, grade: int
    ) -> dict[str, Any]:
        """`labeller` marks [start, end) of document `doc_id` as text supporting the answer to the question of
        the item at `position` (module docstring); returns the span and their spans in the item's contexts."""
        if self.passages is None or self.spans is None:
            raise InputError("this queue has no passages with places in documents (give --corpus)", field="position")
        if not 0 <= position < len(self.order):
            raise InputError(f"no item at position {position}", field="position")
        check_grade(grade)
        sample = self.order[position]
        query_id, passage = self.passages.locate(sample, doc_id, start, end)
        span = span_of_selection(query_id, passage.place, passage.text, start - passage.place[1],
                                 end - passage.place[1], grade)  # fmt: skip
        with self._lock:
            now = time.monotonic()
            self._seen[labeller] = now
            if labeller not in self._labels().get(sample, {}) and labeller not in self._live(sample, now):
                raise Reassigned(f"item {position + 1} is not yours: spans are marked on an item you hold or labelled")
            self.spans.add(labeller, span)
        return {"doc_id": span.doc_id, "start": span.start, "end": span.end,
                "passage_spans": self._passage_spans(labeller, position)}  # fmt: skip

    def status(self, labeller: str) -> dict[str, Any]:
        with self._lock:
            labels = self._labels()
        in_queue = {s: labels.get(s, {}) for s in self.order}
        needed = sum(self.required.values())
        given = sum(min(len(v), self.required[s]) for s, v in in_queue.items())
        progress = {name: sum(1 for v in in_queue.values() if name in v) for name in self.labellers}
        base = self.session.status()
        return {
            **base,
            "labeller": labeller,
            "labelled": progress[labeller],
            "target": progress[labeller] + sum(1 for s, v in in_queue.items() if labeller not in v
                                               and len(v) < self.required[s]),
            "total": len(self.order),
            "queue": {"labels_needed": needed, "labels_given": given, "per_labeller": progress},
            "plan": f"team queue: {given} of {needed} labels given ({', '.join(f'{n} {c}' for n, c in progress.items())})",
        }

    def _done(self, sample: str, labels: dict[str, float]) -> bool:
        """The item has its k labels and, where they disagree, the adjudicator's (who may be one of the k)."""
        if len(labels) < self.required[sample]:
            return False
        disagree = self.required[sample] >= 2 and len(set(labels.values())) > 1
        return not (self.adjudicator is not None and disagree and self.adjudicator not in labels)

    def complete(self) -> bool:
        labels = self._labels()
        return all(self._done(s, labels.get(s, {})) for s in self.order)
