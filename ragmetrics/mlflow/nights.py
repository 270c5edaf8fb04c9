"""Nights in MLflow (`output: {mlflow: {tracking_uri, experiment}}`, `ragmetrics history DIR --to-mlflow URI`).

One MLflow run per night (the parent), a child run per compared run, and one long-lived "history" run per
compared run whose metrics are logged at a step per night (the night's time in seconds), so MLflow's charts
draw each system's means over the nights. What is logged:

- params (parent): a hash of the night's config, the comparison's test and correction, the judge's backend,
  model, endpoint (its public form: no credentials, no query string), prompt versions, the dataset's and the
  relevance judgments' fingerprints, ragmetrics' version;
- metrics: per compared run and metric the mean, the bounds of its 95 % t interval and n (child runs, and the
  history runs); per compared pair the difference and its corrected p, the gate's verdict (1 passed, 0
  failed) and its regressions, an adaptive night's judged questions (parent);
- tags: the night's key, folder and status, the commit (GITHUB_SHA, CI_COMMIT_SHA, or the git HEAD of the
  working directory), the adaptive decisions settled and unsettled;
- artifacts: report.html, .md, .json, and attacks.* and alignment pages where the folder holds them.

**Idempotent.** Every run is found by a stable key in its tags (the night's name and folder; a child's run
name; a history run's system), never created twice; a metric already logged with its value is not logged
again, and a history step already there is skipped, so re-logging a night (or every night, by the history
command) changes nothing but what was missing. **Never fails a night**: the caller catches a tracker that
is down (`TrackerDown`), says so, and queues the night in `mlflow-backlog.jsonl` beside the history; the next
night (or the history command) logs the backlog first. `timeout_s` bounds the whole logging step, queued
nights included (each request also gives up within it, without the MLflow client's long default retries).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics._textfile import write_atomic
from ragmetrics.comparison.means import mean_interval
from ragmetrics.errors import RagmetricsError
from ragmetrics.schema import Report

__all__ = ["BACKLOG", "MlflowTarget", "TrackerDown", "log_backlog", "log_night", "log_nights", "metric_name"]

BACKLOG = "mlflow-backlog.jsonl"
ARTIFACTS = ("report.html", "report.md", "report.json", "attacks.html", "attacks.md", "attacks.json",
             "alignment.html", "alignment.json", "live.html")  # fmt: skip
KEY_TAG = "ragmetrics.night_key"
ROLE_TAG = "ragmetrics.role"
SYSTEM_TAG = "ragmetrics.system"


class TrackerDown(RagmetricsError):
    """The tracking server could not be reached or refused the night (the message says which)."""


@dataclass(frozen=True)
class MlflowTarget:
    tracking_uri: str
    experiment: str | None = None
    """None: each night's own name."""
    timeout_s: float = 30.0
    """the whole logging step (queued nights included), not each request."""


def metric_name(*parts: str) -> str:
    """An MLflow metric or param name from ragmetrics names: `ndcg@10` -> `ndcg_at_10`; anything outside
    MLflow's alphabet (letters, digits, _ - . / and space) becomes `_`."""
    joined = ".".join(p.replace("@", "_at_") for p in parts)
    return re.sub(r"[^A-Za-z0-9_\-./ ]", "_", joined)


@contextmanager
def _quick(timeout_s: float) -> Iterator[None]:
    """MLflow's HTTP requests give up after `timeout_s` and retry at most once while this holds (its defaults
    retry for minutes: a night must not wait that long for a tracker that is down)."""
    keys = ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(max(1, int(timeout_s)))
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "1"
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"  # no "View run at ..." per run on the terminal
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _commit() -> str | None:
    for key in ("GITHUB_SHA", "CI_COMMIT_SHA"):
        if os.environ.get(key):
            return os.environ[key]
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _public(url: str | None) -> str | None:
    from ragmetrics.judge.openai.scrub import public_url

    return public_url(url)


