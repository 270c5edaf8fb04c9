"""A utility folder's `utility.json` read strictly: where its qrels came from (generator, metric, when, k, runs),
checked field by field and against the qrels beside it.

Why strict: the manifest is what a report says about the qrels every `utility:` score stands on. A manifest
that is damaged (not JSON, a field missing or of the wrong type) or that does not belong to the qrels beside it
(another build's counts, a qrels file edited since) would make the report state a provenance the grades do not
have; so it is an error naming the file and the field, never skipped and never guessed around.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ragmetrics.errors import InputError, json_fault, json_problem
from ragmetrics.retrieval.qrels import Qrels

__all__ = [
    "SCHEMA",
    "UtilityManifest",
    "check_against_qrels",
    "parse_utility_manifest",
    "read_utility_manifest",
    "utility_qrels_path",
]

SCHEMA = "ragmetrics-utility-1"
MANIFEST = "utility.json"
QRELS_FILE = "utility.qrels"  # what a build writes (utility.result.QRELS_FILE)
ANSWER_METRICS = ("token_f1", "exact_match", "answer_correctness")  # utility.build.AnswerMetric
RELEVANT_GRADE = 1


@dataclass(frozen=True)
class UtilityManifest:
    """What utility.json says, validated: the file, its provenance fields, the relevant grades it counts, the
    graded pairs it counts, and the name of its qrels file."""

    path: Path
    generator: dict[str, Any]
    metric: str
    created: str
    k: int
    runs: list[str]
    max_grade: int
    relevant: int
    scored: int
    qrels_file: str
    logprobs_refused: str | None
    raw: Mapping[str, Any]

    @property
    def qrels_path(self) -> Path:
        return self.path.parent / self.qrels_file


def _field(data: Mapping[str, Any], dotted: str, path: Path) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise InputError("missing: a utility manifest needs it", source=str(path), field=dotted)
        node = node[part]
    return node


def _int(data: Mapping[str, Any], dotted: str, path: Path, minimum: int) -> int:
    value = _field(data, dotted, path)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"expected an integer >= {minimum}, got {value!r}", source=str(path), field=dotted)
    return value


def _text(data: Mapping[str, Any], dotted: str, path: Path) -> str:
    value = _field(data, dotted, path)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"expected a non-empty string, got {value!r}", source=str(path), field=dotted)
    return value


def read_utility_manifest(path: str | Path) -> UtilityManifest:
    """`path` (a utility.json) validated field by field; an InputError naming the file and the field."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(file)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason}", source=str(file)) from None
    except json.JSONDecodeError as exc:
        raise InputError(json_problem(exc), source=str(file), line=json_fault(exc)[0]) from None
    return parse_utility_manifest(data, file)


