"""A night's dataset, wherever it comes from: QA rows (`builtin`, `path`), traces (`traces`), or both."""

from __future__ import annotations

from collections.abc import Sequence

from ragmetrics.nightly.config_dataset import DatasetConfig
from ragmetrics.nightly.dataset import load_dataset as load_qa
from ragmetrics.nightly.qa_dataset import QADataset
from ragmetrics.nightly.traced import attach_traces

__all__ = ["load_dataset"]


def load_dataset(config: DatasetConfig, *, progress: bool = True, keep: Sequence[str] = ()) -> QADataset:
    """The QA dataset (paths already resolved); with `traces`, the traced system's outputs on its questions,
    or the traces alone as the dataset (`nightly.traced`)."""
    if config.traces is None:
        return load_qa(config, progress=progress, keep=keep)
    qa = load_qa(config, progress=progress, keep=keep) if config.builtin or config.path else None
    return attach_traces(config, qa)