def night_params(report: Report) -> dict[str, str]:
    meta = report.metadata
    nightly = meta.nightly
    config = json.dumps(meta.config, sort_keys=True, default=str)
    params = {
        "config_hash": hashlib.sha256(config.encode()).hexdigest()[:16],
        "compare.test": report.settings.test,
        "compare.correction": report.settings.correction,
        "dataset_fingerprint": meta.dataset_fingerprint or "",
        "truth_fingerprint": meta.truth_fingerprint or "",
        "ragmetrics_version": meta.ragmetrics_version,
    }
    judge = nightly.judge if nightly is not None else None
    if judge is not None:
        params.update({"judge.backend": judge.backend, "judge.model": judge.model,
                       "judge.base_url": _public(judge.base_url) or "",
                       "judge.prompt_versions": ",".join(f"{k}={v}" for k, v in sorted(judge.prompt_versions.items()))})  # fmt: skip
    return {metric_name(k): v[:6000] for k, v in params.items()}


def run_metrics(report: Report, run: str) -> dict[str, float]:
    """A compared run's means, 95 % t interval bounds and n, per metric."""
    out: dict[str, float] = {}
    for metric, stats in report.descriptive.get(run, {}).items():
        out[metric_name(metric, "mean")] = stats.mean
        out[metric_name(metric, "n")] = float(stats.count)
        interval = mean_interval(stats)
        if interval is not None:
            out[metric_name(metric, "ci_low")], out[metric_name(metric, "ci_high")] = interval
    return out


def night_metrics(report: Report) -> dict[str, float]:
    """The night's own figures: comparisons, the gate, an adaptive night's spend."""
    out: dict[str, float] = {"questions": float(report.metadata.query_count)}
    for c in report.comparisons:
        pair = f"{c.candidate}_vs_{c.baseline}"
        out[metric_name("diff", c.metric, pair)] = c.mean_diff
        out[metric_name("p_corrected", c.metric, pair)] = c.p_corrected
    nightly = report.metadata.nightly
    if nightly is not None and nightly.regression is not None:
        out["gate_passed"] = 0.0 if nightly.regression.failed else 1.0
        out["gate_regressions"] = float(len(nightly.regression.regressions))
    if nightly is not None and nightly.adaptive is not None:
        out["adaptive_judged"] = float(nightly.adaptive.judged)
        out["adaptive_questions"] = float(nightly.adaptive.questions)
    return out


def _tags(report: Report, folder: Path, key: str) -> dict[str, str]:
    nightly = report.metadata.nightly
    tags = {KEY_TAG: key, ROLE_TAG: "night", "ragmetrics.folder": str(folder)}
    if nightly is not None and nightly.regression is not None:
        tags["ragmetrics.gate"] = nightly.regression.status
    if nightly is not None and nightly.adaptive is not None:
        settled = sum(1 for d in nightly.adaptive.decisions if d.verdict != "unsettled")
        tags["ragmetrics.decisions"] = f"{settled} settled, {len(nightly.adaptive.decisions) - settled} unsettled"
    commit = _commit()
    if commit:
        tags["ragmetrics.commit"] = commit
    return tags


def _load(folder: Path) -> Report:
    from pydantic import ValidationError

    from ragmetrics._textfile import read_utf8
    from ragmetrics.errors import InputError

    path = folder / "report.json"
    try:
        return Report.model_validate_json(read_utf8(path))
    except ValidationError as exc:
        raise InputError(f"not a ragmetrics report ({exc.error_count()} problems)", source=str(path)) from None


