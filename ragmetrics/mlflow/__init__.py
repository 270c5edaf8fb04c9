"""ragmetrics and MLflow (pip install 'ragmetrics[mlflow]'; docs/mlflow.md): nights logged to a tracking server
(`nights`), and ragmetrics metrics as scorers of `mlflow.genai.evaluate` (`scorers`). Nothing here is imported
by the core: `mlflow` is loaded only when one of these is used."""

from __future__ import annotations

from typing import Any

__all__ = ["log_night", "log_nights", "ragmetrics_scorers"]


def __getattr__(name: str) -> Any:
    if name in ("log_night", "log_nights"):
        from ragmetrics.mlflow import nights

        return getattr(nights, name)
    if name == "ragmetrics_scorers":
        from ragmetrics.mlflow.scorers import ragmetrics_scorers

        return ragmetrics_scorers
    raise AttributeError(name)
