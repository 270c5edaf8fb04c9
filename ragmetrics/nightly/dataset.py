"""QA datasets through `datasets`: load, map the user's columns onto ours, validate every row.

One dataset feeds three things: RagSamples for the judge, a Qrels (from relevant_ids/relevant_grades) and the
pipeline's own Run (from retrieved_ids/retrieved_scores). A bad row is reported with its 1-based row number and
field; with ``on_bad_row="skip"`` it is left out and listed in `QADataset.skipped`, never dropped silently.

List-valued fields (contexts, ids, scores, grades) may be stored in CSV cells as JSON arrays.
When the dataset has no id column, ids are ``row-<n>`` and `QADataset.generated_ids` says so.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import math
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ragmetrics._jsonl import numbered_jsonl
from ragmetrics._textfile import check_regular_file, open_regular, read_utf8
from ragmetrics.errors import InputError, json_fault, json_problem
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.text.language import LANGUAGE_CODE
from ragmetrics.judge.tool_calls import parse_tool_calls
from ragmetrics.nightly.config import DATASET_FIELDS, DatasetConfig

if TYPE_CHECKING:
    from ragmetrics.attacks.build import AttackSet
    from ragmetrics.nightly.traced_outputs import TracedOutputs
    from ragmetrics.retrieval.qrels import Qrels
    from ragmetrics.retrieval.run import Run

_SUFFIX_FORMATS = {
    ".jsonl": "json",
    ".json": "json",
    ".ndjson": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
TRUTH_FIELDS = (
    "id",
    "question",
    "reference",
    "relevant_ids",
    "relevant_grades",
    "language",
    "reference_tool_calls",
)
"""What a system is judged against; its outputs (answer, contexts, rankings) are not part of it."""
_LIST_FIELDS = (
    "contexts",
    "context_ids",
    "retrieved_ids",
    "retrieved_scores",
    "relevant_ids",
    "relevant_grades",
)


@dataclass(frozen=True)
class BadRow:
    """A row that failed validation: where (1-based row, our field, the user's column) and what was wrong."""

    row: int
    field: str
    column: str
    message: str

    def describe(self, source: str) -> str:
        column = f" (column {self.column!r})" if self.column != self.field else ""
        return f"{source}, row {self.row}, field {self.field!r}{column}: {self.message}"


@dataclass(frozen=True)
class Passage:
    id: str
    text: str
    title: str | None = None

    def as_dict(self) -> dict[str, str]:
        """The form `ragmetrics.retrievers.build_run` takes."""
        out = {"id": self.id, "text": self.text}
        if self.title is not None:
            out["title"] = self.title
        return out


@dataclass
class QADataset:
    """Validated samples plus what they imply: relevance judgments and the pipeline's own ranking."""

    source: str
    samples: list[RagSample]
    relevance: dict[str, dict[str, int]]
    retrieved: dict[str, dict[str, float]]
    fingerprint: str
    truth_fingerprint: str = ""
    """A hash of what the system is judged against (ids, questions, references, relevance judgments, languages),
    without its outputs: equal when only the answers or rankings changed, so two nights stay comparable."""
    skipped: list[BadRow] = field(default_factory=list)
    columns: dict[str, str] = field(default_factory=dict)  # our field -> the user's column
    ignored_columns: list[str] = field(default_factory=list)
    generated_ids: bool = False
    passages: dict[str, Passage] | None = None
    kept: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    """(row number, sample id, values) of the columns asked for by `keep` (human labels)."""
    extras: dict[str, dict[str, Any]] = field(default_factory=dict)
    """sample id -> the row's columns that map to none of our fields: passed on to the team's pipeline."""
    traced: TracedOutputs | None = None
    """What the traces measured per question, when the answers come from `dataset.traces`."""
    attacks: AttackSet | None = None
    """The attack set, when the dataset is one (`dataset.attacks`): its checks decide the attack metrics."""
    testset_folder: Path | None = None
    """The folder `ragmetrics testset` wrote, when the dataset is one (its testset.json says where the
    grades came from: `nightly.qrels_provenance`)."""

    @property
    def query_ids(self) -> list[str]:
        return [s.id for s in self.samples]

    def __iter__(self) -> Iterator[RagSample]:
        """The samples, so `evaluate_rag(read_qa(path), metrics)` reads as it says."""
        return iter(self.samples)

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def has_qrels(self) -> bool:
        return bool(self.relevance)

    @property
    def unanswerable(self) -> set[str]:
        """Ids of the questions marked `answerable: false` (no document answers them)."""
        return {s.id for s in self.samples if s.answerable is False}

    def unjudged(self) -> dict[str, str]:
        """Questions no retrieval metric applies to, with why: unanswerable ones, and, in a dataset with
        relevance judgments, questions that have none (trec_eval leaves such a query out of its means)."""
        if not self.relevance:
            return {}
        from ragmetrics.judge.base import UNANSWERABLE_REASON

        attacked = self.attack_ids
        return {
            s.id: UNANSWERABLE_REASON
            if s.answerable is False
            else ATTACK_REASON
            if s.id in attacked
            else f"no relevance judgments in {self.source}"
            for s in self.samples
            if s.id not in self.relevance or s.answerable is False
        }

    @property
    def attack_ids(self) -> set[str]:
        """Ids of the attack questions of an attack set (its clean twins are not among them)."""
        return {c.id for c in self.attacks.checks} if self.attacks is not None else set()

    @property
    def has_run(self) -> bool:
        return bool(self.retrieved)

    def qrels(self) -> Qrels:
        from ragmetrics.retrieval.qrels import Qrels

        if not self.relevance:
            raise InputError("has no relevance judgments (relevant_ids)", source=self.source)
        return Qrels.from_dict(self.relevance, source=self.source)

    def run(self, name: str) -> Run:
        """The pipeline's own ranking as a Run; a sample without retrieved ids is absent from it."""
        from ragmetrics.retrieval.run import Run

        if not self.retrieved:
            raise InputError("has no retrieved ids, so it holds no run of its own", source=self.source)
        return Run.from_dict(self.retrieved, name=name, source=self.source)

    def summary(self) -> dict[str, Any]:
        """JSON-ready description for report metadata."""
        return {
            "source": self.source,
            "rows_used": len(self.samples),
            "rows_skipped": [
                {"row": b.row, "field": b.field, "column": b.column, "message": b.message}
                for b in self.skipped
            ],
            "columns": self.columns,
            "ignored_columns": self.ignored_columns,
            "generated_ids": self.generated_ids,
            "qrels_queries": len(self.relevance),
            "run_queries": len(self.retrieved),
            "passages": None if self.passages is None else len(self.passages),
            "fingerprint": self.fingerprint,
        }


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


ATTACK_REASON = "an attack question: scored by the attack metrics (docs/attacks.md), not the answer metrics"


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
        path, numbers, broken = _checked_jsonl(path, config.on_bad_row)
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


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows; write a finite number or null")


def _non_finite(value: object, where: str = "") -> str | None:
    """Where a row holds a number that overflows to infinity (1e309), named by its field path, else None."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"field {where!r}: a number too large for a float (it reads as {value})"
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite(item, f"{where}.{key}" if where else str(key))
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _non_finite(item, f"{where}[{index}]")
            if found:
                return found
    return None


def _checked_jsonl(path: Path, on_bad_row: str) -> tuple[Path, list[int] | None, list[BadRow]]:
    """Parse a JSONL file line by line before `datasets` reads it, so a broken line is named by its own
    1-based line (not the reader's 0-based count) and `on_bad_row: skip` can skip it: then the good rows go
    to a temporary copy, and their original row numbers come back so later messages still name the right row."""
    source = str(path)
    good: list[bytes] = []
    numbers: list[int] = []
    broken: list[BadRow] = []
    row = 0
    try:
        with open_regular(path, prefix="cannot read: ") as fh:
            for line_no, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                row += 1
                problem = None
                try:
                    value = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
                    if not isinstance(value, dict):
                        problem = f"expected a JSON object, got {type(value).__name__}"
                    else:
                        problem = _non_finite(value)
                except UnicodeDecodeError as exc:
                    problem = f"not UTF-8 text: {exc.reason}"
                except json.JSONDecodeError as exc:
                    problem = json_problem(exc)
                except ValueError as exc:  # NaN/Infinity literals (_no_constant)
                    problem = str(exc)
                if problem is None:
                    good.append(raw if raw.endswith(b"\n") else raw + b"\n")
                    numbers.append(row)
                    continue
                if on_bad_row == "fail":
                    raise InputError(problem, source=source, line=line_no)
                broken.append(BadRow(row, "(row)", "(row)", f"line {line_no}: {problem}"))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=source) from None
    if not broken:
        return path, None, []
    if not good:
        raise InputError("no row could be read: every line is broken", source=source)
    folder = Path(tempfile.mkdtemp(prefix="ragmetrics-rows-"))
    clean = folder / path.name
    clean.write_bytes(b"".join(good))
    return clean, numbers, broken


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


def detect_format(path: Path, declared: str) -> str:
    """The `datasets` builder for a path: declared, or from the suffix; a folder is a saved dataset."""
    if declared == "jsonl":
        return "json"
    if declared != "auto":
        return declared
    if path.is_dir():
        return "disk"
    fmt = _SUFFIX_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"cannot tell the format from the suffix {path.suffix!r}; set dataset.format "
            f"(json, jsonl, csv, parquet, disk, hub)",
            source=str(path),
        )
    return fmt


def read_rows(
    path: Path,
    fmt: Literal["auto", "json", "jsonl", "csv", "parquet", "disk", "hub"] | str,
    split: str,
    *,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Rows of a local file, a saved dataset folder, or (online only) a hub dataset, via `datasets`."""
    import datasets

    if fmt == "hub":
        with _progress_bars(progress):
            try:
                loaded = datasets.load_dataset(str(path), split=split)
            except Exception as exc:  # datasets raises many types (network, missing split, ...)
                raise InputError(f"cannot load hub dataset: {exc}", source=str(path)) from None
        return _to_rows(loaded, str(path), split)
    if not path.exists():
        raise InputError("file not found", source=str(path))
    check_regular_file(path)
    builder = detect_format(path, fmt)
    if builder != "disk" and not path.is_file():
        raise InputError(f"expected a {builder} file, found a folder", source=str(path))
    if path.is_file():
        if builder in (
            "json",
            "csv",
        ):  # text formats: bad bytes and empty files named here, not by `datasets`
            read_utf8(path)
        else:
            try:
                with open_regular(path, prefix="cannot read: ") as fh:
                    if not fh.read(1):
                        raise InputError("empty file: nothing to read", source=str(path))
            except OSError as exc:
                raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    with _progress_bars(progress):
        if builder == "disk":
            try:
                loaded = datasets.load_from_disk(str(path))
            except Exception as exc:
                raise InputError(f"not a saved dataset folder: {exc}", source=str(path)) from None
            return _to_rows(loaded, str(path), split)
        with tempfile.TemporaryDirectory(prefix="ragmetrics-ds-") as cache:
            try:
                loaded = datasets.load_dataset(
                    builder, data_files={split: str(path)}, split=split, cache_dir=cache
                )
            except Exception as exc:
                raise InputError(f"cannot read as {builder}: {_root_cause(exc)}", source=str(path)) from None
            return _to_rows(loaded, str(path), split)


def _to_rows(loaded: Any, source: str, split: str) -> list[dict[str, Any]]:
    import datasets

    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            raise InputError(f"no split {split!r}; splits: {', '.join(loaded)}", source=source)
        loaded = loaded[split]
    rows: list[dict[str, Any]] = loaded.to_list()
    return rows


def _root_cause(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@contextmanager
def _progress_bars(enabled: bool) -> Iterator[None]:
    """Progress bars on or off, and `datasets`' own error logs muted: we raise one InputError instead."""
    from datasets.utils import logging as ds_logging

    was_enabled = ds_logging.is_progress_bar_enabled()
    logger = logging.getLogger("datasets")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    if not enabled and was_enabled:
        ds_logging.disable_progress_bar()
    try:
        yield
    finally:
        logger.setLevel(level)
        if not enabled and was_enabled:
            ds_logging.enable_progress_bar()


def read_passages(path: Path) -> dict[str, Passage]:
    """A passages JSONL of {"id", "text", optional "title"}; duplicate or blank ids and texts that are not
    strings are input errors (an empty text is a document like any other: public collections hold some).

    Checked here, with the file's line, rather than later by a retriever that only knows a list position.
    """
    passages: dict[str, Passage] = {}
    source = str(path)
    for line_no, row in numbered_jsonl(path):
        pid, text = row.get("id"), row.get("text")
        if not isinstance(pid, str) or not pid.strip():
            raise InputError("expected a non-blank string", source=source, line=line_no, field="id")
        if not isinstance(text, str):  # an empty text is a document a retriever may still return
            raise InputError(
                f"expected a string, got {_type(text)}", source=source, line=line_no, field="text"
            )
        title = row.get("title")
        if title is not None and not isinstance(title, str):
            raise InputError("expected a string or null", source=source, line=line_no, field="title")
        if pid in passages:
            raise InputError(f"duplicate passage id {pid!r}", source=source, line=line_no, field="id")
        passages[pid] = Passage(pid, text, title)
    if not passages:
        raise InputError("no passages", source=source)
    return passages


class _RowError(Exception):
    def __init__(self, fld: str, message: str) -> None:
        super().__init__(message)
        self.field = fld
        self.message = message


def validate_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    source: str,
    mapping: Mapping[str, str] | None = None,
    on_bad_row: Literal["fail", "skip"] = "fail",
    limit: int | None = None,
    language: str | None = None,
    keep: Sequence[str] = (),
    ranked_relevance: bool = False,
    numbers: Sequence[int] | None = None,
) -> QADataset:
    """Map columns (user name -> our field) and validate each row into samples, judgments and a ranking;
    `language` is the dataset's language, for rows without a language column value; `ranked_relevance` reads
    ungraded relevant_ids as listed most relevant first (grades by position); `numbers`, each row's 1-based
    number in its file when some rows were left out before (broken lines skipped)."""
    mapping = dict(mapping or {})
    expanded_bad: list[BadRow] = []
    chat = next((theirs for theirs, ours in mapping.items() if ours == "messages"), "messages")
    if any(chat in row for row in rows):  # conversations as message lists: one row per turn
        rows, numbers, expanded_bad = _expand_conversations(rows, chat, mapping, numbers, on_bad_row, source)
        mapping = {theirs: ours for theirs, ours in mapping.items() if ours != "messages"}
    columns = _resolve_columns(rows, source, mapping)
    present = {c for row in rows for c in row}
    missing_kept = sorted(set(keep) - present)
    if missing_kept:
        raise InputError(
            f"no column {missing_kept[0]!r} (named by human_labels.columns); columns: {', '.join(sorted(present))}",
            source=source,
            field=missing_kept[0],
        )
    kept: list[tuple[int, str, dict[str, Any]]] = []
    extras: dict[str, dict[str, Any]] = {}
    ignored = sorted(present - set(columns.values()) - set(keep))
    samples: list[RagSample] = []
    relevance: dict[str, dict[str, int]] = {}
    retrieved: dict[str, dict[str, float]] = {}
    skipped: list[BadRow] = list(expanded_bad)
    seen: dict[str, int] = {}
    turns: dict[tuple[Any, Any], int] = {}
    digest = hashlib.sha256()
    truth = hashlib.sha256()
    generated = "id" not in columns
    for position, row in enumerate(rows, start=1):
        row_no = numbers[position - 1] if numbers is not None else position
        if limit is not None and len(samples) >= limit:
            break
        values = {ours: row.get(theirs) for ours, theirs in columns.items()}
        if generated:
            values["id"] = f"row-{row_no}"
        if language is not None and values.get("language") is None:
            values["language"] = language
        try:
            clean = _clean_row(values, ranked_relevance=ranked_relevance)
            qid = clean["id"]
            if qid in seen:
                raise _RowError("id", f"duplicate id {qid!r} (first at row {seen[qid]})")
            turn_key = (clean.get("conversation_id"), clean.get("turn"))
            if turn_key[0] is not None and turn_key in turns:
                raise _RowError("turn", f"turn {turn_key[1]} of conversation {turn_key[0]!r} is also row "
                                        f"{turns[turn_key]}")  # fmt: skip
            sample = _sample(clean)
        except _RowError as err:
            bad = BadRow(row_no, err.field, columns.get(err.field, err.field), err.message)
            if on_bad_row == "fail":
                raise InputError(bad.describe(source)) from None
            skipped.append(bad)
            continue
        seen[qid] = row_no
        if turn_key[0] is not None:
            turns[turn_key] = row_no
        samples.append(sample)
        if keep:
            kept.append((row_no, qid, {c: row.get(c) for c in keep}))
        if ignored:
            extras[qid] = {c: row[c] for c in ignored if c in row}
        if clean.get("relevant_ids") is not None:
            relevance[qid] = dict(zip(clean["relevant_ids"], clean["relevant_grades"], strict=True))
        if clean.get("retrieved_ids") is not None:
            retrieved[qid] = dict(zip(clean["retrieved_ids"], clean["retrieved_scores"], strict=True))
        # The fingerprint of reports before contexts could be absent (None) hashed them as an empty list.
        hashed = clean if clean["contexts"] is not None else {**clean, "contexts": []}
        # `answerable` is not hashed: a test set decides it with the qrels (an unanswerable question has
        # none), which are hashed, so nights before the field was read stay comparable.
        hashed = {k: v for k, v in hashed.items() if k != "answerable"}
        digest.update(json.dumps(hashed, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8"))
        digest.update(b"\n")
        judged_against = {k: clean.get(k) for k in TRUTH_FIELDS}
        truth.update(
            json.dumps(judged_against, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
        )
        truth.update(b"\n")
    if not samples:
        reason = (
            f"; all {len(skipped)} rows were bad, first: {skipped[0].describe(source)}" if skipped else ""
        )
        raise InputError(f"no usable rows{reason}", source=source)
    return QADataset(
        source=source,
        samples=samples,
        relevance=relevance,
        retrieved=retrieved,
        fingerprint="sha256:" + digest.hexdigest(),
        truth_fingerprint="sha256:" + truth.hexdigest(),
        skipped=skipped,
        columns=columns,
        ignored_columns=ignored,
        generated_ids=generated,
        kept=kept,
        extras=extras,
    )


def _expand_conversations(
    rows: Sequence[Mapping[str, Any]],
    chat: str,
    mapping: Mapping[str, str],
    numbers: Sequence[int] | None,
    on_bad_row: str,
    source: str,
) -> tuple[list[Mapping[str, Any]], list[int], list[BadRow]]:
    """Rows with a `messages` list as one row per turn (`nightly.messages`), each keeping its row's number."""
    from ragmetrics.nightly.messages import MessagesError, expand_messages

    id_column = next((theirs for theirs, ours in mapping.items() if ours == "id"), "id")
    out: list[Mapping[str, Any]] = []
    out_numbers: list[int] = []
    bad: list[BadRow] = []
    for position, row in enumerate(rows, start=1):
        row_no = numbers[position - 1] if numbers is not None else position
        if row.get(chat) is None:
            out.append(row)
            out_numbers.append(row_no)
            continue
        raw_id = row.get(id_column)
        row_id = (
            str(raw_id)
            if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) and str(raw_id).strip()
            else f"row-{row_no}"
        )
        try:
            turns = expand_messages({k: v for k, v in row.items() if k != id_column}, row_id, chat)
        except MessagesError as exc:
            problem = BadRow(row_no, "messages", exc.field, exc.message)
            if on_bad_row == "fail":
                raise InputError(problem.describe(source)) from None
            bad.append(problem)
            continue
        if id_column != "id":
            turns = [{id_column: t.pop("id"), **t} for t in turns]
        out.extend(turns)
        out_numbers.extend([row_no] * len(turns))
    return out, out_numbers, bad


def _resolve_columns(
    rows: Sequence[Mapping[str, Any]], source: str, mapping: dict[str, str]
) -> dict[str, str]:
    """our field -> user column, from the mapping plus identically named columns; checks mapped columns exist."""
    if not rows:
        raise InputError("the dataset has no rows", source=source)
    present: dict[str, None] = {}
    for row in rows:
        for col in row:
            present.setdefault(col)
    columns: dict[str, str] = {}
    for theirs, ours in mapping.items():
        if theirs not in present:
            raise InputError(
                f"column {theirs!r} (mapped to {ours!r}) is not in the dataset; columns: {', '.join(present)}",
                source=source,
                field=theirs,
            )
        columns[ours] = theirs
    mapped_away = set(mapping)
    for ours in DATASET_FIELDS:
        if ours not in columns and ours in present and ours not in mapped_away:
            columns[ours] = ours
    if "question" not in columns:
        raise InputError(
            f"no 'question' column; map yours with dataset.mapping (columns: {', '.join(present)})",
            source=source,
            field="question",
        )
    for a, b in (("retrieved_scores", "retrieved_ids"), ("relevant_grades", "relevant_ids")):
        if a in columns and b not in columns:
            raise InputError(f"has {a!r} but no {b!r} column", source=source, field=b)
    return columns


def _clean_row(values: dict[str, Any], *, ranked_relevance: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"id": _id(values.get("id"))}
    question = values.get("question")
    if not isinstance(question, str):
        raise _RowError("question", f"expected a string, got {_type(question)}")
    if not question.strip():
        raise _RowError("question", "is blank")
    out["question"] = question
    for name in ("answer", "reference"):
        value = values.get(name)
        if value is not None and not isinstance(value, str):
            raise _RowError(name, f"expected a string or null, got {_type(value)}")
        out[name] = value
    language = values.get("language")
    if language is not None and (not isinstance(language, str) or not LANGUAGE_CODE.match(language)):
        raise _RowError(
            "language", f"expected an ISO 639 code such as 'ja' or 'pt-BR', or null; got {_type(language)}"
        )
    out["language"] = language
    lists = {name: _list(name, values.get(name)) for name in _LIST_FIELDS}
    contexts = lists["contexts"]
    # No contexts column (or a null cell): the sample has no contexts. An empty list: retrieval found nothing.
    out["contexts"] = (
        None if contexts is None else [_text_item("contexts", i, v) for i, v in enumerate(contexts)]
    )
    ctx_ids = lists["context_ids"]
    if ctx_ids is not None:
        out["context_ids"] = [_str_item("context_ids", i, v) for i, v in enumerate(ctx_ids)]
        dup = _first_duplicate(out["context_ids"])
        if dup is not None:
            raise _RowError("context_ids", f"id {dup!r} appears twice")
        if out["contexts"] is None:
            raise _RowError("context_ids", f"has {len(ctx_ids)} ids but the row has no contexts")
        if len(out["context_ids"]) != len(out["contexts"]):
            raise _RowError(
                "context_ids", f"has {len(ctx_ids)} ids but contexts has {len(out['contexts'])} entries"
            )
    else:
        out["context_ids"] = None
    out["retrieved_ids"], out["retrieved_scores"] = _pairs(
        lists["retrieved_ids"], lists["retrieved_scores"], "retrieved", _score
    )
    out["relevant_ids"], out["relevant_grades"] = _pairs(
        lists["relevant_ids"], lists["relevant_grades"], "relevant", _grade
    )
    for name in ("tool_calls", "reference_tool_calls"):
        try:
            calls = parse_tool_calls(values.get(name), name)
        except ValueError as exc:
            raise _RowError(name, str(exc).removeprefix(f"{name}: ").removeprefix(name)) from None
        out[name] = None if calls is None else [c.model_dump() for c in calls]
    conversation, turn = values.get("conversation_id"), values.get("turn")
    if (conversation is None) != (turn is None):
        given, absent = ("conversation_id", "turn") if turn is None else ("turn", "conversation_id")
        raise _RowError(absent, f"is missing while {given} is given (a turn needs both)")
    if conversation is not None:  # only then: rows without conversations keep their fingerprints
        out["conversation_id"] = _id_value("conversation_id", conversation)
        if isinstance(turn, bool) or not isinstance(turn, int | float) or turn != int(turn) or turn < 0:
            raise _RowError("turn", f"expected a whole number >= 0, got {_type(turn)} {turn!r}"[:200])
        out["turn"] = int(turn)
    answerable = _answerable(values.get("answerable"))
    if answerable is not None:  # only then: rows without the column keep their fingerprints
        out["answerable"] = answerable
        if answerable is False and any(g >= 1 for g in out["relevant_grades"] or []):
            raise _RowError("answerable", "is false but relevant_ids names a relevant document (grade >= 1)")
    if ranked_relevance and lists["relevant_ids"] is not None and lists["relevant_grades"] is None:
        # Listed most relevant first, no grades: the grade is the position from the end (n, n-1, ..., 1).
        count = len(out["relevant_ids"])
        out["relevant_grades"] = [count - i for i in range(count)]
    return out


def _answerable(value: Any) -> bool | None:
    """The `answerable` cell: a boolean, 'true'/'false' (a CSV cell) or null."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _RowError("answerable", f"expected true, false or null, got {_type(value)} {value!r}"[:200])


def _pairs(ids: list[Any] | None, values: list[Any] | None, prefix: str, convert: Any) -> tuple[Any, Any]:
    ids_field, values_field = (
        f"{prefix}_ids",
        "retrieved_scores" if prefix == "retrieved" else "relevant_grades",
    )
    if ids is None:
        if values is not None:
            raise _RowError(ids_field, f"is missing while {values_field} is given")
        return None, None
    clean_ids = [_str_item(ids_field, i, v) for i, v in enumerate(ids)]
    dup = _first_duplicate(clean_ids)
    if dup is not None:
        raise _RowError(ids_field, f"document {dup!r} appears twice")
    if values is None:
        # No scores: the list order is the ranking; no grades: every listed document is relevant (grade 1).
        default = [float(len(ids) - i) for i in range(len(ids))] if prefix == "retrieved" else [1] * len(ids)
        return clean_ids, default
    if len(values) != len(ids):
        raise _RowError(values_field, f"has {len(values)} entries but {ids_field} has {len(ids)}")
    return clean_ids, [convert(values_field, i, v) for i, v in enumerate(values)]


def _first_duplicate(items: list[str]) -> str | None:
    seen: set[str] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None


def _id(value: Any) -> str:
    return _id_value("id", value)


def _id_value(name: str, value: Any) -> str:
    if isinstance(value, bool) or value is None:
        raise _RowError(name, f"expected a string or integer, got {_type(value)}")
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise _RowError(name, f"expected a non-empty string or integer, got {_type(value)}")
    return value


def _list(name: str, value: Any) -> list[Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise _RowError(
                name, "expected a list (in CSV: a JSON array), got a string that is not JSON"
            ) from None
    if isinstance(value, tuple):
        value = list(value)
    if hasattr(value, "tolist") and not isinstance(value, list):
        value = value.tolist()
    if not isinstance(value, list):
        raise _RowError(name, f"expected a list, got {_type(value)}")
    return value


def _str_item(name: str, index: int, value: Any) -> str:
    """An id: a non-blank string, or an integer (Parquet and CSV often store ids as numbers)."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _RowError(name, f"[{index}] expected a string, got {_type(value)}")
    text = str(value)
    if not text.strip():
        raise _RowError(name, f"[{index}] is blank")
    return text


def _text_item(name: str, index: int, value: Any) -> str:
    """A context passage: a string, possibly empty (a retriever can return an empty chunk), never a number."""
    if not isinstance(value, str):
        raise _RowError(name, f"[{index}] expected a string, got {_type(value)}")
    return value


def _score(name: str, index: int, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _RowError(name, f"[{index}] expected a number, got {_type(value)}")
    score = float(value)
    if not math.isfinite(score):
        raise _RowError(name, f"[{index}] is {score}; scores must be finite")
    return score


def _grade(name: str, index: int, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _RowError(name, f"[{index}] expected an integer grade, got {_type(value)}")
    if isinstance(value, float) and not value.is_integer():
        raise _RowError(name, f"[{index}] grade {value} is not an integer")
    return int(value)


def _type(value: Any) -> str:
    if value is None:
        return "null"
    text = repr(value)
    short = text if len(text) <= 40 else text[:37] + "..."
    return f"{type(value).__name__} {short}"


def _sample(clean: dict[str, Any]) -> RagSample:
    fields = {
        k: clean[k]
        for k in ("id", "question", "contexts", "context_ids", "answer", "reference", "language", "tool_calls",
                  "reference_tool_calls", "conversation_id", "turn", "answerable")
        if k in clean
    }  # fmt: skip
    return RagSample.model_validate(fields)
