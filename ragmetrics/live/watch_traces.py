"""The watcher's intake: spans read from the source (a file or spool from its cursor, or Phoenix), annotations
written back to Phoenix, and each complete trace's sampling decision with its operational figures and
conversation turns kept for later turns.

Why its own module: reading and deciding are what happens to every trace, sampled or not; scoring the sampled
ones (`watch`) and closing windows (`watch_windows`) come after."""

from __future__ import annotations

from ragmetrics.judge.base import RagSample
from ragmetrics.judge.conversation import with_history
from ragmetrics.live.config import OPERATIONAL
from ragmetrics.live.phoenix import Annotation, NoSpansYet, PhoenixClient, PhoenixError
from ragmetrics.live.sampling import root_span
from ragmetrics.live.sources import FileCursor
from ragmetrics.live.store import Decision, StoredScore
from ragmetrics.live.watch_base import (
    MAX_READS_PER_POLL,
    WRITE_BATCH,
    PollResult,
    WatcherBase,
)
from ragmetrics.live.windows import window_of
from ragmetrics.traces.openinference import TraceSet, traces_from_spans
from ragmetrics.traces.otlp import Span

__all__ = ["PROMPT_OVERHEAD_TOKENS", "TraceIntake"]


PROMPT_OVERHEAD_TOKENS = 800
"""Per judge call, beyond the judged text: instructions, examples and the answer (a generous allowance)."""


