"""Chunk vectors kept on disk, keyed by (SHA-256 of the chunk's text, the embedding model's identity).

A night and a test-set build that see the same chunk ask the model for it once, ever: the vector is found by
the text's hash, whatever the chunk's id, document or position. A changed document changes only its own
chunks' texts, so only those miss. A different model (or the same name over other weights, see
`embedder_identity`) has its own folder and never answers for another.

Layout: `<root>/embeddings/<model key>/seg-*.rmx`, each segment an index file (`index.arrays`: atomic,
checksummed, memory-mapped) holding sorted 32-byte text hashes and their float32 vectors. Segments are only
ever added (a build writes one every `SEGMENT_ROWS` new vectors, so a build killed after an hour keeps what it
embedded) and merged when there are many (`compact`); a segment that fails its checks is moved aside to
`*.bad` and its chunks embedded again. Several processes may add segments at once: each writes its own file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import ConfigError
from ragmetrics.index.arrays import IndexFileError, IndexFileWriter, open_arrays, write_arrays

__all__ = ["DIGEST", "EmbeddingStore", "SyncEmbedder", "embedder_identity", "text_digest"]

logger = logging.getLogger("ragmetrics.index")

DIGEST = np.dtype("S32")
"""A chunk's key: the raw SHA-256 of its UTF-8 text (32 bytes; numpy compares them as fixed-width bytes)."""
SEGMENT_ROWS = 8192
"""New vectors per segment file: how much a killed build can lose, and how many files a big first build makes."""
MAX_SEGMENTS = 64
"""Past this many segments a lookup merges them into one (each night that changes documents adds one)."""


class SyncEmbedder(Protocol):
    """What the index needs of a model: one vector per text, in order (the retrievers' embedders)."""

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


def text_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def embedder_identity(embedder: Any) -> str:
    """What decides an embedder's vectors, as its `identity` (preferred) or `name`; a nameless embedder cannot
    key persisted vectors, and saying so beats storing them under a name another model could share."""
    identity = getattr(embedder, "identity", None) or getattr(embedder, "name", None)
    if not isinstance(identity, str) or not identity.strip():
        raise ConfigError(
            f"embedder {type(embedder).__name__} has no `name` (or `identity`) saying which model it is: "
            "persisted vectors are keyed by it. Give it one, or build the index in memory (index_dir=None)"
        )
    return identity


class _Segment:
    def __init__(self, path: Path, keys: NDArray[Any], vectors: NDArray[np.float32]) -> None:
        self.path, self.keys, self.vectors = path, keys, vectors


