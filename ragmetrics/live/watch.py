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

import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from ragmetrics.engines.base import Engine, JudgeSession
from ragmetrics.judge.conversation import HISTORY_METRICS
from ragmetrics.judge.registry import registered_metrics
from ragmetrics.live.config import OPERATIONAL, WatchConfig, window_seconds
from ragmetrics.live.golden import GoldenSet, golden_sample
from ragmetrics.live.phoenix import PhoenixClient
from ragmetrics.live.receiver import OtlpReceiver
from ragmetrics.live.sampling import Sampler
from ragmetrics.live.sources import OtlpFileTail
from ragmetrics.live.store import LiveStore, StoredScore
from ragmetrics.live.watch_base import (
    DECIDE_BATCH,
    MAX_BACKOFF_S,
    MAX_READS_PER_POLL,
    TRANSIENT,
    WRITE_BATCH,
    PollResult,
    Say,
    WatcherBase,
    receiver_source_key,
    spool_path,
)
from ragmetrics.live.watch_traces import PROMPT_OVERHEAD_TOKENS, TraceIntake
from ragmetrics.live.watch_windows import WindowClosing
from ragmetrics.schema import RunResult
from ragmetrics.traces.openinference import TraceSet, traces_from_spans
from ragmetrics.traces.otlp import Span

__all__ = [  # noqa: RUF022 (in the order they were written, for the API reference)
    "spool_path",
    "receiver_source_key",
    "Say",
    "TRANSIENT",
    "MAX_BACKOFF_S",
    "WRITE_BATCH",
    "DECIDE_BATCH",
    "MAX_READS_PER_POLL",
    "PollResult",
    "Watcher",
    "PROMPT_OVERHEAD_TOKENS",
]


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Watcher(TraceIntake, WindowClosing, WatcherBase):
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
        self.store.forget_turns(
            now - self.config.conversations.seconds(), self.config.conversations.max_turns
        )
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
            failed = [
                StoredScore(trace_id, m, None, f"budget_spent: {why}", None)
                for m in self._metrics_of(trace_id)
            ]
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
        for group, metrics in (
            (plain, self.metrics),
            (with_references, [*self.metrics, *self.golden_metrics]),
        ):
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
