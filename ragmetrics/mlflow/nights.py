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
- artifacts: report.html with its plots/ folder, .md, .json, and attacks.* and alignment pages where the folder
  holds them.

**Always finishable.** Every run carries a stable id of ours (tag `ragmetrics.id`, a hex digest of the
night's name and folder, and of the compared run's name: tracker.py), and a night is logged in stages:
the parent (RUNNING, its tags and params), the child runs, the metrics, the history steps, the artifacts, and
last the children and then the parent marked FINISHED. Logging again finds each run by its id and adds only
what is missing (a metric whose value is there is not logged again; a history step is marked `pending` on
the history run before it is logged and `done` after, so an interrupted step is checked metric by metric and
never logged twice). So a parent that is FINISHED holds all of its night, and a night cut short at any stage
(a timeout, a kill, a tracker error) is completed by the next try. **Never fails a night**: the caller
catches a tracker that is down (`TrackerDown`), says so, and queues the night in `mlflow-backlog.jsonl`
beside the history; the next night (or the history command) logs the backlog first.

**Bounded.** `log_nights` (the night's logging step) runs on a worker thread that the night waits for at
most `timeout_s`, loading MLflow's client included; every request gets what is left of it as its timeout and
no retries, and a worker still busy when the time is up stops before its next request. The night therefore
never waits longer than `timeout_s` plus the thread's hand-over (milliseconds; docs/mlflow.md says
`timeout_s` + 1 s).

**Test seam.** `MlflowTarget.on_stage`, when set, is called with each stage's name as it is reached
(`STAGES`); what it raises is what a tracker failing at that point would do, and a hook that kills the
process is a kill there (tests/reach/test_mlflow.py interrupts each stage so).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmetrics._textfile import write_atomic
from ragmetrics.comparison.means import mean_interval
from ragmetrics.mlflow.tracker import (
    ID_TAG,
    Cancelled,
    Tracker,
    TrackerDown,
    run_id_for,
    saved_env,
    shown_uri,
)
from ragmetrics.mlflow.tracker import restore_env as _restore_env
from ragmetrics.schema import Report

__all__ = ["BACKLOG", "STAGES", "Logged", "MlflowTarget", "TrackerDown", "experiment_of", "log_backlog",
           "log_night", "log_nights", "metric_name"]  # fmt: skip

BACKLOG = "mlflow-backlog.jsonl"
PLOTS = "plots"
"""The report page's plot files, beside report.html (logged under the same folder name, so the page finds them)."""
ARTIFACTS = ("report.html", "report.md", "report.json", "attacks.html", "attacks.md", "attacks.json",
             "alignment.html", "alignment.json", "live.html")  # fmt: skip
KEY_TAG = "ragmetrics.night_key"
ROLE_TAG = "ragmetrics.role"
SYSTEM_TAG = "ragmetrics.system"
STEP_TAG = "ragmetrics.step."
"""+ the night's id, on a history run: `pending` while the night's step is being logged, `done` after."""
LEGACY_STEPS_TAG = "ragmetrics.legacy_steps"
"""On a history run logged by an earlier ragmetrics (steps without markers): each step is checked by key."""
STAGES = ("parent", "child", "metrics", "step", "history", "artifacts", "finish")
"""Where `MlflowTarget.on_stage` is called: after the parent (with its params), after each child run is
found or created, after all metrics, inside each history step (marked pending, its metrics not yet logged),
after the history steps, before the artifacts, and before the runs are marked FINISHED."""


@dataclass(frozen=True)
class MlflowTarget:
    tracking_uri: str
    experiment: str | None = None
    """None: the night's own config's (output.mlflow.experiment, else its name: `experiment_of`)."""
    timeout_s: float = 30.0
    """log_nights: the whole logging step (queued nights included); log_night: each request."""
    on_stage: Callable[[str], None] | None = field(default=None, compare=False)
    """Test seam (module docstring): called with each stage's name as logging reaches it."""