class EmbeddingStore:
    """The vectors of one model under `root` (module docstring). Counts what it embedded and what it reused."""

    @staticmethod
    def folder_of(root: Path, identity: str) -> Path:
        return Path(root) / "embeddings" / hashlib.sha256(identity.encode("utf-8")).hexdigest()[:24]

    def __init__(self, root: Path, identity: str) -> None:
        self.identity = identity
        self.folder = self.folder_of(root, identity)
        self.folder.mkdir(parents=True, exist_ok=True)
        label = self.folder / "model.txt"  # for a person looking at the folder; never read back
        if not label.exists():
            label.write_text(identity + "\n", encoding="utf-8")
        self._segments: dict[str, _Segment] = {}
        self.rejected = 0
        """Segment files found corrupt or truncated and moved aside (their chunks are embedded again)."""

    def _refresh(self) -> list[_Segment]:
        present = {p.name: p for p in self.folder.glob("seg-*.rmx")}
        for name in set(self._segments) - set(
            present
        ):  # merged away by another process: its rows are elsewhere
            del self._segments[name]
        for name, path in sorted(present.items()):
            if name in self._segments:
                continue
            try:
                meta, arrays = open_arrays(path)
                keys, vectors = arrays["keys"], arrays["vectors"]
                if meta.get("identity") != self.identity or keys.dtype != DIGEST or vectors.ndim != 2 \
                        or vectors.shape[0] != keys.shape[0] or vectors.dtype != np.float32:  # fmt: skip
                    raise IndexFileError(f"{path}: not a segment of {self.identity!r}")
            except (IndexFileError, KeyError) as exc:
                if not path.exists():
                    continue
                self.rejected += 1
                logger.warning("embedding store: %s; moved aside, its chunks will be embedded again", exc)
                path.replace(path.with_name(path.name + f".{uuid.uuid4().hex[:8]}.bad"))
                continue
            self._segments[name] = _Segment(path, keys, vectors)
        return [self._segments[n] for n in sorted(self._segments)]

    def locate(self, digests: NDArray[Any]) -> tuple[NDArray[np.int32], NDArray[np.int64], list[_Segment]]:
        """(segment number or -1, row in it) for each digest, and the segments they refer to."""
        segments = self._refresh()
        if len(segments) > MAX_SEGMENTS:
            self.compact()
            segments = self._refresh()
        where = np.full(len(digests), -1, dtype=np.int32)
        rows = np.zeros(len(digests), dtype=np.int64)
        for number, segment in enumerate(segments):
            todo = np.flatnonzero(where < 0)
            if todo.size == 0 or segment.keys.shape[0] == 0:
                continue
            wanted = digests[todo]
            pos = np.searchsorted(segment.keys, wanted)
            pos_clipped = np.minimum(pos, segment.keys.shape[0] - 1)
            found = segment.keys[pos_clipped] == wanted
            where[todo[found]] = number
            rows[todo[found]] = pos_clipped[found]
        return where, rows, segments

    def add(self, digests: Sequence[bytes], vectors: NDArray[np.float32]) -> None:
        """Store new vectors (one segment file, written atomically) after checking them: a vector that is not
        finite is an embedder fault and is refused, never stored."""
        if len(digests) != vectors.shape[0] or vectors.ndim != 2:
            raise ValueError(f"{len(digests)} digests for vectors of shape {vectors.shape}")
        if not np.isfinite(vectors).all():
            raise ValueError(
                f"embedder {self.identity!r} returned a vector that is not finite; nothing stored"
            )
        keys = np.array(digests, dtype=DIGEST)
        order = np.argsort(keys, kind="stable")
        keys, unique = np.unique(keys[order], return_index=True)
        name = f"seg-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.rmx"
        write_arrays(self.folder / name, "segment", {"identity": self.identity},
                     {"keys": keys, "vectors": np.ascontiguousarray(vectors[order][unique], dtype=np.float32)})  # fmt: skip

    def gather(self, where: NDArray[np.int32], rows: NDArray[np.int64], segments: list[_Segment],
               out: NDArray[np.float32]) -> None:  # fmt: skip
        """Copy each located vector into `out` (same order); every entry must have been found."""
        if (where < 0).any():
            raise ValueError("gather: some chunks have no stored vector")
        for number, segment in enumerate(segments):
            mine = np.flatnonzero(where == number)
            if mine.size:
                out[mine] = segment.vectors[rows[mine]]

    def compact(self) -> None:
        """Merge every segment into one (written first, then the old ones removed): fewer files to search.
        A process that still maps an old segment keeps reading it; one that lists it after removal skips it."""
        segments = self._refresh()
        if len(segments) < 2:
            return
        keys = np.concatenate([s.keys for s in segments])
        merged, first = np.unique(keys, return_index=True)
        dim = segments[0].vectors.shape[1]
        writer = IndexFileWriter(
            self.folder / f"seg-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.rmx", "segment",
            {"identity": self.identity}, {"keys": (DIGEST.str, (len(merged),)), "vectors": ("<f4", (len(merged), dim))},
        )  # fmt: skip
        try:
            writer.array("keys")[...] = merged
            offsets = np.cumsum([0] + [s.keys.shape[0] for s in segments])
            out = writer.array("vectors")
            for number, segment in enumerate(segments):
                mine = np.flatnonzero((first >= offsets[number]) & (first < offsets[number + 1]))
                out[mine] = segment.vectors[first[mine] - offsets[number]]
            writer.commit()
        except BaseException:
            writer.abort()
            raise
        for segment in segments:
            segment.path.unlink(missing_ok=True)
        self._segments.clear()
