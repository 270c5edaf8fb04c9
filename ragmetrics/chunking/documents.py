"""Whole documents in: a JSONL file (one ``{"id": ..., "text": ...}`` per line) or a folder of text, Markdown
and HTML files (the id is the file's path inside the folder).

HTML is read as the text a person sees: tags dropped, scripts and styles skipped, block elements ending
lines, headings written as Markdown headings (so recursive splitting cuts at them). Offsets of chunks and
spans of an HTML document index into that text, which `Document.text` holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from ragmetrics._jsonl import validated_jsonl
from ragmetrics._textfile import read_utf8
from ragmetrics.chunking.model import Document
from ragmetrics.errors import InputError

__all__ = ["DOCUMENT_SUFFIXES", "DocumentFolder", "html_text", "load_documents", "scan_folder"]

DOCUMENT_SUFFIXES = {
    ".txt": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
}


class _DocumentRow(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: StrictStr = Field(min_length=1)
    text: StrictStr = Field(min_length=1)


@dataclass(frozen=True)
class DocumentFolder:
    """The documents of a folder and the files left out (other suffixes), so a caller can say what it skipped."""

    files: list[Path]
    skipped: list[Path] = field(default_factory=list)


def scan_folder(folder: Path) -> DocumentFolder:
    """The text, Markdown and HTML files under `folder` (hidden ones excluded) in path order."""
    files: list[Path] = []
    skipped: list[Path] = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file():
            continue
        (files if path.suffix.lower() in DOCUMENT_SUFFIXES else skipped).append(path)
    return DocumentFolder(files, skipped)


def load_documents(path: Path | str) -> list[Document]:
    """The documents of a JSONL file or a folder, in order; a duplicate id, a blank text, a row that is not
    ``{"id": str, "text": str}`` or a folder without documents is an InputError naming the file and line."""
    return list(iter_documents(Path(path)))


def iter_documents(path: Path) -> Iterator[Document]:
    seen: dict[str, str] = {}
    if path.is_dir():
        scanned = scan_folder(path)
        if not scanned.files:
            raise InputError(
                f"no documents: no file ending {', '.join(sorted(DOCUMENT_SUFFIXES))}", source=str(path)
            )
        for file in scanned.files:
            raw = read_utf8(file)
            text = html_text(raw) if DOCUMENT_SUFFIXES[file.suffix.lower()] == "html" else raw
            if not text.strip():
                raise InputError("no text in this document", source=str(file))
            yield Document(file.relative_to(path).as_posix(), text)
        return
    for line, row in validated_jsonl(path, _DocumentRow, "a document"):
        if not row.text.strip():
            raise InputError("the document's text is blank", source=str(path), line=line, field="text")
        if row.id in seen:
            raise InputError(
                f"document id {row.id!r} again (first at {seen[row.id]})",
                source=str(path),
                line=line,
                field="id",
            )
        seen[row.id] = f"line {line}"
        yield Document(row.id, row.text)


_LINES = frozenset(["br", "li", "tr", "dt", "dd"])  # a new line each
_BLOCKS = frozenset(
    {
        "p", "div", "ul", "ol", "table", "section", "article", "header", "footer", "nav", "aside",
        "blockquote", "pre", "figure", "figcaption", "main", "form", "hr",
    }
)  # fmt: skip  # a paragraph each
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SKIPPED = frozenset({"script", "style", "template", "noscript", "head"})
_PRE_NEWLINE = "\x00"  # a line break inside <pre>, kept through the whitespace clean-up


class _TextOfHtml(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skipping += 1
        elif tag in _HEADINGS:
            self.parts.append("\n\n" + "#" * _HEADINGS[tag] + " ")
        elif tag in _LINES:
            self.parts.append("\n")
        elif tag in _BLOCKS:
            self.parts.append("\n\n")
            self._pre += tag == "pre"

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _HEADINGS or tag in _BLOCKS:
            self.parts.append("\n\n")
            if tag == "pre":
                self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        data = data.replace(_PRE_NEWLINE, "")
        if self._pre:
            self.parts.append(data.replace("\n", _PRE_NEWLINE))
        else:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_text(html: str) -> str:
    """The visible text of an HTML page: paragraphs separated by blank lines, headings as Markdown, the
    lines and indentation of <pre> blocks kept, other runs of whitespace made one space."""
    parser = _TextOfHtml()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    text = re.sub(r" *\n *", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n ")
    return text.replace(_PRE_NEWLINE, "\n") + "\n"