def parse_utility_manifest(data: Any, file: Path) -> UtilityManifest:
    """A manifest already parsed from JSON (or a build's own, `UtilityJudgments.manifest()`), validated as
    `read_utility_manifest` validates the file; `file` names it in errors."""
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, got {type(data).__name__}", source=str(file))
    if data.get("schema") != SCHEMA:
        raise InputError(
            f"expected {SCHEMA!r} (a `ragmetrics utility` folder), got {data.get('schema')!r}",
            source=str(file),
            field="schema",
        )
    for dotted in ("qrels.origin", "provenance.origin"):
        if _field(data, dotted, file) != "utility":
            raise InputError(
                f"expected 'utility', got {_field(data, dotted, file)!r}", source=str(file), field=dotted
            )
    generator = _field(data, "provenance.generator", file)
    if not isinstance(generator, dict):
        raise InputError(
            f"expected the generator's identity (an object), got {generator!r}",
            source=str(file),
            field="provenance.generator",
        )
    if not generator or ("kind" in generator and not isinstance(generator["kind"], str)):
        raise InputError(
            f"expected the generator's identity (kind, model, settings), got {generator!r}",
            source=str(file),
            field="provenance.generator",
        )
    metric = _text(data, "provenance.metric", file)
    if metric not in ANSWER_METRICS:
        raise InputError(
            f"expected one of {', '.join(ANSWER_METRICS)}, got {metric!r}",
            source=str(file),
            field="provenance.metric",
        )
    created = _text(data, "provenance.created", file)
    try:
        datetime.fromisoformat(created)
    except ValueError:
        raise InputError(
            f"expected an ISO 8601 time, got {created!r}", source=str(file), field="provenance.created"
        ) from None
    runs = _field(data, "provenance.runs", file)
    if not isinstance(runs, list) or not all(isinstance(r, str) for r in runs):
        raise InputError(
            f"expected a list of run names, got {runs!r}", source=str(file), field="provenance.runs"
        )
    refused = data["provenance"].get("logprobs_refused")
    if refused is not None and not isinstance(refused, str):
        raise InputError(
            f"expected null or a string, got {refused!r}",
            source=str(file),
            field="provenance.logprobs_refused",
        )
    qrels_file = _text(data, "files.qrels", file)
    if Path(qrels_file).name != qrels_file:
        raise InputError(
            f"expected a file name in the folder, got {qrels_file!r}", source=str(file), field="files.qrels"
        )
    relevant = _int(data, "qrels.relevant_by_origin.utility", file, 0)
    counted = _int(data, "counts.relevant", file, 0)
    if counted != relevant:
        raise InputError(
            f"counts {counted} relevant grades but qrels.relevant_by_origin.utility says {relevant}",
            source=str(file),
            field="counts.relevant",
        )
    return UtilityManifest(
        path=file,
        generator=dict(generator),
        metric=metric,
        created=created,
        k=_int(data, "provenance.k", file, 1),
        runs=list(runs),
        max_grade=_int(data, "provenance.max_grade", file, 1),
        relevant=relevant,
        scored=_int(data, "counts.scored", file, 0),
        qrels_file=qrels_file,
        logprobs_refused=refused,
        raw=data,
    )


def check_against_qrels(manifest: UtilityManifest, qrels: Mapping[str, Mapping[str, int]]) -> None:
    """An InputError naming utility.json's field when the qrels beside it are not the ones it describes (a
    qrels file edited or copied from another build since)."""
    grades = [g for docs in qrels.values() for g in docs.values()]
    relevant = sum(1 for g in grades if g >= RELEVANT_GRADE)
    where = f"{manifest.qrels_path} holds"
    if len(grades) != manifest.scored:
        raise InputError(
            f"counts {manifest.scored} graded pairs, but {where} {len(grades)}: the manifest and the qrels are "
            "not from the same build",
            source=str(manifest.path),
            field="counts.scored",
        )
    if relevant != manifest.relevant:
        raise InputError(
            f"counts {manifest.relevant} relevant grades, but {where} {relevant}: the manifest and the qrels "
            "are not from the same build",
            source=str(manifest.path),
            field="qrels.relevant_by_origin.utility",
        )
    top = max(grades, default=0)
    if top > manifest.max_grade:
        raise InputError(
            f"is {manifest.max_grade}, but {where} a grade {top}",
            source=str(manifest.path),
            field="provenance.max_grade",
        )


def utility_qrels_path(path: str | Path) -> tuple[Path, UtilityManifest] | None:
    """For a qrels path given as a utility folder, or as the qrels file of one (a file beside a utility.json
    that names it): the qrels file and its manifest, validated against each other; None for any other path."""
    given = Path(path)
    folder = given if given.is_dir() else given.parent
    if not (folder / MANIFEST).is_file():
        return None
    if given.is_file() and given.name != (_named_qrels(folder / MANIFEST) or QRELS_FILE):
        # another file of the folder (a team's own qrels kept beside it, maybe beside another tool's
        # utility.json, a common name): plain qrels, not these grades, whatever that utility.json holds
        return None
    manifest = read_utility_manifest(folder / MANIFEST)
    qrels = Qrels.read(manifest.qrels_path)
    check_against_qrels(manifest, qrels.to_dict())
    return manifest.qrels_path, manifest


def _named_qrels(manifest: Path) -> str | None:
    """The qrels file a utility.json names (files.qrels), read leniently; None when it is no such manifest
    (not JSON, another tool's file) or names no file of its folder: only deciding whether a qrels file given
    beside it is its own (which is then read strictly)."""
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("files"), dict):
        return None
    named = data["files"].get("qrels")
    return named if isinstance(named, str) and named and Path(named).name == named else None
