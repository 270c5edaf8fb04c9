"""The MLflow client as ragmetrics uses it: every request within a budget, runs found by an id of ours.

Why a wrapper: MLflow's client retries for minutes by default and reads its timeout (whole seconds) from the
environment, so a tracker that accepts connections and never answers would hold a night far past `timeout_s`.
Here every request is preceded by `tick()`, which gives up once the budget is spent or the caller has stopped
waiting (`cancel()`), and sets MLflow's own per-request timeout to what is left (no retries: a night that is
not logged stays queued and a later try completes it). The hard bound is the caller's: `log_nights` waits on
the worker thread at most `timeout_s` (nights.py).

Runs are found by the `ragmetrics.id` tag, whose value is a hex digest ragmetrics computes (`run_id_for`):
no run, experiment or metric name ever enters a filter string, so quotes, backslashes, newlines or any
unicode in a name cannot break or widen a lookup. Experiments are looked up by name through MLflow's
get-by-name request (a parameter, not a filter)."""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from ragmetrics.errors import RagmetricsError

__all__ = ["ID_TAG", "Cancelled", "Tracker", "TrackerDown", "run_id_for", "shown_uri"]

ID_TAG = "ragmetrics.id"
_HEX = re.compile(r"[0-9a-f]{32}")
_ENV = ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT")
_ENV_LOCK = threading.Lock()
_DATABASE_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")


class TrackerDown(RagmetricsError):
    """The tracking server could not be reached or refused the night (the message says which)."""


class Cancelled(Exception):
    """The caller stopped waiting (its `timeout_s` ran out): this logging gives up before its next request."""


def run_id_for(*parts: str) -> str:
    """The stable id of a run: a digest of what identifies it (the night, the compared run, ...)."""
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:32]


def shown_uri(uri: str) -> str:
    """`uri` as the user wrote it, unless it carries credentials or a query: then without those (a password
    never reaches the terminal or a note). `sqlite:///tmp/x.db` stays exactly that."""
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#]*)(.*)$", uri, re.DOTALL)
    if match is None:
        return uri
    scheme, authority, rest = match.groups()
    authority = authority.rsplit("@", 1)[-1]
    rest = re.split(r"[?#]", rest, maxsplit=1)[0]
    return scheme + authority + rest