@dataclass(frozen=True)
class Logged:
    """Where a night went: said on the terminal in one line (`line`)."""

    folder: Path
    tracking_uri: str
    experiment: str
    run_id: str
    url: str | None

    def line(self) -> str:
        where = self.url if self.url is not None else f"run {self.run_id}"
        return (f"mlflow: {self.folder.name} logged to {shown_uri(self.tracking_uri)}, experiment "
                f"{json.dumps(self.experiment, ensure_ascii=False)}: {where}")  # fmt: skip


def metric_name(*parts: str) -> str:
    """An MLflow metric or param name from ragmetrics names: `ndcg@10` -> `ndcg_at_10`; anything outside
    MLflow's alphabet (letters, digits, _ - . / and space) becomes `_`."""
    joined = ".".join(p.replace("@", "_at_") for p in parts)
    return re.sub(r"[^A-Za-z0-9_\-./ ]", "_", joined)


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



def experiment_of(report: Report) -> str:
    """The experiment a night belongs in when none is given: its config's output.mlflow.experiment, else the
    config's name (what the night itself logs into, so the history command and the night agree)."""
    config = report.metadata.config if isinstance(report.metadata.config, dict) else {}
    output = config.get("output") if isinstance(config.get("output"), dict) else {}
    settings = output.get("mlflow") if isinstance(output, dict) and isinstance(output.get("mlflow"), dict) else {}
    chosen = settings.get("experiment") if isinstance(settings, dict) else None
    if isinstance(chosen, str) and chosen:
        return chosen
    return _night_name(report)


def _night_name(report: Report) -> str:
    return report.metadata.nightly.name if report.metadata.nightly is not None else "ragmetrics"


def _same(a: float | None, b: float) -> bool:
    return a is not None and (a == b or (math.isnan(a) and math.isnan(b)))


