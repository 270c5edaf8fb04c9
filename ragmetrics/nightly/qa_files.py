"""QA rows and passages read from disk through `datasets`: the format from the suffix, JSONL checked line
by line first (so a broken line is named by its own number), bad bytes and empty files named here.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from ragmetrics._jsonl import lone_surrogate, numbered_jsonl
from ragmetrics._textfile import check_regular_file, open_regular, read_utf8
from ragmetrics.errors import InputError, json_problem
from ragmetrics.nightly.qa_cells import type_name
from ragmetrics.nightly.qa_dataset import BadRow, Passage

_SUFFIX_FORMATS = {
    ".jsonl": "json",
    ".json": "json",
    ".ndjson": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}


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


def _surrogate(value: object) -> str | None:
    """Where a row holds a lone surrogate ("\\ud800"), named by its field path, else None: `datasets` refused
    it only as "JSON parse error ... in row 0", without the line or field."""
    found = lone_surrogate(value)
    return None if found is None else f"field {found[0]!r}: {found[1]}"


def checked_jsonl(path: Path, on_bad_row: str) -> tuple[Path, list[int] | None, list[BadRow]]:
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
                        problem = _non_finite(value) or _surrogate(value)
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
                f"expected a string, got {type_name(text)}", source=source, line=line_no, field="text"
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