def _token_estimate(traces: TraceSet, trace_id: str, calls: int) -> int:
    """Judge tokens a trace may cost, erring high: its text at 3 characters a token (English runs about 4),
    sent once per call, plus the allowance per call."""
    sample = next((s for s in traces.samples if s.id == trace_id), None)
    if sample is None:
        return 0
    chars = len(sample.question) + len(str(sample.answer or "")) + sum(len(c) for c in sample.context_list)
    return calls * (chars // 3 + PROMPT_OVERHEAD_TOKENS)


def _operational(traces: TraceSet, trace_id: str) -> list[StoredScore]:
    found = []
    for metric, table in zip(OPERATIONAL, (traces.latency_s, traces.tokens, traces.cost), strict=True):
        value = table.get(trace_id)
        if value is not None:
            found.append(StoredScore(trace_id, metric, float(value), None, None))
    return found


class TraceIntake(WatcherBase):
    """The watcher's reading, writing back and deciding (module doc)."""

    def _read(self, out: PollResult) -> None:
        if self.phoenix is not None:
            self._read_phoenix(self.phoenix, out)
            return
        for _ in range(MAX_READS_PER_POLL):
            cursor = FileCursor.loads(self.store.cursor(self.source_key))
            polled = self.tail.poll(cursor)
            out.notes.extend(polled.notes)
            if polled.cursor is None:
                return
            out.spans += self.store.add_spans(
                self.source_key, polled.cursor.dumps(), polled.spans, self.clock()
            )
            if self.receiver is not None and self.receiver.consumed(polled.cursor.offset):
                reset = FileCursor(polled.cursor.inode, 0, 0)
                self.store.add_spans(self.source_key, reset.dumps(), [], self.clock())
            if not polled.more:
                return
        out.notes.append("more spans wait in the source than one poll reads: they are read on the next polls")

    def _low_retrieval(self, traces: TraceSet, trace_id: str) -> str | None:
        """'retrieval scored X' when the trace's final retriever's best document scored below the rule's cut."""
        cut = self.config.sampling.always.retrieval_score_below
        if cut is None:
            return None
        run = traces.runs.get(traces.final_span.get(trace_id, ""))
        ranking = run.rankings.get(trace_id) if run is not None else None
        if not ranking:
            return None
        best = max(ranking.values())
        return f"best retrieval score {best:g} < {cut:g}" if best < cut else None

    def _read_phoenix(self, phoenix: PhoenixClient, out: PollResult) -> None:
        for _ in range(MAX_READS_PER_POLL):
            try:
                spans, cursor, more = phoenix.spans(self.store.cursor(self.source_key))
            except NoSpansYet as exc:
                out.notes.append(f"{exc}; read on the next poll")
                return
            except PhoenixError as exc:
                out.notes.append(f"{exc}; read again on the next poll, from the same cursor")
                return
            out.spans += self.store.add_spans(self.source_key, cursor or "", spans, self.clock())
            if not more:
                return
        out.notes.append("more spans wait in Phoenix than one poll reads: they are read on the next polls")

    def _write_back(self, out: PollResult) -> None:
        """Queued annotations to Phoenix, oldest first, in batches; what fails waits for the next poll."""
        if self.annotator is None:
            return
        info = self._session.info() if self._session is not None else None
        kind = "LLM" if info is not None and info.backend == "openai" else "CODE"
        judge = f"{info.backend}:{info.model}" if info is not None else None
        while True:
            batch = self.store.unsent(WRITE_BATCH)
            if not batch:
                return
            annotations = [
                Annotation(
                    span_id=root,
                    name=score.metric,
                    score=score.value,
                    label="failed" if score.value is None else ("pass" if score.value >= 0.5 else "fail"),
                    explanation=(score.reason or score.failure or "")[:2000] or None,
                    annotator_kind=kind,
                    metadata={"window": window, "judge": judge, "source": "ragmetrics watch"},
                )
                for score, root, window in batch
                if root is not None
            ]
            try:
                self.annotator.annotate(annotations)
            except PhoenixError as exc:
                out.notes.append(f"writing {len(batch)} annotations failed: {exc}; written on a later poll")
                return
            self.store.mark_sent((score.trace_id, score.metric) for score, _, _ in batch)
            out.annotated += len(annotations)

    def _decide(self, ready: dict[str, list[Span]], out: PollResult) -> None:
        traces = traces_from_spans([s for spans in ready.values() for s in spans], source=self.source_key)
        self._keep_turns(traces, ready)
        for trace_id, spans in ready.items():
            if self.store.decision(trace_id) is not None:
                continue
            started = min(s.start_ns for s in spans) / 1e9
            window = window_of(started, self.seconds)
            closed = dict(self.store.windows()).get(window, False)
            note = None
            if closed:  # said from the store: a kill after this decision still says it on the next start
                note = f"trace {trace_id} arrived after its window {window} closed: not counted"
                choice_sampled, reason, calls, tokens = False, f"late: window {window} had closed", 0, 0
            else:
                golden = self.golden.match(traces, trace_id) if self.golden is not None else None
                calls = len(self.metrics) + (len(self.golden_metrics) if golden is not None else 0)
                forced = (
                    "a golden-set question" if golden is not None else self._low_retrieval(traces, trace_id)
                )
                choice = self.sampler.choose(
                    trace_id,
                    spans,
                    self.store.calls_used(window),
                    forced=forced,
                    calls=calls,
                    tokens=_token_estimate(traces, trace_id, calls) if self.sampler.token_budget() else 0,
                    tokens_used=self.store.tokens_used(window),
                )
                choice_sampled, reason, calls, tokens = (
                    choice.sampled,
                    choice.reason,
                    choice.calls,
                    choice.tokens,
                )
            session = traces.sessions.get(trace_id)
            operational = _operational(traces, trace_id)
            root = root_span(spans)
            self.store.decide(
                Decision(
                    trace_id, window, started, choice_sampled, reason, session, calls,
                    root.span_id if root is not None else None, tokens,
                ),
                [] if closed else operational,
                note,
            )  # fmt: skip
            out.decided += 1
            out.sampled += int(choice_sampled)

    def _metrics_of(self, trace_id: str) -> list[str]:
        decision = self.store.decision(trace_id)
        golden = decision is not None and decision.reason.startswith("always: a golden-set question")
        return [*self.metrics, *(self.golden_metrics if golden else [])]

    def _charge_re_asks(self, unscored: dict[str, list[Span]]) -> dict[str, str]:
        """Count this scoring attempt; a trace attempted before (a process died with its judge requests in
        flight) is charged to its window's budget again, since its requests not yet cached are asked again.
        Traces the budget has no room for are returned with why: they are recorded as failures, not asked."""
        before = self.store.begin_attempt(unscored)
        rules = self.config.sampling
        over: dict[str, str] = {}
        if not before:
            return over
        for trace_id, attempts in before.items():
            if attempts and not self.store.charge_again(
                trace_id, rules.max_calls_per_window, self.sampler.token_budget()
            ):
                over[trace_id] = (
                    "a restart would ask this trace's judge requests again and its window's budget has no room: "
                    "not asked again"
                )
        return over

    def _keep_turns(self, traces: TraceSet, ready: dict[str, list[Span]]) -> None:
        """Every readable turn of a conversation, sampled or not, kept for the conversation's later turns
        (`conversations.keep` after its latest turn, the latest `conversations.max_turns`)."""
        turns = []
        for sample in traces.samples:
            session = traces.sessions.get(sample.id)
            if session is None or sample.id not in ready:
                continue
            started = min(s.start_ns for s in ready[sample.id]) / 1e9
            turns.append((session, sample.id, started, {
                "id": sample.id, "question": sample.question, "answer": sample.answer,
                "contexts": sample.context_list,
            }))  # fmt: skip
        if turns:
            self.store.add_turns(turns, self.clock())

    def _with_earlier_turns(self, sample: RagSample, started: float | None) -> RagSample:
        """A turn as the history metrics judge it: its contexts, then every kept earlier turn's contexts and
        answer (judge.conversation.with_history), read from the store, so an earlier turn that was not sampled,
        or was scored polls ago, is still seen."""
        if sample.conversation_id is None or started is None:
            return sample
        rows = self.store.earlier_turns(sample.conversation_id, started, self.config.conversations.max_turns)
        before = [RagSample(id=r["id"], question=r["question"], answer=r["answer"], contexts=r["contexts"] or None)
                  for r in rows]  # fmt: skip
        return with_history(sample, before)
