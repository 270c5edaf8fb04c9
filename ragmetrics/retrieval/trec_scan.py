"""Numba kernels that read TREC text straight from its bytes: fields, numbers and sorted id vocabularies.

A million-line run would otherwise become millions of Python bytes objects before numpy sees a number;
here every field stays a (start, length) pair into the file's buffer until it is needed. Numbers take a
fast path that is exact (see `parse_decimals`); anything it does not cover is flagged for the caller's
Python parser, which decides and words the error. Ids are sorted by their bytes (UTF-8 byte order is
code-point order, so this is trec_eval's strcmp order) without building a string per entry.

Callers guarantee what the kernels rely on: valid UTF-8 and no NUL byte (`io_trec.check_text`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel

# Exact binary values: every power of ten up to 1e22 is representable in float64.
_POW10 = np.array([10.0**e for e in range(23)], dtype=np.float64)
_MAX_EXACT = 2**53  # largest mantissa whose float64 conversion is exact
_NEWLINE = 10
_HASH = 35
_PLUS = 43
_MINUS = 45
_DOT = 46
_ZERO = 48
_NINE = 57


@kernel
def _is_space(c: int) -> bool:
    # exactly the bytes `bytes.split()` and trec_eval's field separators cover
    return c == 32 or 9 <= c <= 13


@kernel
def scan_fields(
    buf: NDArray[np.uint8], max_lines: int, n_fields: int, allow_extra: bool, slot_of_field: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], int, int]:
    """Positions of the kept fields of every data line, skipping blank lines and '#' comment lines.

    Field f of a data line goes to slot `slot_of_field[f]` (-1: not kept). Returns starts and lengths
    [slots, lines], the 1-based line number of each data line, and, for the first line with a wrong field
    count, its line number and count (0, 0 when every line is well formed; the arrays are then complete).
    """
    n_slots = 0
    for slot in slot_of_field:
        n_slots = max(n_slots, slot + 1)
    starts = np.empty((n_slots, max_lines), dtype=np.int64)
    lengths = np.empty((n_slots, max_lines), dtype=np.int64)
    lines = np.empty(max_lines, dtype=np.int64)
    size = buf.shape[0]
    n = 0
    line = 1
    field = 0
    i = 0
    while i <= size:
        if i == size or buf[i] == _NEWLINE:
            if field > 0:
                if field < n_fields or (field > n_fields and not allow_extra):
                    return starts[:, :n], lengths[:, :n], lines[:n], line, field
                lines[n] = line
                n += 1
            field = 0
            line += 1
            i += 1
            continue
        if _is_space(buf[i]):
            i += 1
            continue
        if field == 0 and buf[i] == _HASH:  # a comment: skip to the end of the line
            while i < size and buf[i] != _NEWLINE:
                i += 1
            continue
        end = i + 1
        while end < size and not _is_space(buf[end]):
            end += 1
        if field < n_fields:
            slot = slot_of_field[field]
            if slot >= 0:
                starts[slot, n] = i
                lengths[slot, n] = end - i
        field += 1
        i = end
    return starts[:, :n], lengths[:, :n], lines[:n], 0, 0


@kernel
def _sign(buf: NDArray[np.uint8], p: int, end: int) -> tuple[bool, int]:
    """Whether the number at p is negative, and where its digits start (after an optional + or -)."""
    if p < end and (buf[p] == _PLUS or buf[p] == _MINUS):
        return bool(buf[p] == _MINUS), p + 1
    return False, p


@kernel
def parse_decimals(
    buf: NDArray[np.uint8], starts: NDArray[np.int64], lengths: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """float64 values of decimal tokens, and a mask of the tokens left to the caller.

    Fast path: ``[+-]digits[.digits][(e|E)[+-]digits]`` with at most 18 significant digits, a mantissa
    m <= 2**53 and a decimal exponent e with |e| <= 22. Then m and 10**|e| are exact doubles and one IEEE
    multiplication or division rounds correctly (Clinger's fast path), so the value equals `float(token)`.
    Everything else (more digits, huge exponents, "nan", "1_0", malformed text) is flagged, not guessed.
    """
    n = starts.shape[0]
    values = np.zeros(n, dtype=np.float64)
    flagged = np.zeros(n, dtype=np.bool_)
    for t in range(n):
        end = starts[t] + lengths[t]
        negative, p = _sign(buf, starts[t], end)
        mantissa = 0
        significant = 0
        exponent = 0
        digits = 0
        while p < end and _ZERO <= buf[p] <= _NINE:
            if mantissa or buf[p] != _ZERO:
                if significant == 18:  # a 19th digit could overflow int64
                    significant += 1
                    break
                mantissa = mantissa * 10 + (buf[p] - _ZERO)
                significant += 1
            digits += 1
            p += 1
        if p < end and buf[p] == _DOT and significant <= 18:
            p += 1
            while p < end and _ZERO <= buf[p] <= _NINE:
                if mantissa or buf[p] != _ZERO:
                    if significant == 18:
                        significant += 1
                        break
                    mantissa = mantissa * 10 + (buf[p] - _ZERO)
                    significant += 1
                exponent -= 1
                digits += 1
                p += 1
        if p < end and (buf[p] == 101 or buf[p] == 69) and digits > 0 and significant <= 18:  # e, E
            p += 1
            exponent_negative, p = _sign(buf, p, end)
            written = 0
            power = 0
            while p < end and _ZERO <= buf[p] <= _NINE and written < 6:
                power = power * 10 + (buf[p] - _ZERO)
                written += 1
                p += 1
            if written == 0:
                p = -1  # "1e" or "1e+": malformed
            exponent += -power if exponent_negative else power
        if p != end or digits == 0 or significant > 18:
            flagged[t] = True
            continue
        if mantissa == 0:
            values[t] = -0.0 if negative else 0.0
            continue
        if mantissa > _MAX_EXACT or exponent < -22 or exponent > 22:
            flagged[t] = True
            continue
        value = float(mantissa)
        value = value * _POW10[exponent] if exponent >= 0 else value / _POW10[-exponent]
        values[t] = -value if negative else value
    return values, flagged


@kernel
def parse_integers(
    buf: NDArray[np.uint8], starts: NDArray[np.int64], lengths: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """int64 values of ``[+-]digits`` tokens of at most 18 digits; anything else is flagged for the caller."""
    n = starts.shape[0]
    values = np.zeros(n, dtype=np.int64)
    flagged = np.zeros(n, dtype=np.bool_)
    for t in range(n):
        end = starts[t] + lengths[t]
        negative, p = _sign(buf, starts[t], end)
        if end - p == 0 or end - p > 18:
            flagged[t] = True
            continue
        value = 0
        while p < end and _ZERO <= buf[p] <= _NINE:
            value = value * 10 + (buf[p] - _ZERO)
            p += 1
        if p != end:
            flagged[t] = True
            continue
        values[t] = -value if negative else value
    return values, flagged


@kernel
def _same_token(buf: NDArray[np.uint8], a_start: int, a_length: int, b_start: int, b_length: int) -> bool:
    if a_length != b_length:
        return False
    for k in range(a_length):  # noqa: SIM110 - a plain loop compiles to a tight loop in numba
        if buf[a_start + k] != buf[b_start + k]:
            return False
    return True


@kernel
def run_heads(
    buf: NDArray[np.uint8], starts: NDArray[np.int64], lengths: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """True where a token differs from the one before it (the first token is a head)."""
    n = starts.shape[0]
    heads = np.ones(n, dtype=np.bool_)
    for t in range(1, n):
        heads[t] = not _same_token(buf, starts[t - 1], lengths[t - 1], starts[t], lengths[t])
    return heads


@kernel
def _word(buf: NDArray[np.uint8], start: int, length: int, offset: int) -> np.uint64:
    """Bytes offset..offset+7 of a token, big-endian, zero-padded: word order is byte order (no NULs)."""
    word = np.uint64(0)
    for k in range(offset, offset + 8):
        word = word << np.uint64(8)
        if k < length:
            word = word | np.uint64(buf[start + k])
    return word


@kernel
def prefix_words(
    buf: NDArray[np.uint8], starts: NDArray[np.int64], lengths: NDArray[np.int64]
) -> tuple[NDArray[np.uint64], int]:
    """First sort key of every token: its 8 bytes after the prefix all tokens share, and that prefix's length.

    Skipping the shared prefix ("msmarco_passage_...") keeps the first key discriminating.
    """
    n = starts.shape[0]
    shared = lengths[0] if n else 0
    for t in range(1, n):
        limit = min(shared, lengths[t])
        k = 0
        while k < limit and buf[starts[t] + k] == buf[starts[0] + k]:
            k += 1
        shared = k
    keys = np.empty(n, dtype=np.uint64)
    for t in range(n):
        keys[t] = _word(buf, starts[t], lengths[t], shared)
    return keys, shared


@kernel
def _push_tied_runs(
    keys: NDArray[np.uint64],
    lengths: NDArray[np.int64],
    base: int,
    covered: int,
    level: int,
    stack: list[tuple[int, int, int]],
) -> None:
    """Queue each run of equal `keys` (offset by `base`) holding a token longer than the bytes compared."""
    n = keys.shape[0]
    i = 0
    while i < n:
        j = i + 1
        longest = lengths[i]
        while j < n and keys[j] == keys[i]:
            longest = max(longest, lengths[j])
            j += 1
        if j - i > 1 and longest > covered:
            stack.append((base + i, base + j, level))
        i = j


@kernel
def sorted_codes(
    buf: NDArray[np.uint8],
    starts: NDArray[np.int64],
    lengths: NDArray[np.int64],
    keys: NDArray[np.uint64],
    shared: int,
    order: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per token, its index among the sorted distinct tokens, and the first token of each distinct value.

    `order` sorts the tokens by their first key (from `prefix_words`); runs of equal keys are refined
    8 bytes at a time until every token in them is compared whole. `order` is rearranged in place.
    """
    n = order.shape[0]
    ordered_keys = keys[order]
    ordered_lengths = lengths[order]
    stack = [(0, 0, 0)]
    stack.pop()
    _push_tied_runs(ordered_keys, ordered_lengths, 0, shared + 8, 1, stack)
    refined = len(stack) > 0
    while len(stack):
        lo, hi, level = stack.pop()
        offset = shared + 8 * level
        segment = order[lo:hi].copy()
        words = np.empty(hi - lo, dtype=np.uint64)
        for r in range(hi - lo):
            words[r] = _word(buf, starts[segment[r]], lengths[segment[r]], offset)
        by_word = np.argsort(words)
        for r in range(hi - lo):
            order[lo + r] = segment[by_word[r]]
        _push_tied_runs(words[by_word], lengths[order[lo:hi]], lo, offset + 8, level + 1, stack)
    if refined:  # tied runs were reordered: gather their lengths again
        ordered_lengths = lengths[order]
    covered = shared + 8  # tokens this short are whole in their first key (all share the prefix)
    codes = np.empty(n, dtype=np.int64)
    firsts = np.empty(n, dtype=np.int64)
    distinct = -1
    for r in range(n):
        t = order[r]
        same = (
            r > 0
            and ordered_keys[r] == ordered_keys[r - 1]
            and ordered_lengths[r] == ordered_lengths[r - 1]
            and (
                ordered_lengths[r] <= covered
                or _same_token(buf, starts[order[r - 1]], lengths[t], starts[t], lengths[t])
            )
        )
        if not same:
            distinct += 1
            firsts[distinct] = t
        codes[t] = distinct
    return codes, firsts[: distinct + 1]


@kernel
def _utf8_width(buf: NDArray[np.uint8], start: int, length: int) -> int:
    width = 0
    for k in range(start, start + length):
        if (buf[k] & 0xC0) != 0x80:  # every byte but a continuation byte starts a code point
            width += 1
    return width


@kernel
def code_points(
    buf: NDArray[np.uint8],
    starts: NDArray[np.int64],
    lengths: NDArray[np.int64],
    keys: NDArray[np.uint64],
    shared: int,
    ascii_only: bool,
) -> NDArray[np.uint32]:
    """Tokens decoded from UTF-8 into zero-padded UCS-4 rows, the memory layout of a numpy str array.

    In ASCII text a token no longer than the shared prefix plus 8 bytes is rebuilt from the prefix and
    its first key (`prefix_words`), which avoids a random read of the file per distinct id.
    """
    n = starts.shape[0]
    width = 1
    for t in range(n):
        width = max(width, lengths[t] if ascii_only else _utf8_width(buf, starts[t], lengths[t]))
    out = np.zeros((n, width), dtype=np.uint32)
    if n == 0:
        return out
    prefix = buf[starts[0] : starts[0] + shared]
    for t in range(n):
        if ascii_only and lengths[t] <= shared + 8:
            for c in range(shared):
                out[t, c] = prefix[c]
            key = keys[t]
            for c in range(shared, lengths[t]):
                out[t, c] = np.uint32((key >> np.uint64(8 * (7 - (c - shared)))) & np.uint64(0xFF))
            continue
        _decode_utf8(buf, starts[t], lengths[t], out[t])
    return out


@kernel
def _decode_utf8(buf: NDArray[np.uint8], start: int, length: int, row: NDArray[np.uint32]) -> None:
    p = start
    end = start + length
    c = 0
    while p < end:
        lead = np.uint32(buf[p])
        if lead < 0x80:
            point = lead
            size = 1
        elif lead < 0xE0:
            point = lead & np.uint32(0x1F)
            size = 2
        elif lead < 0xF0:
            point = lead & np.uint32(0x0F)
            size = 3
        else:
            point = lead & np.uint32(0x07)
            size = 4
        for k in range(1, size):
            point = (point << np.uint32(6)) | (np.uint32(buf[p + k]) & np.uint32(0x3F))
        row[c] = point
        c += 1
        p += size