class _Night:
    """One night's logging, stage by stage (module docstring); every request through `Tracker`."""

    def __init__(self, folder: Path, report: Report, tracker: Tracker, target: MlflowTarget) -> None:
        self.folder, self.report, self.tracker, self.target = folder, report, tracker, target
        self.name = _night_name(report)
        self.key = f"{self.name}/{folder.name}"
        self.night_id = run_id_for("night", self.name, folder.name)
        when = report.metadata.created_at
        self.ms, self.step = int(when.timestamp() * 1000), int(when.timestamp())
        self.legacy = False

    # Runs logged by an earlier ragmetrics carry no `ragmetrics.id`: found by filters made of ragmetrics'
    # constants, numbers and MLflow's own run ids only, matched on their names here in Python, then given
    # their id, so upgrading never duplicates a night.

    def _legacy_parent(self) -> Any | None:
        found = [r for r in self.tracker.search(f"tags.`{ROLE_TAG}` = 'night' and attributes.start_time = {self.ms}")
                 if r.data.tags.get(KEY_TAG) == self.key and ID_TAG not in r.data.tags]  # fmt: skip
        self.legacy = bool(found)
        return found[0] if found else None

    def _legacy_child(self, parent: Any, system: str) -> Callable[[], Any | None]:
        def find() -> Any | None:
            parent_id = str(parent.info.run_id)
            if not re.fullmatch(r"[0-9A-Za-z_-]+", parent_id):
                return None
            found = [r for r in self.tracker.search(f"tags.`mlflow.parentRunId` = '{parent_id}'")
                     if r.data.tags.get(SYSTEM_TAG) == system and ID_TAG not in r.data.tags]  # fmt: skip
            return found[0] if found else None

        return find

    def _legacy_history(self, system: str) -> Callable[[], Any | None]:
        def find() -> Any | None:
            found = [r for r in self.tracker.search(f"tags.`{ROLE_TAG}` = 'history'")
                     if r.data.tags.get(SYSTEM_TAG) == system and r.data.tags.get("ragmetrics.night") == self.name
                     and ID_TAG not in r.data.tags]  # fmt: skip
            if not found:
                return None
            self.tracker.set_tag(found[0], LEGACY_STEPS_TAG, "1")  # its steps carry no markers: checked by key
            found[0].data.tags[LEGACY_STEPS_TAG] = "1"
            return found[0]

        return find

    def stage(self, name: str) -> None:
        if self.target.on_stage is not None:
            self.target.on_stage(name)

    def log(self) -> str:
        from mlflow.entities import Metric, Param

        t = self.tracker
        parent = t.run(self.night_id, f"{self.name} {self.folder.name}", self.ms, _tags(self.report, self.folder, self.key),
                       self._legacy_parent)  # fmt: skip
        if parent.info.status == "FINISHED":
            return str(parent.info.run_id)  # FINISHED is set last: everything of the night is there
        params = night_params(self.report)
        t.log_batch(parent, params=[Param(k, v) for k, v in params.items() if k not in parent.data.params])
        self.stage("parent")
        children = []
        for result in self.report.runs:
            child = t.run(run_id_for("system", self.night_id, result.name), result.name, self.ms,
                          {KEY_TAG: self.key, ROLE_TAG: "system", SYSTEM_TAG: result.name,
                           "mlflow.parentRunId": parent.info.run_id},
                          self._legacy_child(parent, result.name) if self.legacy else None)  # fmt: skip
            children.append((result.name, child))
            self.stage("child")
        self._metrics(parent, night_metrics(self.report), Metric)
        for system, child in children:
            self._metrics(child, run_metrics(self.report, system), Metric)
        self.stage("metrics")
        histories = []
        for system, _ in children:
            history = t.run(run_id_for("history", self.name, system), f"history: {system}", self.ms,
                            {ROLE_TAG: "history", SYSTEM_TAG: system, "ragmetrics.night": self.name},
                            self._legacy_history(system))  # fmt: skip
            self._history_step(history, run_metrics(self.report, system), Metric)
            histories.append(history)
        self.stage("history")
        self.stage("artifacts")
        there = t.artifacts(parent)
        for artifact in ARTIFACTS:
            path = self.folder / artifact
            if path.is_file() and there.get(artifact) != path.stat().st_size:
                t.upload(parent, str(path))
        plots = self.folder / PLOTS
        if plots.is_dir():  # the report page loads its plots from this folder beside it
            there = t.artifacts(parent, PLOTS)
            for path in sorted(plots.iterdir()):
                if path.is_file() and there.get(f"{PLOTS}/{path.name}") != path.stat().st_size:
                    t.upload(parent, str(path), PLOTS)
        self.stage("finish")
        for run in [*(c for _, c in children), *histories]:
            if run.info.status != "FINISHED":
                t.finish(run, self.ms)
        t.finish(parent, self.ms)
        return str(parent.info.run_id)

    def _metrics(self, run: Any, values: dict[str, float], metric: Any) -> None:
        have = run.data.metrics
        self.tracker.log_batch(run, metrics=[metric(k, float(v), self.ms, 0) for k, v in values.items()
                                             if not _same(have.get(k), float(v))])  # fmt: skip

    def _history_step(self, run: Any, values: dict[str, float], metric: Any) -> None:
        """The night's step on a history run, once: marked pending before and done after, so a step cut
        short is completed metric by metric, never logged twice."""
        marker = STEP_TAG + self.night_id
        state = run.data.tags.get(marker)
        if state == "done":
            return
        fresh = dict(values)
        if state == "pending" or (state is None and LEGACY_STEPS_TAG in run.data.tags):
            fresh = {k: v for k, v in values.items()
                     if k not in run.data.metrics or self.step not in self.tracker.metric_steps(run, k)}  # fmt: skip
        if state is None:
            self.tracker.set_tag(run, marker, "pending")
        self.stage("step")
        self.tracker.log_batch(run, metrics=[metric(k, float(v), self.ms, self.step) for k, v in fresh.items()])
        self.tracker.set_tag(run, marker, "done")


