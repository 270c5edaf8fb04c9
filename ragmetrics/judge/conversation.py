"""Turns of a conversation: what a turn's metrics may see of the turns before it.

A single-turn faithfulness check calls a statement a hallucination when the answer repeats what an earlier
turn established ("As I said, it takes eight minutes"): the fact is in the conversation, not in this turn's
retrieved chunks. So for the metrics in `HISTORY_METRICS`, a turn is judged against its own contexts plus
every earlier turn's contexts and answers (in turn order, each earlier answer as a passage of its own). An
earlier answer counts as support because the user saw it and the assistant may rely on it; a statement that
only repeats an earlier *unsupported* answer is therefore not caught at this turn, but at the turn that first
said it. Contexts of later turns are never seen. Every other metric judges the turn alone.

Samples without `conversation_id` are unchanged, and so are the first turns.

Conversation metrics are rubrics that read `conversation`: the transcript of the turns so far (each user
question and assistant answer, in turn order). They are scored once per conversation, on its last turn (its
transcript is the whole conversation); the earlier turns are not applicable to them, so their mean is over
conversations. Five are shipped (`SHIPPED_RUBRICS`, files in `judge/rubrics/`): knowledge retention,
conversation completeness, role adherence (reads a `role` column), topic adherence (a `topics` column) and
goal accuracy (the last turn's `reference`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from ragmetrics.judge.base import RagSample

__all__ = [
    "CONVERSATION_FIELD",
    "HISTORY_METRICS",
    "SHIPPED_RUBRICS",
    "batches_keeping_conversations",
    "conversation_clusters",
    "conversation_view",
    "earlier_turns",
    "last_turns",
    "shipped_rubric_path",
    "transcript",
    "with_history",
]

HISTORY_METRICS: frozenset[str] = frozenset({"faithfulness"})
"""Metrics that judge a turn against the conversation so far (module doc)."""

CONVERSATION_FIELD = "conversation"
"""What a rubric reads to see the transcript; a rubric reading it is a conversation metric."""

SHIPPED_RUBRICS: tuple[str, ...] = (
    "knowledge_retention",
    "conversation_completeness",
    "role_adherence",
    "topic_adherence",
    "goal_accuracy",
)
"""Conversation metrics that ship as rubric files: naming one in `judge.metrics` loads it."""

LAST_TURN_ONLY = "a conversation metric: scored once per conversation, on its last turn"


def shipped_rubric_path(name: str) -> Path:
    """The file of a shipped conversation rubric (`SHIPPED_RUBRICS`)."""
    if name not in SHIPPED_RUBRICS:
        raise KeyError(f"no shipped rubric {name!r}; shipped: {', '.join(SHIPPED_RUBRICS)}")
    return Path(__file__).parent / "rubrics" / f"{name}.yaml"


def transcript(turns: Sequence[RagSample]) -> str:
    """The turns as the judge reads them: each user question and assistant answer, in turn order."""
    lines: list[str] = []
    for n, turn in enumerate(turns, start=1):
        lines.append(f"[turn {n}] user: {turn.question.strip()}")
        answer = (turn.answer or "").strip()
        lines.append(f"[turn {n}] assistant: {answer if answer else '(no answer)'}")
    return "\n".join(lines)


def last_turns(samples: Sequence[RagSample]) -> set[str]:
    """Ids of the samples that end their conversation (and of every sample that is not a turn)."""
    last: dict[str, RagSample] = {}
    ends: set[str] = set()
    for sample in samples:
        if sample.conversation_id is None:
            ends.add(sample.id)
            continue
        kept = last.get(sample.conversation_id)
        if kept is None or (sample.turn or 0) > (kept.turn or 0):
            last[sample.conversation_id] = sample
    return ends | {s.id for s in last.values()}


def conversation_view(sample: RagSample, before: Sequence[RagSample], ends: set[str]) -> RagSample | str:
    """What a conversation metric judges for `sample`: the sample with its transcript (earlier turns and
    itself) under `extra["conversation"]`, or the reason it is not applicable (not its conversation's end)."""
    if sample.id not in ends:
        return LAST_TURN_ONLY
    return sample.model_copy(
        update={"extra": {**(sample.extra or {}), CONVERSATION_FIELD: transcript([*before, sample])}}
    )


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
