"""QA datasets through `datasets`: load, map the user's columns onto ours, validate every row.

One dataset feeds three things: RagSamples for the judge, a Qrels (from relevant_ids/relevant_grades) and the
pipeline's own Run (from retrieved_ids/retrieved_scores). A bad row is reported with its 1-based row number and
field; with ``on_bad_row="skip"`` it is left out and listed in `QADataset.skipped`, never dropped silently.

List-valued fields (contexts, ids, scores, grades) may be stored in CSV cells as JSON arrays.
When the dataset has no id column, ids are ``row-<n>`` and `QADataset.generated_ids` says so.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from ragmetrics._textfile import read_utf8
from ragmetrics.errors import InputError, json_fault, json_problem
from ragmetrics.nightly.config import DatasetConfig
from ragmetrics.nightly.qa_dataset import ATTACK_REASON, BadRow, Passage, QADataset
from ragmetrics.nightly.qa_files import checked_jsonl, detect_format, read_passages, read_rows
from ragmetrics.nightly.qa_rows import TRUTH_FIELDS, validate_rows

__all__ = [
    "ATTACK_REASON",
    "TRUTH_FIELDS",
    "BadRow",
    "Passage",
    "QADataset",
    "detect_format",
    "load_dataset",
    "read_passages",
    "read_qa",
    "read_rows",
    "validate_rows",
]


def read_qa(
    path: str | Path,
    *,
    mapping: Mapping[str, str] | None = None,
    language: str | None = None,
    on_bad_row: Literal["fail", "skip"] = "fail",
    passages: str | Path | None = None,
    relevant_order: Literal["set", "ranked"] = "set",
) -> QADataset:
    """A QA dataset from a file (JSONL, JSON, CSV, Parquet), a saved `datasets` folder or a test-set folder,
    validated as `ragmetrics run` validates it: rows without ids are numbered `row-<n>`, every bad row named
    by its 1-based row and field. Iterating it gives its `RagSample`s; `.qrels()` and `.run()` what its
    relevant and retrieved ids imply."""
    config = DatasetConfig(
        path=Path(path),
        mapping=dict(mapping or {}),
        language=language,
        on_bad_row=on_bad_row,
        passages=Path(passages) if passages is not None else None,
        relevant_order=relevant_order,
    )
    return load_dataset(config, progress=False)


def load_dataset(config: DatasetConfig, *, progress: bool = True, keep: Sequence[str] = ()) -> QADataset:
    """Load, map and validate the QA dataset a config describes (paths already resolved). A night reads its
    dataset through `nightly.load.load_dataset`, which also reads `dataset.traces`."""
    if config.attacks is not None:
        return _load_attacks(config, keep)
    if config.traces is not None and config.builtin is None and config.path is None:
        raise InputError("holds traces, not QA rows: read it with ragmetrics.nightly.load.load_dataset",
                         source=str(config.traces))  # fmt: skip
    return _load_qa(config, progress=progress, keep=keep)


def _load_qa(config: DatasetConfig, *, progress: bool, keep: Sequence[str]) -> QADataset:
    if config.builtin is not None:
        return _load_builtin(config, keep)
    assert config.path is not None
    path, fmt, passages = config.path, config.format, config.passages
    testset_corpus = _testset_folder(path)
    if testset_corpus is not None:  # a folder `ragmetrics testset` wrote: its questions, and its corpus
        path, fmt = path / "questions.jsonl", "json"
        if passages is None and isinstance(testset_corpus, Path):
            passages = testset_corpus
    source = str(path)
    broken: list[BadRow] = []
    numbers: list[int] | None = None
    if fmt in ("auto", "json", "jsonl") and path.is_file() and path.suffix.lower() in (".jsonl", ".ndjson"):
        path, numbers, broken = checked_jsonl(path, config.on_bad_row)
    rows = read_rows(path, fmt, config.split, progress=progress)
    dataset = validate_rows(
        rows,
        source=source,
        mapping=config.mapping,
        on_bad_row=config.on_bad_row,
        limit=config.limit,
        language=config.language,
        keep=keep,
        ranked_relevance=config.relevant_order == "ranked",
        numbers=numbers,
    )
    if broken:
        dataset.skipped = sorted([*broken, *dataset.skipped], key=lambda b: b.row)
    if passages is not None:
        dataset.passages = read_passages(passages)
    if testset_corpus is not None:
        dataset.testset_folder = config.path
    return dataset


def _load_attacks(config: DatasetConfig, keep: Sequence[str]) -> QADataset:
    """An attack set as a dataset: its questions.jsonl (clean twins and attacks, the planted documents and
    system-prompt additions passed on to the pipeline as extra columns), its corpus as passages when that is
    the built-in collection or a JSONL file, and its checks, validated against the rows."""
    from ragmetrics.attacks.store import read_attack_set

    assert config.attacks is not None
    attack_set = read_attack_set(config.attacks)  # questions.jsonl read and validated once, here
    # Every key on every row (null where a question has no planted documents or system-prompt addition), so
    # the pipeline's input has the same keys for attacks and clean questions.
    rows = [row.model_dump() for row in attack_set.rows]
    dataset = validate_rows(
        rows, source=str(config.attacks / "questions.jsonl"), language=config.language, keep=keep
    )
    corpus = attack_set.manifest.get("corpus_path")
    passages = config.passages
    if passages is None and corpus == "builtin":
        passages = Path(importlib.import_module("ragmetrics.collection").passages_path())
    elif passages is None and isinstance(corpus, str) and corpus.endswith((".jsonl", ".ndjson")):
        passages = Path(corpus) if Path(corpus).is_file() else None
    if passages is not None:
        dataset.passages = read_passages(passages)
        # Retriever runs index the corpus and every planted document; each question then keeps its own attack's
        # documents only (attacks.exposure.own_documents_only), so retrievers are attacked as systems are.
        for row in attack_set.rows:
            for planted in row.planted_documents or []:
                dataset.passages[planted.id] = Passage(planted.id, planted.text, planted.title)
    dataset.attacks = attack_set
    return dataset


def _testset_folder(path: Path) -> Path | str | None:
    """For a test-set folder (ragmetrics.testset.output): its corpus as a passages file when it is a JSONL file
    (or the built-in collection's), "" when the corpus cannot serve as passages; None for any other path."""
    if not (path.is_dir() and (path / "testset.json").is_file() and (path / "questions.jsonl").is_file()):
        return None
    try:
        manifest = json.loads(read_utf8(path / "testset.json"))
    except json.JSONDecodeError as exc:
        raise InputError(
            json_problem(exc), source=str(path / "testset.json"), line=json_fault(exc)[0]
        ) from None
    corpus = manifest.get("corpus_path") if isinstance(manifest, dict) else None
    if corpus == "builtin":
        return Path(importlib.import_module("ragmetrics.collection").passages_path())
    if isinstance(corpus, str) and corpus.endswith((".jsonl", ".ndjson")) and Path(corpus).is_file():
        return Path(corpus)
    return ""


def _load_builtin(config: DatasetConfig, keep: Sequence[str]) -> QADataset:
    collection = importlib.import_module("ragmetrics.collection")
    rows: list[dict[str, Any]] = collection.load_qa()
    dataset = validate_rows(
        rows,
        source=f"builtin:{config.builtin}",
        mapping=config.mapping,
        on_bad_row=config.on_bad_row,
        limit=config.limit,
        language=config.language,
        keep=keep,
    )
    # qa.jsonl lists only the relevant passages (grade >= 1); qrels.txt also holds the judged non-relevant
    # ones (grade 0), without which bpref takes them for unjudged and comes out far too high (0.77 vs 0.51).
    if dataset.columns.get("relevant_ids") == "relevant_ids":  # not when a mapping put another column there
        judged: dict[str, dict[str, int]] = collection.load_qrels().to_dict()
        dataset.relevance = {qid: judged[qid] for qid in dataset.relevance}
    passages = config.passages if config.passages is not None else Path(collection.passages_path())
    dataset.passages = read_passages(passages)
    return dataset
