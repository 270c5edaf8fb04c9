"""Local sentence embeddings for the built-in judge: no torch, no network (onnxruntime loads on first use)."""

from ragmetrics.embeddings.minilm import DIMENSION, MODEL_NAME, MiniLMEmbedder, physical_cores

__all__ = ["DIMENSION", "MODEL_NAME", "MiniLMEmbedder", "physical_cores"]
