"""The watcher's windows: a window closed once it ended and every sampled trace in it is scored, its summary
and report written into the history, compared with the baseline window, and its alerts sent once per episode
(a drop, or a trend the history's test finds), by webhook when configured.

Why its own module: closing a window reads only the store; it is the same whatever the source and judge."""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import UTC, datetime
from typing import Any

from ragmetrics.live.watch_base import (
    PollResult,
    Say,
    WatcherBase,
)
from ragmetrics.live.windows import WindowComparison, compare_windows, window_end
from ragmetrics.schema import RunMetadata, RunResult, SampleFailure

__all__ = ["WindowClosing"]


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


class WindowClosing(WatcherBase):
    """The watcher's window closing and alerting (module doc)."""

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
