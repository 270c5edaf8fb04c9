"""The watcher: poll the source, decide which complete traces to judge, score them, close windows into the
history, alert once per episode of a significant drop (docs/online.md).

One poll (`Watcher.poll`) is the unit `ragmetrics watch --once` runs for cron and `watch` repeats: read what is
new (whole lines, bounded per poll), store it with the cursor, take the traces no span arrived for in
`settle_s`, record each one's sampling decision (the window's budget is charged in the same transaction),
score the sampled ones with the judge metrics and store their scores (a kill before that scores them on the
next start), record latency, tokens and cost of every trace, then close the windows that ended: each becomes
`OUTPUT/<window>/report.json` and an entry of `OUTPUT/history.jsonl` (so `history.html`, the trend test and
`ragmetrics history --fail-on-drift` read live windows as nights), and is compared with the baseline window.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragmetrics.engines.base import Engine, JudgeSession
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.conversation import HISTORY_METRICS, with_history
from ragmetrics.judge.registry import registered_metrics
from ragmetrics.live.config import OPERATIONAL, WatchConfig, window_seconds
from ragmetrics.live.golden import GoldenSet, golden_sample
from ragmetrics.live.phoenix import Annotation, NoSpansYet, PhoenixClient, PhoenixError
from ragmetrics.live.receiver import OtlpReceiver
from ragmetrics.live.sampling import Sampler, root_span
from ragmetrics.live.sources import FileCursor, OtlpFileTail
from ragmetrics.live.store import Decision, LiveStore, StoredScore
from ragmetrics.live.windows import WindowComparison, compare_windows, window_end, window_of
from ragmetrics.schema import RunMetadata, RunResult, SampleFailure
from ragmetrics.traces.openinference import TraceSet, traces_from_spans
from ragmetrics.traces.otlp import Span

__all__ = ["PollResult", "Watcher", "receiver_source_key", "spool_path"]


def spool_path(config: WatchConfig) -> Path:
    """Where a `source: receiver` watch spools what it receives (read by the watcher like an OTLP file)."""
    return config.output / "spool" / "otlp.jsonl"


def receiver_source_key(config: WatchConfig) -> str:
    """The store's name for the receiver's spool as a source (its cursor is kept under it)."""
    return f"receiver:{spool_path(config)}"

Say = Callable[[str], None]
TRANSIENT = frozenset({"rate_limited", "server_error", "timeout", "connection", "embedder_unavailable"})
"""Judge failures a later attempt may not repeat: the trace stays sampled and unscored, never lost."""
MAX_BACKOFF_S = 600.0
WRITE_BATCH = 200
DECIDE_BATCH = 2000
"""Complete traces decided (and their spans loaded) per poll: a burst is worked off in batches."""
MAX_READS_PER_POLL = 16


@dataclass
class PollResult:
    spans: int = 0
    decided: int = 0
    sampled: int = 0
    scored: int = 0
    annotated: int = 0
    waiting: int = 0
    """Sampled traces the judge failed on transiently, kept for the next attempt."""
    closed: list[str] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Watcher:
    def __init__(
        self,
        config: WatchConfig,
        *,
        say: Say | None = None,
        clock: Callable[[], float] = time.time,
        listen: bool = True,
    ) -> None:
        """`listen`: with `source: receiver`, open the port (a long-running watch); False reads the spool only
        (`watch --once` from cron, beside a `watch --receive-only` process that holds the port)."""
        self.config = config
        self.say = say or _say
        self.clock = clock
        self.seconds = window_seconds(config.window)
        config.output.mkdir(parents=True, exist_ok=True)
        self.store = LiveStore(config.output / "live.sqlite")
        self.metrics = list(config.judge.metrics)
        # The team's own metrics (rubrics, Python metrics) in the registry for the watcher's lifetime.
        self._own = ExitStack()
        where = [p for p in (config.source_dir, Path.cwd()) if p is not None]
        self._own.enter_context(registered_metrics(config.judge.metric_specs("judge.custom_metrics", where)))
        prices = config.judge.price_per_million_tokens or {}
        self.sampler = Sampler(
            config.sampling,
            len(self.metrics),
            price_per_token=max(prices.get("prompt", 0.0), prices.get("completion", 0.0)) / 1e6,
        )
        self.golden = GoldenSet(config.golden.path) if config.golden is not None else None
        self.golden_metrics = (
            [m for m in config.golden.metrics if m not in self.metrics] if config.golden is not None else []
        )
        self.receiver: OtlpReceiver | None = None
        if config.source.kind == "receiver":
            spool = spool_path(config)
            if listen:
                self.receiver = OtlpReceiver(
                    config.source.listen, spool, max_spool_bytes=int(config.source.max_spool_mb * (1 << 20))
                )
            self.tail = OtlpFileTail(spool)
            self.source_key = receiver_source_key(config)
        self.phoenix: PhoenixClient | None = None
        if config.source.kind == "phoenix":
            assert config.source.url is not None
            self.phoenix = PhoenixClient(
                config.source.url, config.source.project, api_key_env=config.source.api_key_env
            )
            self.source_key = f"phoenix:{config.source.url}/{config.source.project}"
        elif config.source.kind == "otlp_file":
            assert config.source.path is not None
            self.tail = OtlpFileTail(config.source.path)
            self.source_key = f"file:{config.source.path}"
        target = config.annotation_target()
        self.annotator: PhoenixClient | None = (
            PhoenixClient(target.phoenix_url, target.project, api_key_env=target.api_key_env)
            if target is not None and target.phoenix_url is not None
            else None
        )
        self._session: JudgeSession | None = None
        self._engine: Engine | None = None
        self._retry_at = 0.0
        self._failed_polls = 0

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> None:
        if self.receiver is not None:
            self.receiver.start()
            self.say(f"ragmetrics watch: receiving OTLP/HTTP traces at {self.receiver.url}/v1/traces")
        self.say(f"ragmetrics watch: {self.sampler.estimate(self._last_window_traffic())}")

    def close(self) -> None:
        if self.receiver is not None:
            self.receiver.stop()
        if self._session is not None:
            self._session.close()
        if self._engine is not None:
            self._engine.close()
        self.store.close()
        self._own.close()

    def _last_window_traffic(self) -> float | None:
        closed = [w for w, done in self.store.windows() if done]
        if not closed:
            return None
        seen, _ = self.store.window_counts(closed[-1])
        return float(seen)

    def session(self) -> JudgeSession:
        """One judge session for the whole watch (one cache, one usage count), on the configured engine: this
        process, or a Ray cluster (`engine: {kind: ray}`), as nights do."""
        if self._session is None:
            from ragmetrics.engines.base import make_engine

            engine = self.config.engine
            self._engine = make_engine(engine.kind, **(engine.options() if engine.kind == "ray" else {}))
            self._session = self._engine.judge_session(self.config.judge.settings())
        return self._session

    # -- one poll -----------------------------------------------------------------------------------------
    def poll(self, *, final: bool = False) -> PollResult:
        """Read, decide, score and close windows once. A trace is complete once no span of it arrived for
        `settle_s` (so `watch --once` from cron decides a trace on the run after the one that read it);
        `final` treats every trace read as complete (a backfill of a finished file, tests)."""
        out = PollResult()
        self._read(out)
        now = self.clock()
        before = float("inf") if final else now - self.config.source.settle_s
        ready = self.store.settled(before, DECIDE_BATCH)
        if ready:
            self._decide(ready, out)
            if len(ready) == DECIDE_BATCH:
                out.notes.append(
                    f"a backlog of complete traces: {DECIDE_BATCH} decided in this poll, the rest in the next ones"
                )
        unscored = self.store.unscored()
        if unscored:
            self._score(unscored, out)
        self.store.forget_turns(now - self.config.conversations.seconds(), self.config.conversations.max_turns)
        self._write_back(out)
        self._close_windows(now, out)
        if out.decided or out.scored or out.closed:
            from ragmetrics.live.page import write_live_page

            write_live_page(
                self.config.output,
                self.config.name,
                self.store,
                [*self.metrics, *self.golden_metrics, *OPERATIONAL],
            )
        for note in out.notes:
            self.say(f"ragmetrics watch: {note}")
        stored = self.store.unsaid_notes()
        for _, text in stored:
            self.say(f"ragmetrics watch: {text}")
            out.notes.append(text)
        self.store.mark_said(i for i, _ in stored)
        return out

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

    def _score(self, unscored: dict[str, list[Span]], out: PollResult) -> None:
        spans = [s for group in unscored.values() for s in group]
        traces = (
            traces_from_spans(spans, source=self.source_key) if spans else TraceSet(source=self.source_key)
        )
        samples = {s.id: s for s in traces.samples}
        problems: dict[str, str] = {}
        for problem in traces.problems:
            problems.setdefault(problem.trace_id, f"{problem.field}: {problem.message}")
        if self.clock() < self._retry_at and any(t in samples for t in unscored):
            return  # the judge failed transiently: wait for the backoff
        over = self._charge_re_asks(unscored)
        for trace_id, why in over.items():
            failed = [StoredScore(trace_id, m, None, f"budget_spent: {why}", None) for m in self._metrics_of(trace_id)]
            self.store.add_scores(trace_id, failed, annotate=False)
            out.scored += 1
        unscored = {t: spans for t, spans in unscored.items() if t not in over}
        readable = [samples[t] for t in unscored if t in samples]
        referenced = {
            s.id: row
            for s in readable
            if self.golden is not None and (row := self.golden.match(traces, s.id)) is not None
        }
        plain = [s for s in readable if s.id not in referenced]
        with_references = [golden_sample(samples[t], row) for t, row in referenced.items()]
        started = {t: min(s.start_ns for s in spans) / 1e9 for t, spans in unscored.items() if spans}
        results: list[RunResult] = []
        for group, metrics in ((plain, self.metrics), (with_references, [*self.metrics, *self.golden_metrics])):
            if not group:
                continue
            # A turn's history metrics see its conversation's earlier turns from the store (every kept turn,
            # not only those in this poll); the batch itself carries no conversation, so nothing is added twice.
            alone = [s.model_copy(update={"conversation_id": None, "turn": None}) for s in group]
            historic = [m for m in metrics if m in HISTORY_METRICS]
            rest = [m for m in metrics if m not in HISTORY_METRICS]
            if rest:
                results.append(self.session().score(alone, rest, name="live", progress=False))
            if historic:
                viewed = [self._with_earlier_turns(s, started.get(s.id)).model_copy(
                    update={"conversation_id": None, "turn": None}) for s in group]  # fmt: skip
                results.append(self.session().score(viewed, historic, name="live", progress=False))
        result_of = _by_trace(results)
        transient = [f for r in results for f in r.failures if f.cause in TRANSIENT]
        waiting = {f.query_id for f in transient}
        out.waiting = len(waiting)
        self.store.end_attempt(waiting)  # they failed, answered: a later attempt is no re-ask after a kill
        if transient:
            self._failed_polls += 1
            delay = min(MAX_BACKOFF_S, self.config.source.poll_s * 2**self._failed_polls)
            self._retry_at = self.clock() + delay
            out.notes.append(
                f"the judge failed for {len(waiting)} sampled traces ({transient[0].cause}): kept, tried again in "
                f"{delay:.0f} s"
            )
        else:
            self._failed_polls = 0
        for trace_id in unscored:
            if trace_id in waiting:
                continue
            scores: list[StoredScore] = []
            for metric in [*self.metrics, *(self.golden_metrics if trace_id in referenced else [])]:
                result = next((r for r in result_of.get(trace_id, []) if metric in r.metadata.metrics), None)
                if result is None or trace_id not in samples:
                    why = problems.get(trace_id, "the trace holds no question and answer OpenInference names")
                    scores.append(StoredScore(trace_id, metric, None, f"trace_unreadable: {why}", None))
                    continue
                value = result.per_query.get(trace_id, {}).get(metric)
                detail = result.details.get(trace_id, {}).get(metric)
                failure = next(
                    (
                        f"{f.cause}: {f.message}"
                        for f in result.failures
                        if f.query_id == trace_id and f.metric == metric
                    ),
                    None,
                )
                if value is None and failure is None:
                    failure = "not_applicable"
                scores.append(
                    StoredScore(trace_id, metric, value, failure, detail.reason if detail else None)
                )
            self.store.add_scores(trace_id, scores, annotate=self.annotator is not None)
            out.scored += 1

    # -- windows ------------------------------------------------------------------------------------------
    def _close_windows(self, now: float, out: PollResult) -> None:
        for window, closed in self.store.windows():
            if closed or window_end(window, self.seconds) + self.config.source.settle_s > now:
                continue
            if self.store.unscored():
                return  # a window closes with every sampled trace scored
            summary = self._summary(window)
            comparisons = self._compare(window, summary)
            summary["comparisons"] = [c.__dict__ for c in comparisons]
            summary["alerting"] = {c.metric: c.alert for c in comparisons}
            # Files and history first, the store's "closed" last: a kill in between writes them again on the
            # next start (the history entry is not appended twice), and never leaves a closed window without them.
            self._write_window(window, summary)
            summary["drifting"] = self._drifting()
            self.store.close_window(window, summary)
            out.closed.append(window)
            self.say(f"ragmetrics watch: window {window} closed: {_describe(summary)}")
        self._send_alerts(out)

    def _send_alerts(self, out: PollResult) -> None:
        """Every alert of a closed window not yet sent (a kill or a failed webhook sends it on a later poll)."""
        for window, closed in self.store.windows():
            summary = self.store.summary(window) if closed else None
            if summary is None:
                continue
            for raw in summary.get("comparisons", []):
                comparison = WindowComparison(**raw)
                if comparison.alert:
                    text = self._alert(window, comparison)
                    if text is not None:
                        out.alerts.append(text)
            for metric, why in sorted(summary.get("drifting", {}).items()):
                text = self._drift_alert(window, metric, why)
                if text is not None:
                    out.alerts.append(text)

    def _drifting(self) -> dict[str, str]:
        """Judged metrics whose windows trend worse, significantly (the history's trend test, corrected over
        the metrics), as of the windows written so far: metric -> what the test found."""
        from ragmetrics.history.analysis import analyse
        from ragmetrics.history.changes import changes_between
        from ragmetrics.history.store import load_history

        records = load_history(self.config.output).records
        rules = self.config.alerts
        drifts = analyse(
            records, changes_between(records), nights=rules.drift_windows, alpha=rules.alpha, correction="holm",
            baseline=None,
        )  # fmt: skip
        judged = {*self.metrics, *self.golden_metrics}
        return {
            d.metric: (
                f"{d.metric} trends worse over the last {len(d.window)} windows (Mann-Kendall, corrected p = "
                f"{d.p_corrected:.3g}): {d.reference_mean:.3f} -> {d.latest_mean:.3f}"
            )
            for d in drifts
            if d.flagged and d.metric in judged and d.reference_mean is not None and d.latest_mean is not None
            and d.p_corrected is not None
        }  # fmt: skip

    def _drift_alert(self, window: str, metric: str, why: str) -> str | None:
        closed = [w for w, done in self.store.windows() if done and w < window]
        previous = self.store.summary(closed[-1]) if closed else None
        if previous is not None and metric in previous.get("drifting", {}):
            return None  # the same episode
        key = f"drift:{metric}@{window}"
        if self.store.alert_sent(key):
            return None
        text = f"DRIFT window {window}: {why}"
        self.say(f"ragmetrics watch: {text}")
        payload = {"text": text, "window": window, "metric": metric, "kind": "drift"}
        if self.config.alerts.webhook is not None and not _post(
            self.config.alerts.webhook, payload, self.say
        ):
            return text
        self.store.record_alert(key, window, metric, text)
        return text

    def _summary(self, window: str) -> dict[str, Any]:
        seen, sampled = self.store.window_counts(window)
        per_metric: dict[str, dict[str, Any]] = {}
        for score, _ in self.store.scores_in(window):
            entry = per_metric.setdefault(score.metric, {"values": [], "failures": 0})
            if score.value is None:
                entry["failures"] += 1
            else:
                entry["values"].append(score.value)
        means = {
            m: {"mean": (sum(e["values"]) / len(e["values"])) if e["values"] else None, "n": len(e["values"]),
                "failures": e["failures"]}
            for m, e in per_metric.items()
        }  # fmt: skip
        summary = {"window": window, "traces": seen, "sampled": sampled, "calls": self.store.calls_used(window),
                   "metrics": means}  # fmt: skip
        if self.config.nights is not None:
            summary["nights"] = self._last_night(list(means))
        return summary

    def _last_night(self, metrics: list[str]) -> dict[str, Any]:
        """The last night's mean of each metric (its first run that has it), for reading a window beside it."""
        from ragmetrics.history.store import load_history

        assert self.config.nights is not None
        records = load_history(self.config.nights).records
        if not records:
            return {}
        last = records[-1]
        found: dict[str, Any] = {}
        for point in last.points:
            if point.metric in metrics and point.metric not in found and point.mean is not None:
                found[point.metric] = {"night": last.folder, "run": point.run, "mean": point.mean}
        return found

    def baseline_window(self) -> str | None:
        if self.config.baseline_window is not None:
            return self.config.baseline_window
        closed = [w for w, done in self.store.windows() if done]
        return closed[0] if closed else None

    def _values(self, window: str, metric: str) -> list[tuple[float, str]]:
        clustered = self.config.alerts.cluster_by_session
        return [
            (s.value, (session if clustered and session else s.trace_id))
            for s, session in self.store.scores_in(window)
            if s.metric == metric and s.value is not None
        ]

    def _compare(self, window: str, summary: dict[str, Any]) -> list[WindowComparison]:
        baseline = self.baseline_window()
        if baseline is None or baseline == window:
            return []
        rules = self.config.alerts
        found = []
        for metric in [*self.metrics, *self.golden_metrics]:
            current, base = self._values(window, metric), self._values(baseline, metric)
            if len(current) < rules.min_samples or len(base) < rules.min_samples:
                continue
            found.append(
                compare_windows(metric, current, base, max_drop=rules.max_drop, alpha=rules.alpha, seed=0)
            )
        return found

    def _alert(self, window: str, comparison: WindowComparison) -> str | None:
        """Say a drop once per episode: a new episode starts at a window alerting on a metric whose previous
        closed window did not."""
        closed = [w for w, done in self.store.windows() if done and w < window]
        previous = self.store.summary(closed[-1]) if closed else None
        if previous is not None and previous.get("alerting", {}).get(comparison.metric):
            return None
        key = f"{comparison.metric}@{window}"
        if self.store.alert_sent(key):
            return None
        worst = sorted(
            ((s.value, s.trace_id, s.reason) for s, _ in self.store.scores_in(window)
             if s.metric == comparison.metric and s.value is not None),
            key=lambda t: (t[0], t[1]),
        )[:3]  # fmt: skip
        text = f"ALERT window {window}: {comparison.describe()}"
        payload = {
            "text": text, "window": window, "metric": comparison.metric, "baseline_window": self.baseline_window(),
            "baseline_mean": comparison.baseline_mean, "mean": comparison.current_mean,
            "difference": comparison.difference, "interval": [comparison.low, comparison.high],
            "worst_traces": [{"trace_id": t, "score": v, "reason": r} for v, t, r in worst],
        }  # fmt: skip
        self.say(f"ragmetrics watch: {text}; worst traces: {', '.join(t for _, t, _ in worst)}")
        if self.config.alerts.webhook is not None and not _post(
            self.config.alerts.webhook, payload, self.say
        ):
            return text  # not recorded as sent: the next poll tries the webhook again
        self.store.record_alert(key, window, comparison.metric, text)
        return text

    def _write_window(self, window: str, summary: dict[str, Any]) -> None:
        from ragmetrics.history.update import update_history
        from ragmetrics.schema import ComparisonSettings, Report, ReportMetadata

        result = self._result(window)
        report = Report(
            runs=[result], metrics=result.metrics, settings=ComparisonSettings(test="fisher", correction="none"),
            metadata=ReportMetadata(
                created_at=datetime.fromtimestamp(window_end(window, self.seconds), UTC),
                config={"live": self.config.model_dump(mode="json", exclude={"judge"})},
            ),
        )  # fmt: skip
        folder = self.config.output / window
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "report.json").write_text(report.model_dump_json(indent=1), encoding="utf-8")
        (folder / "window.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
        from ragmetrics.history.store import load_history

        if any(r.folder == window for r in load_history(self.config.output).records):
            return  # written before a kill: the entry stands
        update_history(
            self.config.output, report, folder, nights=60, alpha=self.config.alerts.alpha, correction="none"
        )

    def _result(self, window: str) -> RunResult:
        per_query: dict[str, dict[str, float | None]] = {}
        failures: list[SampleFailure] = []
        metrics: list[str] = []
        for score, _ in self.store.scores_in(window):
            per_query.setdefault(score.trace_id, {})[score.metric] = score.value
            if score.metric not in metrics:
                metrics.append(score.metric)
            if score.value is None and score.failure and score.failure != "not_applicable":
                cause, _, message = score.failure.partition(": ")
                failures.append(
                    SampleFailure(query_id=score.trace_id, metric=score.metric, cause=cause, message=message)
                )
        judge_info = self._session.info() if self._session is not None else None
        result = RunResult(
            name="live", per_query=per_query, failures=failures,
            metadata=RunMetadata(kind="mixed", metrics=metrics, judge=judge_info),
        )  # fmt: skip
        result.recompute_aggregate()
        return result

    def run(self, *, stop: Callable[[], bool] | None = None) -> None:
        self.start()
        try:
            while stop is None or not stop():
                started = self.clock()
                self.poll()
                time.sleep(max(0.0, self.config.source.poll_s - (self.clock() - started)))
        finally:
            self.close()


def _by_trace(results: list[RunResult]) -> dict[str, list[RunResult]]:
    """Trace id -> the results it was scored in (history metrics are scored apart from the others)."""
    found: dict[str, list[RunResult]] = {}
    for result in results:
        for trace_id in result.per_query:
            found.setdefault(trace_id, []).append(result)
    return found


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


def _describe(summary: dict[str, Any]) -> str:
    parts = [f"{summary['sampled']} of {summary['traces']} traces judged, {summary['calls']} judge calls"]
    for metric, entry in sorted(summary["metrics"].items()):
        if entry["mean"] is not None:
            parts.append(f"{metric} {entry['mean']:.3f} (n {entry['n']})")
    return "; ".join(parts)


def _post(url: str, payload: dict[str, Any], say: Say) -> bool:
    body = json.dumps(payload, default=str).encode()
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    for attempt in range(3):
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                if 200 <= response.status < 300:
                    return True
        except OSError as exc:
            if attempt == 2:
                say(f"ragmetrics watch: the webhook failed ({exc}); the alert is sent again on the next poll")
        time.sleep(0.2 * (attempt + 1))
    return False
