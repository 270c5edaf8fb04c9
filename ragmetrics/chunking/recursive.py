"""Recursive splitting by structure, with exact offsets.

The text is cut at the highest-level boundary that yields pieces no longer than `size` (Markdown headings,
then blank lines, line breaks, sentence ends, spaces, and last a hard cut), a piece still too long is cut
again at the next level down, and consecutive pieces are then packed into chunks of at most `size`, each
new chunk starting with up to `overlap` of the previous chunk's last pieces. The rule is that of
LangChain's RecursiveCharacterTextSplitter; it is written here over index ranges rather than strings, so a
chunk's offsets are known rather than searched for (searching finds the first copy of a repeated passage).
"""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from collections.abc import Callable, Sequence

from ragmetrics.chunking.units import Span, token_spans

__all__ = ["DEFAULT_SEPARATORS", "recursive_spans"]

DEFAULT_SEPARATORS: tuple[str, ...] = (
    r"\n(?=#{1,6}[ \t])",  # before a Markdown heading
    r"\n[ \t]*\r?\n\s*",  # a blank line: paragraphs (also in CRLF text)
    r"\n",  # line breaks
    r"(?<=[.!?。！？])\s+",  # sentence ends
    r"\s+",  # words
)
"""Where to cut, highest level first (regular expressions); a piece starts where a match ends."""

Length = Callable[[int, int], int]


def recursive_spans(
    text: str,
    size: int,
    overlap: int,
    *,
    length: str = "characters",
    separators: Sequence[str] | None = None,
) -> list[Span]:
    """The [start, end) ranges of `text`'s chunks (whitespace at their ends excluded), in order."""
    patterns = [re.compile(p) for p in (DEFAULT_SEPARATORS if separators is None else separators)]
    if length == "tokens":
        starts = [s for s, _ in token_spans(text)]

        def measure(start: int, end: int) -> int:
            return bisect.bisect_left(starts, end) - bisect.bisect_left(starts, start)

        def hard_cut(start: int, end: int) -> list[Span]:
            first, last = bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)
            cuts = [starts[i] for i in range(first, last, size)][1:]
            return _ranges(start, end, cuts)
    else:

        def measure(start: int, end: int) -> int:
            return end - start

        def hard_cut(start: int, end: int) -> list[Span]:
            cuts: list[int] = []
            position = start
            while position + size < end:
                position = _cluster_boundary(text, position, position + size, end)
                if position >= end:
                    break
                cuts.append(position)
            return _ranges(start, end, cuts)

    pieces = _pieces(text, 0, len(text), 0, patterns, size, measure, hard_cut)
    return _pack(text, pieces, size, overlap, measure)


def _joins_previous(text: str, i: int) -> bool:
    """Whether a cut before text[i] would split what a reader sees as one character: a combining mark, a
    zero-width joiner or what follows one, a variation selector, an emoji skin tone, or the LF of a CRLF."""
    char, before = text[i], text[i - 1]
    code = ord(char)
    return (
        unicodedata.category(char) in ("Mn", "Mc", "Me")
        or char == "\u200d"
        or before == "\u200d"
        or 0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF
        or 0x1F3FB <= code <= 0x1F3FF
        or (before == "\r" and char == "\n")
    )


def _cluster_boundary(text: str, previous: int, wanted: int, end: int) -> int:
    """The cut nearest before `wanted` (after `previous`) that splits no character cluster; if the cluster is
    longer than the whole window, the first boundary after it (the piece is then longer than `size`)."""
    cut = wanted
    while cut > previous + 1 and _joins_previous(text, cut):
        cut -= 1
    if not _joins_previous(text, cut):
        return cut
    cut = wanted
    while cut < end and _joins_previous(text, cut):
        cut += 1
    return cut


def _ranges(start: int, end: int, cuts: list[int]) -> list[Span]:
    bounds = [start, *cuts, end]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def _pieces(
    text: str,
    start: int,
    end: int,
    level: int,
    patterns: Sequence[re.Pattern[str]],
    size: int,
    measure: Length,
    hard_cut: Callable[[int, int], list[Span]],
) -> list[Span]:
    """[start, end) as consecutive pieces, each at most `size`, cut at the highest level possible."""
    if measure(start, end) <= size:
        return [(start, end)]
    for index in range(level, len(patterns)):
        cuts = [m.end() for m in patterns[index].finditer(text, start, end) if start < m.end() < end]
        if cuts:
            pieces: list[Span] = []
            for a, b in _ranges(start, end, cuts):
                pieces.extend(_pieces(text, a, b, index + 1, patterns, size, measure, hard_cut))
            return pieces
    return hard_cut(start, end)


def _pack(text: str, pieces: list[Span], size: int, overlap: int, measure: Length) -> list[Span]:
    """Consecutive pieces packed into chunks of at most `size`, each chunk repeating up to `overlap` of the
    previous one's last pieces (as many whole pieces as fit both limits)."""
    chunks: list[Span] = []
    current: list[Span] = []
    fresh = 0  # pieces of `current` that the previous chunk does not hold
    for piece in pieces:
        if current and measure(current[0][0], piece[1]) > size:
            chunks.append((current[0][0], current[-1][1]))
            kept: list[Span] = []
            # At most fresh - 1 pieces carry over, so every chunk keeps a piece no neighbour holds.
            for earlier in reversed(current[len(current) - fresh + 1 :]):
                if measure(earlier[0], current[-1][1]) > overlap:
                    break
                kept.insert(0, earlier)
            while kept and measure(kept[0][0], piece[1]) > size:
                kept.pop(0)
            current, fresh = kept, 0
        current.append(piece)
        fresh += 1
    if current:
        chunks.append((current[0][0], current[-1][1]))
    stripped = [_strip(text, a, b) for a, b in chunks]
    return _dedupe([span for span in stripped if span is not None])


def _strip(text: str, start: int, end: int) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def _dedupe(spans: list[Span]) -> list[Span]:
    """Drop a chunk equal to the one before it (an overlap of whitespace-only pieces can repeat a chunk)."""
    kept: list[Span] = []
    for span in spans:
        if not kept or kept[-1] != span:
            kept.append(span)
    return kept
