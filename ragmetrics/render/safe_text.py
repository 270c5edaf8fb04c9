"""Text from data (run names, query ids, sample text, a judge's reasons) made inert for each reader.

Everything a report shows can come from an evaluated system or a dataset someone else wrote, so each output
format neutralises what its reader would execute or interpret: a spreadsheet formulas (OWASP's CSV rule: a
cell starting with = + - @, tab or CR), a Markdown viewer raw HTML and table pipes, a terminal escape and
control sequences, a browser NUL and other C0 characters (HTML escaping itself is `html.escape`), matplotlib
`$...$` math. The functions here are the one place each rule lives.
"""

from __future__ import annotations

import re

__all__ = ["comment_code", "comment_text", "csv_cell", "markdown_text", "plain_plot_text", "strip_controls", "visible_controls"]

# C0 controls, DEL and C1 controls: what a terminal acts on (ESC starts sequences, BEL rings, CR rewrites).
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# The same without tab, newline and carriage return, which text documents keep.
_CONTROLS_BUT_SPACE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|nan)", re.IGNORECASE)


def visible_controls(text: str) -> str:
    """Control characters written out as escapes (\\x1b, \\n), so a terminal shows them instead of obeying."""
    return _CONTROLS.sub(lambda m: repr(m.group())[1:-1] if m.group() not in "\n\t" else " ", text)


def strip_controls(text: str) -> str:
    """Control characters other than tab, newline and CR replaced by U+FFFD (HTML, Markdown)."""
    return _CONTROLS_BUT_SPACE.sub("\ufffd", text)


def csv_cell(value: object) -> object:
    """A CSV cell a spreadsheet will not run: text starting with = + - @, tab or CR gets a leading quote
    (OWASP's rule); numbers, and text that is a plain number such as "-0.25", are left as they are."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_START) or _NUMBER.fullmatch(value):
        return value
    return "'" + value


def markdown_text(text: str) -> str:
    """Text for a Markdown table cell or list item: no raw HTML, no table-breaking pipe, one line."""
    text = strip_controls(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    text = text.replace("\\", "\\\\").replace("|", "\\|")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_MARKUP = re.compile(r"([\[\]*~`!])")
# An @ that starts a word: GitHub and GitLab turn it into a mention (a ping, on every night). One inside a word
# (ndcg@10, an e-mail address) is not a mention and is left alone.
_MENTION = re.compile(r"(?<![A-Za-z0-9])@(?=[A-Za-z0-9])")
_JOINER = "\u200d"


def comment_text(text: str) -> str:
    """Text for a pull-request comment (GFM table cell, list item or heading): `markdown_text`, and markup that
    would link, embed an image, emphasise or open a code span escaped, and mentions broken by a zero-width joiner
    after the @ (the name still reads, nobody is pinged)."""
    return _MENTION.sub("@" + _JOINER, _MARKUP.sub(r"\\\1", markdown_text(text)))


def comment_code(text: str) -> str:
    """Text shown as an inline code span in a comment: one line, no backtick to close the span early (inside a
    span HTML and mentions are inert already)."""
    one_line = " ".join(strip_controls(text).split())
    return "`" + one_line.replace("`", "'") + "`"


def plain_plot_text(text: str) -> str:
    """Text matplotlib draws as it is: `$` would start math (and an unbalanced one raises), so it is escaped."""
    return strip_controls(text).replace("$", r"\$")
