"""A known QA set replayed through production: traces whose question is one of its rows are judged against the
row's reference (and its relevant passages), besides the reference-free metrics every sampled trace gets.

A trace matches a row by the id the team put in its root span's metadata (`sample_id`, `question_id`, `id`),
else by the question's text (spaces normalised) when exactly one row asks it. Matched traces are always judged
(within the budget); what they cost includes the reference-based metrics.
"""

from __future__ import annotations

import re
from pathlib import Path

from ragmetrics.judge.base import RagSample
from ragmetrics.traces.openinference import TraceSet

__all__ = ["GoldenSet", "golden_sample"]

_SPACE = re.compile(r"\s+")


def _key(question: str) -> str:
    return _SPACE.sub(" ", question).strip().casefold()


class GoldenSet:
    def __init__(self, path: Path) -> None:
        from ragmetrics.nightly.dataset import read_qa

        self.dataset = read_qa(path)
        self.by_id = {s.id: s for s in self.dataset.samples}
        by_text: dict[str, list[RagSample]] = {}
        for sample in self.dataset.samples:
            by_text.setdefault(_key(sample.question), []).append(sample)
        self.by_text = {k: v[0] for k, v in by_text.items() if len(v) == 1}

    def match(self, traces: TraceSet, trace_id: str) -> RagSample | None:
        given = traces.sample_ids.get(trace_id)
        if given is not None and given in self.by_id:
            return self.by_id[given]
        sample = next((s for s in traces.samples if s.id == trace_id), None)
        return None if sample is None else self.by_text.get(_key(sample.question))


def golden_sample(traced: RagSample, row: RagSample) -> RagSample:
    """The traced sample with the golden row's reference, relevance judgments and expected tool calls (so
    tool-call checks and retrieval-aware metrics judge production's answer against what the row expects)."""
    return traced.model_copy(
        update={
            "reference": row.reference,
            "relevant_ids": row.relevant_ids,
            "reference_tool_calls": row.reference_tool_calls,
            "answerable": row.answerable,
        }
    )
