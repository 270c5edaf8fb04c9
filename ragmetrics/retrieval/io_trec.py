"""TREC text formats: qrels ``qid iter docid grade`` and runs ``qid Q0 docid rank score tag``.

The file is read whole and tokenised with numpy over its bytes (token starts, line numbers and
per-line token counts come from vectorised scans), so a million-line file parses without a Python loop
per line. Fields are separated by any ASCII whitespace, as trec_eval does; blank lines and lines whose
first field starts with ``#`` are skipped. Ids are kept as bytes until their vocabulary is known and only
that vocabulary is decoded; byte order is UTF-8 code-point order, so sorting is unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.retrieval._build import Columns, Origin, factorize

QRELS_FIELDS = ("query id", "iteration", "document id", "grade")
RUN_FIELDS = ("query id", "Q0", "document id", "rank", "score", "tag")

_SPACE = np.zeros(256, dtype=np.bool_)
_SPACE[[9, 10, 11, 12, 13, 32]] = True  # exactly the bytes `bytes.split()` separates on
_NEWLINE = 10
_HASH = ord("#")
_UNDERSCORE = ord("_")
_WHITESPACE = re.compile(r"\s")
_INT = re.compile(rb"[+-]?[0-9]+")


@dataclass(frozen=True, slots=True)
class Table:
    """Selected fields of every data line: one bytes array per field, plus 1-based line numbers."""

    fields: list[NDArray[np.bytes_]]
    lines: NDArray[np.int64]
    head: list[bytes]  # every field of the first data line (a run's tag comes from here)


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes, with every OS failure turned into an InputError that names the file."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", source=source) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=source) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data


def check_text(data: bytes, source: str) -> None:
    """Reject what would corrupt ids later: invalid UTF-8 and NUL bytes (numpy's bytes dtype drops them)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not valid UTF-8 text ({exc.reason})", source=source, line=line) from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError("NUL byte in text", source=source, line=data.count(b"\n", 0, nul) + 1)


def tokenize(
    data: bytes, source: str, names: tuple[str, ...], *, keep: tuple[int, ...], allow_extra: bool
) -> Table:
    """Split into lines of `len(names)` fields (more when `allow_extra`) and keep the fields in `keep`.

    Per-line field counts come from a `searchsorted` of line starts among token starts, so lines are never
    split one by one; the common regular file (every line exactly `len(names)` fields) then takes its
    columns straight from `bytes.split()` by slicing.
    """
    check_text(data, source)
    expected = len(names)
    if not data.strip():
        raise InputError("empty file: no entries", source=source)
    buf = np.frombuffer(data, dtype=np.uint8)
    space = _SPACE[buf]
    is_start = ~space
    is_start[1:] &= space[:-1]
    line_starts = np.flatnonzero(buf == _NEWLINE) + 1
    line_starts = np.concatenate(([0], line_starts[line_starts < buf.shape[0]]))
    token_pos = np.flatnonzero(is_start)
    first_token = np.searchsorted(token_pos, line_starts).astype(np.int64)
    counts = np.diff(np.append(first_token, token_pos.shape[0]))
    tokens = data.split()
    data_line = counts > 0
    if b"#" in data:
        heads = token_pos[first_token[data_line]]
        data_line[np.flatnonzero(data_line)[buf[heads] == _HASH]] = False
    line_index = np.flatnonzero(data_line)
    if line_index.shape[0] == 0:
        raise InputError("no entries (only comments and blank lines)", source=source)
    counts = counts[line_index]
    bad = counts < expected if allow_extra else counts != expected
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        layout = " ".join(n.replace(" ", "_") for n in names)
        more = " or more" if allow_extra else ""
        raise InputError(
            f"expected {expected}{more} whitespace-separated fields ({layout}), found {int(counts[i])}",
            source=source,
            line=int(line_index[i]) + 1,
        )
    if len(tokens) == expected * line_index.shape[0]:
        # Regular file: data lines hold exactly `expected` fields each and nothing else has tokens.
        fields = [np.array(tokens[k::expected], dtype=np.bytes_) for k in keep]
    else:
        objects = np.array(tokens, dtype=object)
        heads = first_token[line_index]
        fields = [objects[heads + k].astype(np.bytes_) for k in keep]
    start = int(first_token[line_index[0]])
    head = tokens[start : start + int(counts[0])]
    return Table(fields=fields, lines=line_index + 1, head=head)


def factorize_ids(raw: NDArray[np.bytes_], *, grouped: bool) -> tuple[NDArray[np.str_], NDArray[np.int64]]:
    """Sorted decoded vocabulary and per-entry codes of a bytes id column.

    With `grouped`, consecutive equal ids (TREC files list a query's lines together) are collapsed
    first, so only one id per block is sorted.
    """
    if grouped and raw.shape[0]:
        head = np.ones(raw.shape[0], dtype=np.bool_)
        np.not_equal(raw[1:], raw[:-1], out=head[1:])
        vocab, head_codes = factorize(raw[head])
        codes = head_codes[np.cumsum(head, dtype=np.int64) - 1]
    else:
        vocab, codes = factorize(raw)
    if vocab.shape[0] == 0:
        return np.zeros(0, dtype="<U1"), codes
    # One decode of the joined vocabulary instead of one per id; ids never contain a newline.
    decoded = np.array(b"\n".join(vocab.tolist()).decode("utf-8").split("\n"), dtype=np.str_)
    return decoded, codes


def parse_ints(raw: NDArray[np.bytes_], origin: Origin, label: str) -> NDArray[np.int64]:
    """Integer literals only: "2", "+2" and "-1" pass; "2.0", "2.5", "1_0" and "two" are errors."""
    try:
        values = raw.astype(np.int64)
    except (ValueError, OverflowError):
        values = None
    if values is not None and not _has_underscore(raw):
        return values
    # Slow path, only for files that hold a bad token: find it and say which.
    items = raw.tolist()
    for i, token in enumerate(items):
        if not _INT.fullmatch(token) or not -(2**63) <= int(token) < 2**63:
            raise origin.error(f"{label} {token.decode()!r} is not an integer", i, field=label)
    return np.array([int(token) for token in items], dtype=np.int64)


def parse_floats(raw: NDArray[np.bytes_], origin: Origin, label: str) -> NDArray[np.float64]:
    """Finite decimal numbers: "nan", "inf", "1e999" (overflow), "1_0" and "0x1" are errors."""
    try:
        values = raw.astype(np.float64)
    except ValueError:
        values = None
    if values is None or _has_underscore(raw):
        items = raw.tolist()
        parsed: list[float] = []
        for i, token in enumerate(items):
            try:
                if b"_" in token:
                    raise ValueError(token)
                parsed.append(float(token))
            except ValueError:
                raise origin.error(f"{label} {token.decode()!r} is not a number", i, field=label) from None
        values = np.array(parsed, dtype=np.float64)
    finite = np.isfinite(values)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise origin.error(f"{label} {raw[i].decode()!r} is not a finite number", i, field=label)
    return values


def _has_underscore(raw: NDArray[np.bytes_]) -> bool:
    # numpy, like Python's int() and float(), reads "1_000" as 1000; trec_eval's atof would not. One scan
    # of the fixed-width buffer (padding is NUL, never "_") finds any.
    return bool((raw.view(np.uint8) == _UNDERSCORE).any())


def qrels_columns(path: str | Path) -> Columns:
    """Qrels columns from a TREC qrels file; the iteration field is ignored, as trec_eval does."""
    source = str(path)
    table = tokenize(read_bytes(path), source, QRELS_FIELDS, keep=(0, 2, 3), allow_extra=False)
    origin = Origin(source, positions=table.lines)
    qvocab, qcodes = factorize_ids(table.fields[0], grouped=True)
    dvocab, dcodes = factorize_ids(table.fields[1], grouped=False)
    grades = parse_ints(table.fields[2], origin, "grade")
    return Columns(qvocab, qcodes, dvocab, dcodes, grades, origin)


def run_columns(path: str | Path, *, strict: bool) -> tuple[Columns, str]:
    """Run columns and the first line's tag from a TREC run file.

    Q0 and rank are ignored (trec_eval ranks by score, not by the rank field). Fields after the tag are
    ignored too unless `strict`, matching trec_eval, which reads six fields per line.
    """
    source = str(path)
    table = tokenize(read_bytes(path), source, RUN_FIELDS, keep=(0, 2, 4), allow_extra=not strict)
    origin = Origin(source, positions=table.lines)
    qvocab, qcodes = factorize_ids(table.fields[0], grouped=True)
    dvocab, dcodes = factorize_ids(table.fields[1], grouped=False)
    scores = parse_floats(table.fields[2], origin, "score")
    tag = table.head[5].decode("utf-8")
    return Columns(qvocab, qcodes, dvocab, dcodes, scores, origin), tag


def check_writable(ids: list[str] | tuple[str, ...], what: str, target: str, *, leads_line: bool) -> None:
    """Refuse ids that would not read back: whitespace splits a field, and a leading '#' on a line's
    first field makes it a comment. One regex pass over the joined ids keeps this cheap."""
    joined = "\x00".join(ids)
    match = _WHITESPACE.search(joined)
    if match is not None:
        bad = ids[joined.count("\x00", 0, match.start())]
        raise InputError(f"{what} {bad!r} contains whitespace and cannot be a TREC field", source=target)
    if leads_line:
        for value in ids:
            if value.startswith("#"):
                raise InputError(
                    f"{what} {value!r} starts with '#' and would read back as a comment", source=target
                )


def write_lines(path: str | Path, lines: list[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write("\n".join(lines))
        if lines:
            handle.write("\n")