def _logged(folder: Path, target: MlflowTarget, deadline: float | None, cancelled: threading.Event | None) -> Logged:
    report = _load(folder)
    experiment = target.experiment or experiment_of(report)
    try:
        tracker = Tracker(target.tracking_uri, experiment, target.timeout_s, deadline, cancelled)
        run_id = _Night(folder, report, tracker, target).log()
    except (TrackerDown, Cancelled):
        raise
    except Exception as exc:  # connection refused, timeouts, a server error: the night goes on, queued
        raise TrackerDown(f"MLflow at {shown_uri(target.tracking_uri)}: {type(exc).__name__}: {_short(exc)}") from None
    return Logged(folder, target.tracking_uri, experiment, run_id, tracker.url(run_id))


def log_night(folder: Path, target: MlflowTarget) -> Logged:
    """Log the night in `folder` (its report.json and artifacts), completing whatever an earlier try left
    out; each request gives up after `target.timeout_s`. Raises TrackerDown when the tracker cannot be
    reached or refuses it (the caller queues the night), InputError for a folder without a valid report."""
    saved = saved_env()
    try:
        return _logged(folder, target, None, None)
    except Cancelled as exc:  # not reached without a deadline; typed for completeness
        raise TrackerDown(str(exc)) from None
    finally:
        _restore_env(saved)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + (" ..." if len(text) > 300 else "")


def log_nights(folders: Sequence[Path], target: MlflowTarget) -> tuple[list[Logged], list[str]]:
    """Log each night (oldest first) within `target.timeout_s` in all; returns (the nights logged, one line
    per night that was not).

    The nights are logged on a worker thread, loading MLflow's client included, and the caller waits for it
    at most `timeout_s`: a tracker that accepts connections and never answers costs the night `timeout_s`
    once, not once per queued night or per retry. A worker still busy then stops before its next request
    (its last request ends with its own timeout, at most what was left); what it did not finish stays
    queued and the next try completes it. Once the tracker has failed, the nights after it are not tried."""
    ordered = sorted(folders, key=lambda f: f.name)
    deadline = time.monotonic() + target.timeout_s
    cancelled = threading.Event()
    outcomes: dict[Path, Logged | str] = {}
    saved = saved_env()

    def work() -> None:
        down: str | None = None
        for folder in ordered:
            if down is not None:
                outcomes[folder] = f"{folder.name}: not tried ({down})"
                continue
            try:
                outcomes[folder] = _logged(folder, target, deadline, cancelled)
            except Cancelled:
                return
            except TrackerDown as exc:
                outcomes[folder] = f"{folder.name}: {exc}"
                down = "the tracker failed on an earlier night"
            except Exception as exc:  # a damaged report: said, that night stays queued, the others go on
                outcomes[folder] = f"{folder.name}: {type(exc).__name__}: {_short(exc)}"

    worker = threading.Thread(target=work, name="mlflow logging", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    cancelled.set()  # before the environment is restored: the worker's next request never starts
    _restore_env(saved)
    done = dict(outcomes)
    logged = [v for v in done.values() if isinstance(v, Logged)]
    problems = [v for v in done.values() if isinstance(v, str)]
    for folder in ordered:
        if folder not in done:
            problems.append(f"{folder.name}: not logged within the logging step's {target.timeout_s:g} s (timeout_s)")
    return logged, problems


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
    queued. Returns lines for the terminal: where tonight's night went, or why it is queued."""
    queued = [n for n in read_backlog(root) if (root / n / "report.json").is_file() and n != folder.name]
    logged, problems = log_nights([root / n for n in queued] + [folder], target)
    done = {item.folder.name for item in logged}
    left = [n for n in [*queued, folder.name] if n not in done]
    write_backlog(root, left)
    notes = [item.line() for item in logged if item.folder.name == folder.name]
    if problems:
        notes.append(f"mlflow: {len(left)} night(s) not logged, queued in {root / BACKLOG} for the next night or "
                     f"`ragmetrics history {root} --to-mlflow`: {problems[-1]}")  # fmt: skip
    if queued and done & set(queued):
        notes.append(f"mlflow: logged {len(done & set(queued))} queued night(s) from the backlog")
    return notes
