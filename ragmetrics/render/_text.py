"""One plain table model rendered four ways (terminal, Markdown, LaTeX, CSV).

Reports build a `Grid` of already-formatted cells once; each renderer only lays it out, so the terminal,
Markdown and LaTeX views of the same numbers can never disagree.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ragmetrics.render.safe_text import csv_cell, markdown_text, visible_controls

Align = Literal["left", "right"]

# Wide enough that rich never wraps a cell; a table only takes the width it needs.
_CONSOLE_WIDTH = 400

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # Under LaTeX's default OT1 encoding a bare < or > in text prints as ¡ or ¿ (the legend says "p <= alpha").
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "↓": r"$\downarrow$",  # after latency_s, tokens, cost: lower is better
    "Δ": r"$\Delta$",
    "≤": r"$\le$",
}


@dataclass
class Grid:
    """Headers, rows of string cells, per-column alignment, and notes printed under the table."""

    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    align: list[Align] | None = None
    title: str | None = None
    notes: list[str] = field(default_factory=list)
    # Terminal-only styling per cell (same shape as rows, None = plain); other formats ignore it.
    styles: list[list[str | None]] | None = None
    # Row indices after which a rule is drawn (e.g. between runs), terminal and LaTeX only.
    sections: set[int] = field(default_factory=set)
    # Cells given as ready LaTeX (row, column) -> source, used instead of escaping the plain cell.
    latex_cells: dict[tuple[int, int], str] = field(default_factory=dict)
    # Cells to emphasise (e.g. the best mean of a metric) in every format.
    bold: set[tuple[int, int]] = field(default_factory=set)

    def alignment(self) -> list[Align]:
        if self.align is None:
            default: list[Align] = ["left"]
            return default + ["right"] * (len(self.headers) - 1)
        return self.align


def aligned(left: int, right: int) -> list[Align]:
    """`left` left-aligned (label) columns followed by `right` right-aligned (number) columns."""
    out: list[Align] = ["left"] * left
    return out + ["right"] * right


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def markdown_escape(text: str) -> str:
    return markdown_text(text)


def terminal_width() -> int | None:
    """The width to fit: $COLUMNS when set, else the terminal's when stdout is one, else None (a file or a CI
    log keeps whole tables, which a reader scrolls rather than reassembles)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size((120, 24)).columns
    return None


def _column_widths(grid: Grid) -> list[int]:
    from rich.cells import cell_len  # display width: a CJK character takes two cells

    widths = [cell_len(h) for h in grid.headers]
    for row in grid.rows:
        for k, cell in enumerate(row):
            widths[k] = max(widths[k], cell_len(cell))
    return widths


def split_to_width(grid: Grid, width: int) -> list[Grid]:
    """The grid as one table, or as several that each fit `width`: the leading label columns repeat in
    every part and the value columns are shared out in order, so no cell is ever cut or wrapped."""
    widths = _column_widths(grid)
    if sum(w + 3 for w in widths) + 1 <= width:
        return [grid]
    align = grid.alignment()
    labels = next((k for k, a in enumerate(align) if a != "left"), len(align))
    label_width = sum(w + 3 for w in widths[:labels]) + 1
    parts: list[list[int]] = [[]]
    used = label_width
    for k in range(labels, len(widths)):
        if parts[-1] and used + widths[k] + 3 > width:
            parts.append([])
            used = label_width
        parts[-1].append(k)
        used += widths[k] + 3
    if len(parts) == 1:
        return [grid]
    out = []
    for n, chosen in enumerate(parts):
        keep = list(range(labels)) + chosen
        index = {old: new for new, old in enumerate(keep)}
        out.append(
            Grid(
                headers=[grid.headers[k] for k in keep],
                rows=[[row[k] for k in keep] for row in grid.rows],
                align=[align[k] for k in keep],
                title=grid.title if n == 0 else "(continued)",
                notes=grid.notes if n == len(parts) - 1 else [],
                styles=None if grid.styles is None else [[st[k] for k in keep] for st in grid.styles],
                sections=grid.sections,
                bold={(r, index[c]) for r, c in grid.bold if c in index},
            )
        )
    return out


