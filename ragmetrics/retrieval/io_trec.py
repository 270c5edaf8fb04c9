"""TREC text formats: qrels ``qid iter docid grade`` and runs ``qid Q0 docid rank score tag``.

The file is read whole and scanned by numba kernels (`trec_scan`): fields stay (start, length) pairs into
its bytes, numbers are parsed in place and ids are factorised by their bytes, so a million-line run never
becomes millions of Python objects. Fields are separated by any ASCII whitespace, as trec_eval does; blank
lines and lines whose first field starts with ``#`` are skipped. Only the distinct ids are decoded; byte
order is UTF-8 code-point order, so sorting is unchanged. Tokens the fast paths do not cover (a malformed
number, 19+ digits) go through Python's own parsers, which also word the errors. The kernels are imported
on first read, so importing the containers does not start numba.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ragmetrics._textfile import read_bytes as read_file_bytes
from ragmetrics.errors import InputError
from ragmetrics.retrieval._build import Columns, Origin
from ragmetrics.retrieval._lazy import numba_for
from ragmetrics.retrieval.id_codes import factorize_tokens

QRELS_FIELDS = ("query id", "iteration", "document id", "grade")
RUN_FIELDS = ("query id", "Q0", "document id", "rank", "score", "tag")

_WHITESPACE = re.compile(r"\s")
_INT = re.compile(rb"[+-]?[0-9]+")


@dataclass(frozen=True, slots=True)
class Fields:
    """The kept fields of every data line, as (start, length) pairs into the file's bytes.

    `starts[k]` and `lengths[k]` hold the k-th kept field of each data line; `lines` the 1-based line
    numbers of the data lines.
    """

    data: bytes
    buf: NDArray[np.uint8]
    starts: NDArray[np.int64]
    lengths: NDArray[np.int64]
    lines: NDArray[np.int64]
    ascii_only: bool

    def token(self, slot: int, entry: int) -> bytes:
        start = int(self.starts[slot, entry])
        return self.data[start : start + int(self.lengths[slot, entry])]


MAX_FIELD_BYTES = 4096
"""Longest id, grade or score token accepted: ids are held in fixed-width arrays as wide as the longest, so
one 200 MB token (a damaged file) would cost gigabytes; real ids, URLs included, are far shorter."""


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes, with every OS failure turned into an InputError that names the file."""
    data = read_file_bytes(path)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data


def shown(token: bytes, limit: int = 40) -> str:
    """A token as an error shows it: quoted, and cut with its length said when long (a 200 MB line is not
    echoed whole into a message, nor decoded whole to say so)."""
    if len(token) > 4 * limit:
        head = token[: 4 * limit].decode("utf-8", errors="ignore")[:limit]
        return f"{head!r}... ({len(token):,} bytes)"
    text = token.decode("utf-8", errors="replace")
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def check_text(data: bytes, source: str) -> bool:
    """Reject what would corrupt ids later: invalid UTF-8 and NUL bytes (numpy's str arrays drop them).

    Returns whether the text is pure ASCII, which the id decoder uses for its fast path.
    """
    ascii_only = data.isascii()
    if not ascii_only:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise InputError(f"not valid UTF-8 text ({exc.reason})", source=source, line=line) from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError("NUL byte in text", source=source, line=data.count(b"\n", 0, nul) + 1)
    return ascii_only


def scan(
    data: bytes, source: str, names: tuple[str, ...], *, keep: tuple[int, ...], allow_extra: bool
) -> Fields:
    """Find the fields `keep` of every data line, which must hold `len(names)` fields (more when `allow_extra`)."""
    from ragmetrics.retrieval import trec_scan

    ascii_only = check_text(data, source)
    slot_of_field = np.full(len(names), -1, dtype=np.int64)
    slot_of_field[list(keep)] = np.arange(len(keep))
    buf = np.frombuffer(data, dtype=np.uint8)
    starts, lengths, lines, bad_line, found = trec_scan.scan_fields(
        buf, data.count(b"\n") + 1, len(names), allow_extra, slot_of_field
    )
    if bad_line:
        layout = " ".join(n.replace(" ", "_") for n in names)
        more = " or more" if allow_extra else ""
        raise InputError(
            f"expected {len(names)}{more} whitespace-separated fields ({layout}), found {found}",
            source=source,
            line=bad_line,
        )
    for slot, field in enumerate(keep):
        if lengths.shape[1] and int(lengths[slot].max()) > MAX_FIELD_BYTES:
            entry = int(np.argmax(lengths[slot]))
            token = data[int(starts[slot, entry]) : int(starts[slot, entry]) + int(lengths[slot, entry])]
            raise InputError(
                f"{names[field]} {shown(token)} is longer than the limit of {MAX_FIELD_BYTES:,} bytes "
                "(a field this long is a damaged or wrong file, not an id)",
                source=source,
                line=int(lines[entry]),
                field=names[field].replace(" ", "_"),
            )
    if lines.shape[0] == 0:
        if not data.strip():
            raise InputError("empty file: no entries", source=source)
        raise InputError("no entries (only comments and blank lines)", source=source)
    return Fields(data, buf, starts, lengths, lines, ascii_only)


