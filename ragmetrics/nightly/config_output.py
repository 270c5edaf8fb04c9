"""Where a night's results go: the `output:` section (the dated folders, their formats, the history page,
MLflow) and the `engine:` section (where the work runs: this process or a Ray cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from ragmetrics.nightly.config_base import _Section

OutputFormat = Literal["json", "parquet", "csv", "md", "html"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("json", "parquet", "csv", "md", "html")


class MlflowOutput(_Section):
    """Log every night to an MLflow tracking server (docs/mlflow.md; pip install 'ragmetrics[mlflow]')."""

    tracking_uri: str = Field(
        description="the tracking server, e.g. http://127.0.0.1:5000 (or sqlite:///mlflow.db)"
    )
    experiment: str | None = Field(
        default=None, description="the MLflow experiment (default: the config's name)"
    )
    timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="the whole logging step, queued nights and loading MLflow's client "
        "included, gives up after this long: at worst timeout_s + 1 s (what is not logged stays queued and is "
        "completed next time; the night goes on)",
    )


class OutputConfig(_Section):
    dir: Path = Field(default=Path("ragmetrics-out"), description="each run writes a dated folder here")
    formats: list[OutputFormat] = Field(
        default_factory=lambda: list(OUTPUT_FORMATS), description="artifacts to write; json is required"
    )
    plots: bool = Field(
        default=True,
        description="every plot in report.html, as files in the night's plots/ folder (needs matplotlib)",
    )
    keep: int | None = Field(
        default=30,
        ge=1,
        description="keep only the newest N dated folders under dir (older ones are deleted after a run; "
        "history.jsonl keeps every night's means for the history page); null keeps all",
    )
    history: bool = Field(
        default=True,
        description="after every night, add a line to history.jsonl in dir and rewrite history.html (the nights "
        "over time, drift, what changed; `ragmetrics history DIR` prints it)",
    )
    history_nights: int = Field(
        default=7,
        ge=5,
        le=365,
        description="the trend test looks at the last N comparable nights of each series (at least 5)",
    )
    mlflow: MlflowOutput | None = Field(
        default=None,
        description="{tracking_uri, experiment, timeout_s}: each night logged to MLflow (a tracker that is down "
        "never fails the night: the night is queued and logged next time)",
    )

    @field_validator("formats")
    @classmethod
    def _json_always(cls, v: list[OutputFormat]) -> list[OutputFormat]:
        if "json" not in v:
            raise ValueError("'json' is required: report.json is what a later run's --baseline reads")
        return list(dict.fromkeys(v))


class EngineConfig(_Section):
    """Where the work runs: this process, or a Ray cluster (pip install '.[ray]' in a clone; docs/scale.md)."""

    kind: Literal["local", "ray"] = Field(default="local", description="'local' (this process) or 'ray'")
    address: str | None = Field(
        default=None, description="ray: 'auto', 'ray://host:10001', or unset to start a local cluster"
    )
    workers: int = Field(default=2, ge=1, le=10_000, description="ray: judge actors")
    batch_size: int = Field(
        default=64, ge=1, description="ray: samples per judge task (the checkpoint granularity)"
    )
    num_cpus: int | None = Field(
        default=None, ge=1, description="ray: CPUs of a local cluster (default: all)"
    )
    worker_cpus: float = Field(default=1.0, gt=0, description="ray: CPUs reserved per judge actor")
    retrieval_shards: int | None = Field(
        default=None, ge=1, description="ray: retrieval tasks per run (default: 2 per worker)"
    )

    def options(self) -> dict[str, object]:
        """The keyword arguments of `RayEngine`."""
        return self.model_dump(exclude={"kind"})
