"""Where a night's relevance grades came from, and which compared runs they may favour.

A pooled test set (`ragmetrics testset --pool ...`) has most of its relevant grades from the pooling judge, not
from the chunk a question was written from. Two things then bias a comparison, and a report that does not say
so lets a verdict flip without a word:

- a run that was itself pooled had its top-k judged, so every relevant chunk it found counts, while another
  run's finds outside the pool count as non-relevant;
- a run that ranks with the pooling judge's own model (the local judge's MiniLM, and the `dense` and
  `bm25_embedding_rerank` retrievers; or e5, or an LLM judge's embedding model, when a run's reranker uses it)
  agrees with the judge by construction.

Runs are matched to the pool by what they are (kind, ranking settings and models: `retrievers.identity`, as
the test set recorded each pool member), never by their names.

`qrels_provenance` reads the shares from a test-set folder's testset.json (or says the dataset's grades have
no recorded origin); `favour_warnings` names each compared run in either case. Both go into report.json
(`nightly.dataset.qrels`) and every rendering of the report, and `ragmetrics score` prints them.

Utility qrels (`ragmetrics utility`, a night's `utility/`) record theirs in utility.json: `utility_provenance`
reads it into the same `QrelsProvenance` (origin `utility`, with the generator, metric, time, k and runs), and
`qrels_path_provenance` does so for a qrels path given as a utility folder or its utility.qrels, so
`ragmetrics retrieval`/`compare` and a night scoring a built folder (`utility_qrels.folder`) say where their
grades came from as a test set's do. A damaged utility.json, or one that does not match its qrels, is an
error naming the file and the field (`utility.manifest`), never skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics._textfile import read_utf8
from ragmetrics.schema import QrelsProvenance

if TYPE_CHECKING:
    from ragmetrics.utility.manifest import UtilityManifest

__all__ = [
    "ComparedRun",
    "favour_warnings",
    "model_key",
    "qrels_path_provenance",
    "qrels_provenance",
    "utility_provenance",
]


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
    members = pool.get("members") if pool is not None else None
    shared = qrels.get("shared_with_copies", 0) if isinstance(qrels, dict) else 0
    return QrelsProvenance(
        pool_members=[dict(m) for m in members if isinstance(m, dict)] if isinstance(members, list) else [],
        source=str(folder),
        relevant=sum(by_origin.values()),
        by_origin=by_origin,
        pool_runs=runs,
        pool_judge=judge,
        shared_with_copies=shared if isinstance(shared, int) else 0,
    )


def utility_provenance(manifest: UtilityManifest, source: str | None = None) -> QrelsProvenance:
    """The provenance of a utility folder's qrels from its validated utility.json (`utility.manifest`): every
    relevant grade from the utility judgments, and who made them (generator, metric, when, k, runs)."""
    from ragmetrics.schema_utility import UtilityOrigin

    return QrelsProvenance(
        source=source or str(manifest.path.parent),
        relevant=manifest.relevant,
        by_origin={"utility": manifest.relevant},
        utility=UtilityOrigin(
            manifest=str(manifest.path),
            generator=manifest.generator,
            metric=manifest.metric,
            created=manifest.created,
            k=manifest.k,
            runs=manifest.runs,
            max_grade=manifest.max_grade,
            logprobs_refused=manifest.logprobs_refused,
        ),
    )


def qrels_path_provenance(path: str | Path) -> tuple[Path, QrelsProvenance] | None:
    """For a qrels path that is a utility folder or its qrels file: the qrels file to read and its provenance,
    utility.json checked against it; None for any other path (its grades have no recorded origin)."""
    given = Path(path)
    if not ((given if given.is_dir() else given.parent) / "utility.json").is_file():
        return None  # not a utility folder's: nothing to import or read
    from ragmetrics.utility.manifest import utility_qrels_path

    found = utility_qrels_path(given)
    if found is None:
        return None
    qrels_file, manifest = found
    return qrels_file, utility_provenance(manifest, str(qrels_file))


def _manifest(folder: Path) -> dict[str, Any] | None:
    path = folder / "testset.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(read_utf8(path))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None  # the dataset reader reports a broken manifest with its line; nothing to add here
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class ComparedRun:
    """A compared run as the pool check sees it: its name, what it is when ragmetrics built it (a reference
    retriever's `ranking_identity`, else None), and the runs a fused run was fused from."""

    name: str
    identity: Mapping[str, Any] | None = None
    fused_from: Sequence[str] = ()


def model_key(name: str) -> str:
    """A model's name without its organisation and packaging, so "sentence-transformers/all-MiniLM-L6-v2" and the
    local judge's "all-MiniLM-L6-v2-onnx-int8" (or "intfloat/multilingual-e5-small" and
    "multilingual-e5-small-q4") are one model."""
    base = name.strip().lower().rsplit("/", 1)[-1]
    return re.sub(r"([-_.](onnx|int8|int4|uint8|q4|q8|fp16|fp32|quantized|gguf))+$", "", base)


def _grader_models(judge: Mapping[str, str | None]) -> list[str]:
    names = [judge.get("model"), judge.get("embedding_model")]
    return list(dict.fromkeys(part.strip() for n in names if n for part in n.split(" + ") if part.strip()))


def _pooled_member(provenance: QrelsProvenance, identity: Mapping[str, Any]) -> str | None:
    """The pool member that ranks as `identity` does, by kind, settings and models; None when none does. A test
    set from before pool members were recorded names kinds only: then a retriever of that kind with its
    default settings is the member."""
    from ragmetrics.retrievers.identity import ranking_identity, same_ranking

    if provenance.pool_members:
        for member in provenance.pool_members:
            if member.get("retriever") and same_ranking(member, identity):
                return str(member.get("name"))
        return None
    for name in provenance.pool_runs:
        kind = name.removeprefix("pool:")
        if same_ranking(ranking_identity(kind, {}), identity):
            return name
    return None


def favour_warnings(provenance: QrelsProvenance, runs: Sequence[ComparedRun]) -> QrelsProvenance:
    """`provenance` with a warning per compared run the qrels may favour (`warnings`, `favoured`), and the runs
    that could not be checked (`unchecked`). Runs are matched to the pool by what they are, never by name: a
    run named "bm25" with other settings is not the pool's BM25, and "my_dense" is the pool's "pool:dense"."""
    if not provenance.by_origin.get("judge"):
        return provenance
    share = provenance.by_origin["judge"] / provenance.relevant if provenance.relevant else 0.0
    judge = provenance.pool_judge or {}
    graders = {model_key(m): m for m in _grader_models(judge)}
    reasons: dict[str, list[str]] = {}
    unchecked = [run.name for run in runs if run.identity is None and not run.fused_from]
    members = {run.name: _pooled_member(provenance, run.identity) for run in runs if run.identity is not None}
    # Pooling favours a pooled run over the runs that were not pooled; when every compared run was pooled
    # (TREC's practice: pool every system you compare) it favours none of them over another.
    every_run_pooled = len(runs) > 0 and all(members.get(run.name) is not None for run in runs)
    for run in runs:
        if run.identity is None:
            continue
        found = []
        member = members[run.name]
        if member is not None and not every_run_pooled:
            found.append(
                f"it ranks as the pooled run {member!r} does (same retriever, settings and models), so every "
                "relevant chunk it found was graded while other runs' finds outside the pool count as non-relevant"
            )
        shared = [graders[k] for m in run.identity.get("models") or [] if (k := model_key(str(m))) in graders]
        if shared:
            found.append(
                f"it ranks with {shared[0]}, the model of the {judge.get('backend') or ''} judge that graded the "
                f"pool ({share:.0%} of the relevant grades), so the grades agree with it by construction"
            )
        if found:
            reasons[run.name] = found
    for run in runs:  # a fused run inherits what favours the runs it fuses
        inherited = [name for name in run.fused_from if name in reasons]
        if inherited:
            reasons[run.name] = [f"it fuses {', '.join(map(repr, inherited))}, which the qrels may favour"]
    return provenance.model_copy(
        update={
            "warnings": [
                f"the comparison may favour run {name!r}: {'; and '.join(why)}"
                for name, why in reasons.items()
            ],
            "favoured": list(reasons),
            "unchecked": unchecked,
        }
    )