def factorize_ids(fields: Fields, slot: int, *, grouped: bool) -> tuple[NDArray[np.str_], NDArray[np.int64]]:
    """Sorted decoded vocabulary and per-entry codes of one id field.

    With `grouped`, consecutive equal ids (TREC files list a query's lines together) are collapsed
    first, so only one id per block is sorted.
    """
    from ragmetrics.retrieval import trec_scan

    starts, lengths = fields.starts[slot], fields.lengths[slot]
    if not grouped:
        return factorize_tokens(fields.buf, starts, lengths, fields.ascii_only)
    heads = trec_scan.run_heads(fields.buf, starts, lengths)
    vocab, head_codes = factorize_tokens(fields.buf, starts[heads], lengths[heads], fields.ascii_only)
    return vocab, head_codes[np.cumsum(heads, dtype=np.int64) - 1]


def parse_grades(fields: Fields, slot: int, origin: Origin, label: str) -> NDArray[np.int64]:
    """Integer literals only: "2", "+2" and "-1" pass; "2.0", "2.5", "1_0" and "two" are errors."""
    from ragmetrics.retrieval import trec_scan

    values, flagged = trec_scan.parse_integers(fields.buf, fields.starts[slot], fields.lengths[slot])
    for i in np.flatnonzero(flagged).tolist():
        token = fields.token(slot, i)
        # More than 19 significant digits never fit int64; checked first because int() refuses 4,300+
        # digits with a bare ValueError. Leading zeros ("+0007") are still fine.
        significant = token.lstrip(b"+-").lstrip(b"0")
        if len(significant) > 19 or not _INT.fullmatch(token) or not -(2**63) <= int(token) < 2**63:
            raise origin.error(f"{label} {shown(token)} is not an integer", i, field=label)
        values[i] = int(token)
    return values


def parse_scores(fields: Fields, slot: int, origin: Origin, label: str) -> NDArray[np.float64]:
    """Finite decimal numbers: "nan", "inf", "1e999" (overflow), "1_0" and "0x1" are errors."""
    from ragmetrics.retrieval import trec_scan

    values, flagged = trec_scan.parse_decimals(fields.buf, fields.starts[slot], fields.lengths[slot])
    for i in np.flatnonzero(flagged).tolist():
        token = fields.token(slot, i)
        try:
            if b"_" in token:  # Python's float() reads "1_0" as 10; trec_eval's atof would not
                raise ValueError(token)
            value = float(token)
        except ValueError:
            raise origin.error(f"{label} {shown(token)} is not a number", i, field=label) from None
        if not math.isfinite(value):
            raise origin.error(f"{label} {shown(token)} is not a finite number", i, field=label)
        values[i] = value
    return values


BYTES_PER_ENTRY = 32
"""A rough TREC line length: a file's size over this estimates its entries, which decide Python or numba."""


def qrels_columns(path: str | Path) -> Columns:
    """Qrels columns from a TREC qrels file; the iteration field is ignored, as trec_eval does."""
    source = str(path)
    data = read_bytes(path)
    with numba_for(len(data) // BYTES_PER_ENTRY):
        fields = scan(data, source, QRELS_FIELDS, keep=(0, 2, 3), allow_extra=False)
        origin = Origin(source, positions=fields.lines)
        qvocab, qcodes = factorize_ids(fields, 0, grouped=True)
        dvocab, dcodes = factorize_ids(fields, 1, grouped=False)
        grades = parse_grades(fields, 2, origin, "grade")
    return Columns(qvocab, qcodes, dvocab, dcodes, grades, origin)


def run_columns(path: str | Path, *, strict: bool) -> tuple[Columns, str]:
    """Run columns and the first line's tag from a TREC run file.

    Q0 and rank are ignored (trec_eval ranks by score, not by the rank field). Fields after the tag are
    ignored too unless `strict`, matching trec_eval, which reads six fields per line.
    """
    source = str(path)
    data = read_bytes(path)
    with numba_for(len(data) // BYTES_PER_ENTRY):
        fields = scan(data, source, RUN_FIELDS, keep=(0, 2, 4), allow_extra=not strict)
        origin = Origin(source, positions=fields.lines)
        qvocab, qcodes = factorize_ids(fields, 0, grouped=True)
        dvocab, dcodes = factorize_ids(fields, 1, grouped=False)
        scores = parse_scores(fields, 2, origin, "score")
    first = int(fields.starts[0, 0])  # the first data line starts at its query id
    end = fields.data.find(b"\n", first)
    tag = fields.data[first : end if end >= 0 else len(fields.data)].split()[5].decode("utf-8")
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
