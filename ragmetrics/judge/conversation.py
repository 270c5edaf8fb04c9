"""Turns of a conversation: what a turn's metrics may see of the turns before it.

A single-turn faithfulness check calls a statement a hallucination when the answer repeats what an earlier
turn established ("As I said, it takes eight minutes"): the fact is in the conversation, not in this turn's
retrieved chunks. So for the metrics in `HISTORY_METRICS`, a turn is judged against its own contexts plus
every earlier turn's contexts and answers (in turn order, each earlier answer as a passage of its own). An
earlier answer counts as support because the user saw it and the assistant may rely on it; a statement that
only repeats an earlier *unsupported* answer is therefore not caught at this turn, but at the turn that first
said it. Contexts of later turns are never seen. Every other metric judges the turn alone.

Samples without `conversation_id` are unchanged, and so are the first turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ragmetrics.judge.base import RagSample

__all__ = [
    "HISTORY_METRICS",
    "batches_keeping_conversations",
    "conversation_clusters",
    "earlier_turns",
    "with_history",
]

HISTORY_METRICS: frozenset[str] = frozenset({"faithfulness"})
"""Metrics that judge a turn against the conversation so far (module doc)."""


def conversation_clusters(samples: Iterable[RagSample]) -> dict[str, str] | None:
    """Sample id -> conversation id for the samples that are turns; None when no sample is."""
    clusters = {s.id: s.conversation_id for s in samples if s.conversation_id is not None}
    return clusters or None


def earlier_turns(samples: Sequence[RagSample]) -> dict[str, list[RagSample]]:
    """Sample id -> the turns of its conversation with a lower turn number, in turn order."""
    by_conversation: dict[str, list[RagSample]] = {}
    for sample in samples:
        if sample.conversation_id is not None:
            by_conversation.setdefault(sample.conversation_id, []).append(sample)
    earlier: dict[str, list[RagSample]] = {}
    for turns in by_conversation.values():
        ordered = sorted(turns, key=lambda s: s.turn or 0)
        for sample in ordered:
            before = [t for t in ordered if (t.turn or 0) < (sample.turn or 0)]
            if before:
                earlier[sample.id] = before
    return earlier


def with_history(sample: RagSample, before: Sequence[RagSample]) -> RagSample:
    """The turn with the earlier turns' contexts and answers after its own contexts (module doc). Context
    ids are dropped: the added passages have none."""
    if not before:
        return sample
    added: list[str] = []
    for turn in before:
        added.extend(turn.context_list)
        if turn.answer is not None and turn.answer.strip():
            added.append(turn.answer)
    if not added:
        return sample
    return sample.model_copy(update={"contexts": [*sample.context_list, *added], "context_ids": None})


def batches_keeping_conversations(samples: Sequence[RagSample], size: int) -> list[list[int]]:
    """Sample positions in batches of about `size`, every conversation's turns in one batch (its first
    turn's), so a worker judging a batch sees each turn's earlier turns."""
    batches: list[list[int]] = []
    home: dict[str, int] = {}
    for i, sample in enumerate(samples):
        conversation = sample.conversation_id
        if conversation is not None and conversation in home:
            batches[home[conversation]].append(i)
            continue
        if not batches or len(batches[-1]) >= size:
            batches.append([])
        batches[-1].append(i)
        if conversation is not None:
            home[conversation] = len(batches) - 1
    return batches
