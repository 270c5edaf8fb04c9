"""Where a night's relevance grades came from, and which compared runs they may favour.

A pooled test set (`ragmetrics testset --pool ...`) has most of its relevant grades from the pooling judge, not
from the chunk a question was written from. Two things then bias a comparison, and a report that does not say
so lets a verdict flip without a word:

- a run that was itself pooled had its top-k judged, so every relevant chunk it found counts, while another
  run's finds outside the pool count as non-relevant;
- a run that ranks with the pooling judge's own model (the local judge's MiniLM, and the `dense` and
  `bm25_embedding_rerank` retrievers) agrees with the judge by construction.

`qrels_provenance` reads the shares from a test-set folder's testset.json (or says the dataset's grades have
no recorded origin); `favour_warnings` names each compared run in either case. Both go into report.json
(`nightly.dataset.qrels`) and every rendering of the report, and `ragmetrics score` prints them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmetrics._textfile import read_utf8
from ragmetrics.schema import QrelsProvenance

__all__ = ["EMBEDDING_RETRIEVERS", "favour_warnings", "qrels_provenance"]


EMBEDDING_RETRIEVERS = {"dense": "all-MiniLM-L6-v2", "bm25_embedding_rerank": "all-MiniLM-L6-v2"}
"""Reference retriever kinds that rank with an embedding model by default, and the model (as its name starts)."""


def qrels_provenance(
    relevance: Mapping[str, Mapping[str, int]], source: str, folder: Path | None
) -> QrelsProvenance | None:
    """The provenance of `relevance` (question -> doc -> grade): from the test-set folder's manifest when the
    dataset is one, else the dataset's own grades with no recorded origin; None without relevance grades."""
    relevant = sum(1 for grades in relevance.values() for g in grades.values() if g >= 1)
    if not relevance:
        return None
    manifest = _manifest(folder) if folder is not None else None
    if manifest is None:
        return QrelsProvenance(source=source, relevant=relevant, by_origin={"dataset": relevant})
    qrels = manifest.get("qrels") if isinstance(manifest.get("qrels"), dict) else {}
    origins = qrels.get("relevant_by_origin") if isinstance(qrels, dict) else None
    by_origin = (
        {str(k): int(v) for k, v in origins.items() if isinstance(v, int)}
        if isinstance(origins, dict)
        else {"dataset": relevant}
    )
    pool = manifest.get("pool") if isinstance(manifest.get("pool"), dict) else None
    judge: dict[str, str | None] | None = None
    runs: list[str] = []
    if pool is not None:
        runs = [str(r) for r in pool.get("runs", [])]
        given = pool.get("judge")
        if isinstance(given, dict):
            judge = {k: (str(v) if v is not None else None) for k, v in given.items()}
        elif isinstance(manifest.get("judge"), str):  # a test set built before the pool recorded its judge
            judge = {"backend": manifest["judge"], "model": None, "embedding_model": None}
    shared = qrels.get("shared_with_copies", 0) if isinstance(qrels, dict) else 0
    return QrelsProvenance(
        source=str(folder),
        relevant=sum(by_origin.values()),
        by_origin=by_origin,
        pool_runs=runs,
        pool_judge=judge,
        shared_with_copies=shared if isinstance(shared, int) else 0,
    )


def _manifest(folder: Path) -> dict[str, Any] | None:
    path = folder / "testset.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(read_utf8(path))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None  # the dataset reader reports a broken manifest with its line; nothing to add here
    return data if isinstance(data, dict) else None


def favour_warnings(
    provenance: QrelsProvenance, runs: Sequence[tuple[str, str, Mapping[str, Any]]]
) -> list[str]:
    """A warning per compared run the qrels may favour. `runs`: (run name, retriever kind or '' for a run
    not built by a reference retriever, its params)."""
    if not provenance.by_origin.get("judge"):
        return []
    share = provenance.by_origin["judge"] / provenance.relevant if provenance.relevant else 0.0
    pooled = {r.removeprefix("pool:") for r in provenance.pool_runs}
    judge = provenance.pool_judge or {}
    judge_models = " ".join(filter(None, [judge.get("model"), judge.get("embedding_model")]))
    out = []
    for name, kind, params in runs:
        reasons = []
        # By what the run is (a reference retriever of a pooled kind with default params), never by its name: a
        # team's pipeline run named "bm25" is not the pool's BM25.
        if kind and kind in pooled and not params:
            reasons.append("it is one of the runs the qrels were pooled from, so every relevant chunk it found was "
                           "graded while other runs' finds outside the pool count as non-relevant")  # fmt: skip
        model = EMBEDDING_RETRIEVERS.get(kind)
        custom = kind == "bm25_embedding_rerank" and params.get("reranker") is not None
        if model is not None and not custom and judge.get("backend") == "local" and model in judge_models:
            reasons.append(
                f"it ranks with {model}, the model of the local judge that graded the pool ({share:.0%} of "
                "the relevant grades), so the grades agree with it by construction"
            )
        if reasons:
            out.append(f"the comparison may favour run {name!r}: {'; and '.join(reasons)}")
    return out