class _Logger:
    """Find-or-create runs by their tags and log only what is missing (module docstring)."""

    def __init__(self, tracking_uri: str, experiment_name: str) -> None:
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=tracking_uri)
        experiment = self.client.get_experiment_by_name(experiment_name)
        self.experiment_id = (experiment.experiment_id if experiment is not None
                              else self.client.create_experiment(experiment_name))  # fmt: skip

    def find(self, tags: dict[str, str]) -> Any | None:
        clause = " and ".join(f"tags.`{k}` = '{v.replace(chr(39), '')}'" for k, v in tags.items())
        found = self.client.search_runs([self.experiment_id], filter_string=clause, max_results=2)
        return found[0] if found else None

    def run(self, tags: dict[str, str], name: str, start_ms: int, extra: dict[str, str] | None = None) -> Any:
        run = self.find(tags)
        if run is None:
            run = self.client.create_run(self.experiment_id, start_time=start_ms, tags={**tags, **(extra or {})},
                                         run_name=name)  # fmt: skip
        elif extra:
            for k, v in extra.items():
                if run.data.tags.get(k) != v:
                    self.client.set_tag(run.info.run_id, k, v)
        return run

    def metrics(self, run: Any, values: dict[str, float], timestamp_ms: int, step: int = 0) -> None:
        from mlflow.entities import Metric

        have = run.data.metrics
        fresh = [Metric(k, float(v), timestamp_ms, step) for k, v in values.items() if have.get(k) != float(v)]
        for start in range(0, len(fresh), 900):
            self.client.log_batch(run.info.run_id, metrics=fresh[start : start + 900])

    def params(self, run: Any, values: dict[str, str]) -> None:
        from mlflow.entities import Param

        fresh = [Param(k, v) for k, v in values.items() if k not in run.data.params]
        if fresh:
            self.client.log_batch(run.info.run_id, params=fresh)

    def history_step(self, run: Any, values: dict[str, float], timestamp_ms: int, step: int) -> None:
        """Each value at `step` unless its history already has that step (a night logged twice)."""
        from mlflow.entities import Metric

        fresh = []
        for key, value in values.items():
            if key in run.data.metrics and any(m.step == step for m in self.client.get_metric_history(run.info.run_id, key)):
                continue
            fresh.append(Metric(key, float(value), timestamp_ms, step))
        for start in range(0, len(fresh), 900):
            self.client.log_batch(run.info.run_id, metrics=fresh[start : start + 900])


def log_night(folder: Path, target: MlflowTarget) -> str:
    """Log the night in `folder` (its report.json and artifacts); returns the night's MLflow run id. Raises
    TrackerDown when the tracker cannot be reached or refuses it (the caller queues the night)."""
    report = _load(folder)
    name = report.metadata.nightly.name if report.metadata.nightly is not None else "ragmetrics"
    key = f"{name}/{folder.name}"
    when = report.metadata.created_at
    ms, step = int(when.timestamp() * 1000), int(when.timestamp())
    try:
        with _quick(target.timeout_s):
            log = _Logger(target.tracking_uri, target.experiment or name)
            parent = log.run({KEY_TAG: key, ROLE_TAG: "night"}, f"{name} {folder.name}", ms, _tags(report, folder, key))
            log.params(parent, night_params(report))
            log.metrics(parent, night_metrics(report), ms)
            for result in report.runs:
                values = run_metrics(report, result.name)
                child = log.run({KEY_TAG: key, ROLE_TAG: "system", SYSTEM_TAG: result.name}, result.name, ms,
                                {"mlflow.parentRunId": parent.info.run_id})  # fmt: skip
                log.metrics(child, values, ms)
                log.client.set_terminated(child.info.run_id, "FINISHED", end_time=ms)
                history = log.run({ROLE_TAG: "history", SYSTEM_TAG: result.name, "ragmetrics.night": name},
                                  f"history: {result.name}", ms)  # fmt: skip
                log.history_step(history, values, ms, step)
            for artifact in ARTIFACTS:
                if (folder / artifact).is_file():
                    log.client.log_artifact(parent.info.run_id, str(folder / artifact))
            log.client.set_terminated(parent.info.run_id, "FINISHED", end_time=ms)
            return str(parent.info.run_id)
    except TrackerDown:
        raise
    except Exception as exc:  # connection refused, timeouts, a server error: the night goes on, queued
        raise TrackerDown(f"MLflow at {_public(target.tracking_uri)}: {type(exc).__name__}: {_short(exc)}") from None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + (" ..." if len(text) > 300 else "")


