"""An approximate dense index for where exact search stops scaling: FAISS's HNSW graph over a `DenseIndex`.

Exact search reads every vector for every question: linear in the corpus, ~0.1 s a question at a million
384-dimension chunks on one core (docs/benchmarks.md). An HNSW graph (Malkov & Yashunin, 2018) answers in
a few milliseconds at a recall below 1, which docs/benchmarks.md measures against exact search on the same run.

Why FAISS (`faiss-cpu`, the `ann` extra) and not hnswlib, usearch, annoy or pynndescent: it is maintained by
Meta with regular releases and manylinux wheels (no compiler needed), it holds exact (flat) and approximate
indexes behind one API, which lets the benchmark compare both in one library, and it writes and reads its
indexes itself. hnswlib's last release is from 2023; annoy's trees need more memory for the same recall;
pynndescent pulls numba graphs built at import; usearch is a strong alternative with a smaller install, kept
in mind should FAISS's wheel size matter.

The graph is persisted beside the dense index it was built from (`<root>/hnsw/<dense key>-m<M>-efc<ef>.faiss`),
with a checksum sidecar written after it: a graph whose bytes do not match is rebuilt, never read.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import ConfigError
from ragmetrics.index.dense import SEARCH_BLOCK, DenseIndex
from ragmetrics.index.ranking import best_k

__all__ = ["HnswIndex", "faiss_module"]


def faiss_module() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise ConfigError(
            "approximate dense search (search: hnsw) needs the 'ann' extra: pip install 'ragmetrics[ann]' "
            "(faiss-cpu)"
        ) from exc
    return faiss


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


class HnswIndex:
    """An HNSW graph over `dense`'s vectors (inner product: cosine of unit vectors); `search` is approximate."""

    def __init__(self, dense: DenseIndex, graph: Any, path: Path | None) -> None:
        self.dense, self.graph, self.path = dense, graph, path

    @classmethod
    def build(
        cls, dense: DenseIndex, root: Path | None, *, m: int = 32, ef_construction: int = 80
    ) -> tuple[HnswIndex, bool]:
        """(the graph, whether it was built now): read from `root` when stored whole, else built (and stored)."""
        faiss = faiss_module()
        path = None if root is None else Path(root) / "hnsw" / f"{dense.key}-m{m}-efc{ef_construction}.faiss"
        sidecar = None if path is None else path.with_suffix(".json")
        if path is not None and sidecar is not None and path.exists() and sidecar.exists():
            try:
                recorded = json.loads(sidecar.read_text(encoding="utf-8"))
                if recorded.get("sha256") == _sha256(path) and recorded.get("rows") == len(dense):
                    return cls(dense, faiss.read_index(str(path)), path), False
            except (OSError, ValueError, RuntimeError):
                pass  # rebuilt below
        graph = faiss.IndexHNSWFlat(dense.vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = ef_construction
        for start in range(0, len(dense), SEARCH_BLOCK):
            graph.add(np.ascontiguousarray(dense.vectors[start : start + SEARCH_BLOCK], dtype=np.float32))
        if path is not None and sidecar is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
            faiss.write_index(graph, str(tmp))
            record = {"sha256": _sha256(tmp), "rows": len(dense), "m": m, "ef_construction": ef_construction}
            os.replace(tmp, path)
            tmp_sidecar = sidecar.with_name(f".{sidecar.name}.{uuid.uuid4().hex}.tmp")
            tmp_sidecar.write_text(json.dumps(record), encoding="utf-8")
            os.replace(tmp_sidecar, sidecar)
        return cls(dense, graph, path), True

    def search(self, query: NDArray[np.float32], k: int, *, ef_search: int = 128) -> list[tuple[int, float]]:
        """The approximately best `k` (position, cosine), ties by id descending among those found."""
        self.graph.hnsw.efSearch = max(ef_search, k)
        scores, positions = self.graph.search(np.asarray(query, dtype=np.float32).reshape(1, -1), k)
        found = positions[0] >= 0
        pos, values = positions[0][found].astype(np.int64), scores[0][found].astype(np.float64)
        best = best_k(values, pos, self.dense.id_ranks, k, positive_only=False)
        lookup = {int(p): float(s) for p, s in zip(pos, values, strict=True)}
        return [(p, lookup[p]) for p in best]
