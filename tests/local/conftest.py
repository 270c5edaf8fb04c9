"""One embedder for the whole directory: the ONNX session loads once per test session."""

from __future__ import annotations

import pytest

from ragmetrics.embeddings import MiniLMEmbedder


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()