def log_nights(folders: Sequence[Path], target: MlflowTarget) -> tuple[list[Path], list[str]]:
    """Log each night (oldest first); returns (the folders logged, one line per night that was not).

    `timeout_s` bounds the whole step, queued nights included: each night gets what is left of it (a tracker
    that accepts connections and never answers costs the night timeout_s once, not once per queued night), and
    once the tracker has failed the nights after it are not tried (they stay queued)."""
    logged, problems = [], []
    import mlflow.tracking  # noqa: F401  # loading the client (seconds, once) is not the tracker's time

    deadline = time.monotonic() + target.timeout_s
    down: str | None = None
    for folder in sorted(folders, key=lambda f: f.name):
        left = deadline - time.monotonic()
        if down is not None or left <= 0:
            why = down or f"the logging step's {target.timeout_s:g} s ran out"
            problems.append(f"{folder.name}: not tried ({why})")
            continue
        try:
            _within(left, folder, target)
        except TrackerDown as exc:
            problems.append(f"{folder.name}: {exc}")
            down = "the tracker failed on an earlier night"
            continue
        logged.append(folder)
    return logged, problems


def _within(seconds: float, folder: Path, target: MlflowTarget) -> None:
    """`log_night` given at most `seconds`: MLflow's own timeout is per request and whole seconds, so a tracker
    that never answers would hold the night several times longer. The night is logged on a daemon thread; one
    still waiting when the time is up is left behind (its requests end with MLflow's own timeout) and the night
    stays queued (logging is idempotent by tags: a later try finds what it wrote)."""
    outcome: list[BaseException | None] = []

    def work() -> None:
        try:
            log_night(folder, target)
            outcome.append(None)
        except BaseException as exc:  # handed to the caller's thread below
            outcome.append(exc)

    worker = threading.Thread(target=work, name=f"mlflow {folder.name}", daemon=True)
    worker.start()
    worker.join(seconds)
    if not outcome:
        raise TrackerDown(f"MLflow at {_public(target.tracking_uri)}: no answer within {seconds:.1f} s (timeout_s)")
    if outcome[0] is not None:
        raise outcome[0]


def read_backlog(root: Path) -> list[str]:
    path = root / BACKLOG
    if not path.is_file():
        return []
    names = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            names.append(str(json.loads(line)["folder"]))
        except (ValueError, KeyError, TypeError):
            continue  # a damaged line: that night is logged by the history command instead
    return list(dict.fromkeys(names))


def write_backlog(root: Path, names: Sequence[str]) -> None:
    path = root / BACKLOG
    if not names:
        path.unlink(missing_ok=True)
        return
    write_atomic(path, "".join(json.dumps({"folder": n}) + "\n" for n in dict.fromkeys(names)))


def log_backlog(root: Path, folder: Path, target: MlflowTarget) -> list[str]:
    """Tonight's night (`folder`) after the nights still queued in `root`'s backlog; what is not logged stays
    queued. Returns lines for the notes (nothing when all went well)."""
    queued = [n for n in read_backlog(root) if (root / n / "report.json").is_file() and n != folder.name]
    logged, problems = log_nights([root / n for n in queued] + [folder], target)
    done = {f.name for f in logged}
    left = [n for n in [*queued, folder.name] if n not in done]
    write_backlog(root, left)
    notes = []
    if problems:
        notes.append(f"mlflow: {len(left)} night(s) not logged, queued in {root / BACKLOG} for the next night or "
                     f"`ragmetrics history {root} --to-mlflow`: {problems[-1]}")  # fmt: skip
    if queued and done & set(queued):
        notes.append(f"mlflow: logged {len(done & set(queued))} queued night(s) from the backlog")
    return notes