def _needs_database_driver(uri: str) -> str | None:
    """What to install for a database tracking URI when it is missing (mlflow-skinny stores runs in a
    database through SQLAlchemy and alembic, which it does not depend on)."""
    import importlib.util

    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme not in _DATABASE_SCHEMES:
        return None
    missing = [m for m in ("sqlalchemy", "alembic") if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (f"a {scheme} tracking URI needs {' and '.join(missing)} (MLflow's database store): "
            "pip install 'ragmetrics[mlflow]' installs them")  # fmt: skip


class Tracker:
    """One MLflow experiment through the client, every request within `deadline` (time.monotonic()) or, with
    no deadline, within `request_timeout_s` each."""

    def __init__(self, tracking_uri: str, experiment: str, request_timeout_s: float,
                 deadline: float | None = None, cancelled: threading.Event | None = None) -> None:  # fmt: skip
        self.request_timeout_s, self.deadline = request_timeout_s, deadline
        self.cancelled = cancelled if cancelled is not None else threading.Event()
        missing = _needs_database_driver(tracking_uri)
        if missing is not None:
            raise TrackerDown(missing)
        from mlflow.tracking import MlflowClient

        self.tick()
        self.tracking_uri = tracking_uri
        self.client = MlflowClient(tracking_uri=tracking_uri)
        self.experiment_name = experiment
        self.experiment_id = self._experiment(experiment)

    def tick(self) -> None:
        """Before every request: give up if the caller stopped waiting or the budget is spent; else MLflow's
        timeout for the next request is what is left (at least 1 s: MLflow reads whole seconds)."""
        with _ENV_LOCK:
            if self.cancelled.is_set():
                raise Cancelled("the logging step's timeout_s ran out")
            left = self.request_timeout_s
            if self.deadline is not None:
                left = min(left, self.deadline - time.monotonic())
                if left <= 0:
                    raise Cancelled("the logging step's timeout_s ran out")
            os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(max(1, math.ceil(left)))
            os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
            os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"  # no "View run at ..." per run

    def _experiment(self, name: str) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            if found.lifecycle_stage != "active":
                raise TrackerDown(f"the experiment {name!r} is deleted in this tracker: restore it "
                                  "(`mlflow experiments restore`) or choose another")  # fmt: skip
            return str(found.experiment_id)
        self.tick()
        try:
            return str(self.client.create_experiment(name))
        except Exception:  # created meanwhile by another night: found now, or the real error is raised
            self.tick()
            again = self.client.get_experiment_by_name(name)
            if again is None:
                raise
            return str(again.experiment_id)

    def find(self, run_id: str) -> Any | None:
        """The run tagged `ragmetrics.id = run_id` (the oldest, should two ever exist), or None."""
        if not _HEX.fullmatch(run_id):  # only ids of ours enter a filter
            raise ValueError(f"not a ragmetrics run id: {run_id!r}")
        self.tick()
        found = self.client.search_runs([self.experiment_id], filter_string=f"tags.`{ID_TAG}` = '{run_id}'",
                                        max_results=5, order_by=["attributes.start_time ASC"])  # fmt: skip
        return found[0] if found else None

    def search(self, filter_string: str) -> list[Any]:
        """Runs matching `filter_string`, which callers build from ragmetrics' own constants and numbers
        only (never a name): the lookup of runs logged before `ragmetrics.id` (nights.py)."""
        self.tick()
        return list(self.client.search_runs([self.experiment_id], filter_string=filter_string, max_results=1000))

    def run(self, run_id: str, name: str, start_ms: int, tags: dict[str, str],
            legacy: Callable[[], Any | None] | None = None) -> Any:  # fmt: skip
        """The run with this id (or the one `legacy` finds, then given the id), created (RUNNING) if missing;
        tags it lacks are set (one it has keeps its value: a night's commit is the one it was first logged
        with, not the HEAD of a later re-log)."""
        run = self.find(run_id)
        if run is None and legacy is not None:
            run = legacy()
            if run is not None:
                self.set_tag(run, ID_TAG, run_id)
        if run is None:
            self.tick()
            return self.client.create_run(self.experiment_id, start_time=start_ms, run_name=name,
                                          tags={**tags, ID_TAG: run_id})  # fmt: skip
        for key, value in tags.items():
            if key not in run.data.tags:
                self.tick()
                self.client.set_tag(run.info.run_id, key, value)
        return run

    def log_batch(self, run: Any, metrics: list[Any] | None = None, params: list[Any] | None = None) -> None:
        """In MLflow's batch limits (100 params, 1000 metrics a request)."""
        for start in range(0, len(params or []), 100):
            self.tick()
            self.client.log_batch(run.info.run_id, params=(params or [])[start : start + 100])
        for start in range(0, len(metrics or []), 900):
            self.tick()
            self.client.log_batch(run.info.run_id, metrics=(metrics or [])[start : start + 900])

    def metric_steps(self, run: Any, key: str) -> set[int]:
        self.tick()
        return {m.step for m in self.client.get_metric_history(run.info.run_id, key)}

    def set_tag(self, run: Any, key: str, value: str) -> None:
        self.tick()
        self.client.set_tag(run.info.run_id, key, value)

    def artifacts(self, run: Any, folder: str | None = None) -> dict[str, int | None]:
        """Artifact path -> size of what the run holds at its top level, or in `folder`."""
        self.tick()
        return {a.path: a.file_size for a in self.client.list_artifacts(run.info.run_id, folder)}

    def upload(self, run: Any, path: str, folder: str | None = None) -> None:
        self.tick()
        self.client.log_artifact(run.info.run_id, path, folder)

    def finish(self, run: Any, end_ms: int) -> None:
        self.tick()
        self.client.set_terminated(run.info.run_id, "FINISHED", end_time=end_ms)

    def url(self, run_id: str) -> str | None:
        """The run's page in the tracker's UI (http(s) trackers only)."""
        uri = shown_uri(self.tracking_uri)
        if not uri.startswith(("http://", "https://")):
            return None
        return f"{uri.rstrip('/')}/#/experiments/{self.experiment_id}/runs/{run_id}"


def restore_env(saved: dict[str, str | None]) -> None:
    with _ENV_LOCK:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def saved_env() -> dict[str, str | None]:
    return {k: os.environ.get(k) for k in _ENV}
