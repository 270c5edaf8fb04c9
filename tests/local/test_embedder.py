from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragmetrics.embeddings import DIMENSION, MiniLMEmbedder, physical_cores
from ragmetrics.embeddings.minilm import BATCH_TOKENS, MIN_FILL, TOKENIZER_PATH, length_batches
from ragmetrics.errors import JudgeError
from ragmetrics.judge.base import Embedder


def test_shape_dtype_and_unit_norm(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.encode(["The json module parses JSON.", "", "a " * 600])
    assert vectors.shape == (3, DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_input_gives_empty_matrix(embedder: MiniLMEmbedder) -> None:
    assert embedder.encode([]).shape == (0, DIMENSION)


def test_semantics_paraphrase_beats_unrelated(embedder: MiniLMEmbedder) -> None:
    a, b, c = embedder.encode(
        [
            "How do I read a text file line by line in Python?",
            "Iterate over the open file object to get one line at a time.",
            "The sqlite3 module provides a DB-API interface for SQLite databases.",
        ]
    )
    assert float(a @ b) > float(a @ c) + 0.2


def test_result_independent_of_batching_order_and_cache() -> None:
    texts = [f"Sentence {i} about the {'very ' * (i % 7)}useful pathlib module." for i in range(90)]
    base = MiniLMEmbedder(batch_size=64, cache_size=0).encode(texts)
    small = MiniLMEmbedder(batch_size=5, cache_size=0).encode(texts[::-1])[::-1]
    cached = MiniLMEmbedder(cache_size=10)
    cached.encode(texts[:20])
    again = cached.encode(texts)
    np.testing.assert_allclose(small, base, atol=1e-6)
    np.testing.assert_allclose(again, base, atol=1e-6)


def test_length_batches_cover_every_text_once_with_little_padding() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        lengths = [int(x) for x in rng.integers(3, 257, size=int(rng.integers(0, 300)))]
        batches = length_batches(lengths, max_rows=64)
        assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
        for batch in batches:
            widest = max(lengths[i] for i in batch)
            assert len(batch) <= 64
            assert len(batch) == 1 or widest * len(batch) <= BATCH_TOKENS
            # the padding a batch carries is bounded: every row is at least MIN_FILL of the widest
            assert min(lengths[i] for i in batch) >= MIN_FILL * widest


def test_mixed_lengths_embed_the_same_as_alone() -> None:
    """A short sentence batched with long passages gets the vector it gets alone (masking, per-row pooling)."""
    texts = ["Short.", "word " * 240, "A medium sentence about the csv module and its dialects.", "x " * 30]
    together = MiniLMEmbedder(cache_size=0).encode(texts)
    alone = np.stack([MiniLMEmbedder(cache_size=0).encode([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-6)


def test_duplicates_are_embedded_once_and_returned_in_place(embedder: MiniLMEmbedder) -> None:
    out = embedder.encode(["x y z", "other text", "x y z"])
    np.testing.assert_array_equal(out[0], out[2])
    assert not np.allclose(out[0], out[1])


def test_truncates_long_text_at_256_tokens(embedder: MiniLMEmbedder) -> None:
    base = "The itertools module builds efficient iterators. " * 40  # well over 256 tokens
    np.testing.assert_allclose(
        embedder.encode([base])[0], embedder.encode([base + " zebra" * 50])[0], atol=1e-6
    )


def test_async_embed_matches_encode(embedder: MiniLMEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    texts = ["asyncio runs coroutines", "threads share memory"]
    np.testing.assert_array_equal(asyncio.run(embedder.embed(texts)), embedder.encode(texts))


def test_rejects_non_strings(embedder: MiniLMEmbedder) -> None:
    with pytest.raises(TypeError, match=r"texts\[1\] is int"):
        embedder.encode(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not one string"):
        embedder.encode("one sentence")


def test_bad_parameters_rejected() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        MiniLMEmbedder(batch_size=0)
    with pytest.raises(ValueError, match="threads"):
        MiniLMEmbedder(threads=0)


def test_missing_model_is_a_clear_judge_error(tmp_path: Path) -> None:
    with pytest.raises(JudgeError, match="missing") as info:
        MiniLMEmbedder(model_path=tmp_path / "nope.onnx").encode(["x"])
    assert info.value.cause == "embedder_unavailable"


def test_corrupt_tokenizer_detected(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{}")
    with pytest.raises(JudgeError, match="cannot read tokenizer file") as info:
        MiniLMEmbedder(tokenizer_path=bad).encode(["x"])
    assert info.value.cause == "embedder_unavailable"


def test_shipped_assets_present() -> None:
    assets = TOKENIZER_PATH.parent
    assert TOKENIZER_PATH.is_file()
    assert "Apache License" in (assets / "LICENSE-tokenizer.txt").read_text()
    assert "all-MiniLM-L6-v2" in (assets / "NOTICE-tokenizer.txt").read_text()


def test_physical_cores_is_positive() -> None:
    assert physical_cores() >= 1


def test_import_ragmetrics_does_not_load_onnxruntime() -> None:
    code = (
        "import sys, ragmetrics, ragmetrics.embeddings, ragmetrics.judge.backends.local, ragmetrics.judge.select\n"
        "import ragmetrics.judge.evaluate\n"
        "heavy = ('onnxruntime', 'tokenizers', 'torch', 'openai', 'numba', 'datasets')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