def to_terminal(grid: Grid, *, color: bool = False, width: int | None = None) -> str:
    """Render with rich into a string; `color=False` gives plain text without escape codes. A grid wider
    than `width` (default: the terminal's) is printed as several tables that each fit."""
    limit = width if width is not None else terminal_width()
    parts = split_to_width(grid, limit) if limit is not None else [grid]
    if len(parts) > 1:
        return "\n".join(_render_terminal(part, color=color) for part in parts)
    return _render_terminal(grid, color=color)


def _render_terminal(grid: Grid, *, color: bool) -> str:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=_CONSOLE_WIDTH,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )
    table = Table(title=visible_controls(grid.title or ""), show_lines=False, title_justify="left")
    for header, align in zip(grid.headers, grid.alignment(), strict=True):
        table.add_column(visible_controls(header), justify=align, no_wrap=True)
    for index, row in enumerate(grid.rows):
        row_styles = grid.styles[index] if grid.styles is not None else [None] * len(row)
        cells = [
            Text(
                visible_controls(cell),
                style=" ".join(filter(None, [style, "bold" if (index, k) in grid.bold else None])),
            )
            for k, (cell, style) in enumerate(zip(row, row_styles, strict=True))
        ]
        table.add_row(*cells, end_section=index in grid.sections)
    console.print(table)
    for note in grid.notes:
        console.print(Text(visible_controls(note)))
    return buffer.getvalue()


def to_markdown(grid: Grid) -> str:
    lines: list[str] = []
    if grid.title:
        lines += [f"**{markdown_escape(grid.title)}**", ""]
    lines.append("| " + " | ".join(markdown_escape(h) for h in grid.headers) + " |")
    lines.append("|" + "|".join(":---" if a == "left" else "---:" for a in grid.alignment()) + "|")
    for r, row in enumerate(grid.rows):
        cells = [
            f"**{markdown_escape(c)}**" if (r, k) in grid.bold and c else markdown_escape(c)
            for k, c in enumerate(row)
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if grid.notes:
        lines.append("")
        lines += [markdown_escape(note) for note in grid.notes]
    return "\n".join(lines) + "\n"


def to_latex(grid: Grid) -> str:
    """A booktabs tabular inside a table float (needs \\usepackage{booktabs})."""
    spec = "".join("l" if a == "left" else "r" for a in grid.alignment())
    bold_cells = grid.bold
    lines = ["\\begin{table}[t]", "\\centering"]
    if grid.title:
        lines.append(f"\\caption{{{latex_escape(grid.title)}}}")
    lines += [f"\\begin{{tabular}}{{{spec}}}", "\\toprule"]
    lines.append(" & ".join(latex_escape(h) for h in grid.headers) + " \\\\")
    lines.append("\\midrule")
    for r, row in enumerate(grid.rows):
        cells = []
        for k, c in enumerate(row):
            cell = grid.latex_cells.get((r, k), latex_escape(c))
            cells.append(f"\\textbf{{{cell}}}" if (r, k) in bold_cells and c else cell)
        lines.append(" & ".join(cells) + " \\\\")
        if r in grid.sections and r != len(grid.rows) - 1:
            lines.append("\\midrule")
    lines += ["\\bottomrule", "\\end{tabular}"]
    if grid.notes:
        lines.append("\\par\\smallskip\\footnotesize " + " \\\\ ".join(latex_escape(n) for n in grid.notes))
    lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


def to_csv(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([csv_cell(h) for h in headers])
    writer.writerows([csv_cell(c) for c in row] for row in rows)
    return buffer.getvalue()


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def latex_preamble_note(tex: str) -> str:
    """`tex`, with a first comment line saying how to compile it when it holds characters pdflatex cannot
    typeset (Chinese, Japanese, Korean; Cyrillic needs only T2A fonts, also said)."""
    if _CJK.search(tex):
        return (
            "% holds Chinese/Japanese/Korean text: compile with xelatex or lualatex and \\usepackage{xeCJK} "
            "(\\setCJKmainfont{Noto Serif CJK JP}) or \\usepackage{luatexja}\n" + tex
        )
    if any("\u0400" <= ch <= "\u04ff" for ch in tex):
        return (
            "% holds Cyrillic text: pdflatex needs \\usepackage[T2A]{fontenc}; xelatex/lualatex need nothing\n"
            + tex
        )
    return tex
