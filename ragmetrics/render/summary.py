"""A night in a few hundred words for a pull request comment or a CI job summary (`ragmetrics summary`).

Self-contained Markdown: a headline with the gate's verdict, the report's verdict lines, what dropped (each
regression with its means, drop and corrected p, and its worst questions), where answers were lost per compared
pair (retrieval or generation: the sufficient-context breakdown, when the night has it), the compared means with their 95 %
t intervals, an adaptive night's decisions, and links to the artifacts. It starts with a marker comment
(`<!-- ragmetrics-summary -->`) so a workflow can find and update its one comment instead of adding one per
push, and it fits the size asked for (GitHub's comment limit is 65,536 characters): the long parts shrink first
(fewer worst questions, then fewer rows, each cut said), the verdict never.

Formats differ only in markup GitHub and GitLab render differently: `github` uses GitHub's alert blocks for a
failed or incomplete gate, `gitlab` and `markdown` a plain quote.
"""

from __future__ import annotations

from typing import Literal

from ragmetrics.comparison.means import mean_interval
from ragmetrics.render.safe_text import comment_code, comment_text
from ragmetrics.render.sufficiency import report_sufficiency
from ragmetrics.render.verdict import verdict_lines
from ragmetrics.schema import GateResult, Report

__all__ = ["MARKER", "SummaryFormat", "summary_markdown"]

MARKER = "<!-- ragmetrics-summary -->"
SummaryFormat = Literal["github", "gitlab", "markdown"]
ARTIFACTS = ("report.html", "report.md", "report.json")
NOTICES = {
    "regression": "The regression gate failed: a significant drop beyond its threshold against the baseline.",
    "incomplete": "Too many scores failed for some pairs to be checked: the night is incomplete, not passed.",
    "untrusted": "The judge agreed with your labels less than the floor: some pairs were neither passed nor failed.",
    "not_comparable": "The data or the judge changed since the baseline: some pairs were not checked.",
}


def _cell(text: str) -> str:
    """Text from the data (names, questions, verdicts) in the comment: inert (`render.safe_text.comment_text`)."""
    return comment_text(str(text))


def _headline(report: Report, gate: GateResult | None) -> tuple[str, str | None]:
    name = _cell(report.metadata.nightly.name if report.metadata.nightly is not None else "ragmetrics")
    if gate is None:
        return f"ragmetrics: {name} (no baseline: no gate)", None
    status = gate.status
    if status == "regression":
        worst = ", ".join(f"{_cell(c.run)} / {_cell(c.metric)}" for c in gate.regressions[:5])
        return f"ragmetrics: {name}: gate FAILED ({len(gate.regressions)} regression(s): {worst})", "CAUTION"
    if status == "ok" and gate.from_cache:
        return (f"ragmetrics: {name}: gate passed on cached outputs ({len(gate.checks)} checks against "
                f"{_cell(gate.baseline)}; {len(gate.from_cache)} runs not called tonight)", "WARNING")  # fmt: skip
    if status == "ok":
        return f"ragmetrics: {name}: gate passed ({len(gate.checks)} checks against {_cell(gate.baseline)})", None
    return f"ragmetrics: {name}: gate {status.replace('_', ' ')}", "WARNING"


def _notice_text(gate: GateResult | None) -> str:
    if gate is not None and gate.from_cache:
        return (
            ("baseline.require_fresh: " if gate.refused_stale else "")
            + "every pipeline/generator output of "
            + ", ".join(_cell(item.split(":", 1)[0].removeprefix("run ")) for item in gate.from_cache)
            + " came from the pipeline cache: tonight's build was not called for it."
        )
    return NOTICES.get(gate.status if gate is not None else "", "")


def _notice(kind: str | None, text: str, fmt: SummaryFormat) -> list[str]:
    if kind is None:
        return []
    if fmt == "github":
        return [f"> [!{kind}]", f"> {text}", ""]
    return [f"> **{kind.title()}**: {text}", ""]


def _drops(gate: GateResult, worst: int, questions: dict[str, str]) -> list[str]:
    if not gate.regressions:
        return []
    lines = ["### What dropped", "", "| run | metric | baseline | tonight | drop | threshold | p (corrected) |",
             "|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for c in gate.regressions:
        lines.append(f"| {_cell(c.run)} | {_cell(c.metric)} | {c.mean_baseline:.3f} | {c.mean_current:.3f} | "
                     f"{c.drop:+.3f} | {c.threshold:g} | {c.p_corrected:.2g} |")  # fmt: skip
    if worst:
        lines.append("")
        for c in gate.regressions:
            for q in c.worst_queries[:worst]:
                text = questions.get(q.query_id, "")
                text = f": {_cell(text[:100])}{'...' if len(text) > 100 else ''}" if text else ""
                lines.append(f"- {_cell(c.run)} / {_cell(c.metric)}, {comment_code(q.query_id)} {q.baseline:.2f} -> "
                             f"{q.current:.2f}{text}")  # fmt: skip
    return [*lines, ""]


def _means(report: Report, rows: int) -> list[str]:
    runs = [r.name for r in report.runs]
    metrics = list(dict.fromkeys(m for r in runs for m in report.descriptive.get(r, {})))
    if not metrics:
        return []
    lines = ["### Means (95 % CI)", "", "| run | " + " | ".join(_cell(m) for m in metrics) + " |",
             "|---|" + "---:|" * len(metrics)]  # fmt: skip
    for run in runs[:rows]:
        cells = []
        for m in metrics:
            stats = report.descriptive.get(run, {}).get(m)
            if stats is None:
                cells.append("-")
                continue
            interval = mean_interval(stats)
            span = f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval is not None else ""
            cells.append(f"{stats.mean:.3f}{span} n={stats.count}")
        lines.append(f"| {_cell(run)} | " + " | ".join(cells) + " |")
    if len(runs) > rows:
        lines.append(f"| ... {len(runs) - rows} more runs in report.html | " + " | ".join("" for _ in metrics) + " |")
    return [*lines, ""]


def _sufficiency(report: Report, pairs: int) -> list[str]:
    """Where answers were lost, per compared pair: retrieval (sufficient context) or generation."""
    section = report_sufficiency(report)
    if section is None or not (section.pairs or section.notes) or pairs == 0:
        return []
    lines = ["### Retrieval or generation (sufficient context)", ""]
    for pair in section.pairs[:pairs]:
        lines.append(f"- {_cell(pair.run_b)} against {_cell(pair.run_a)}:")
        lines += [f"  - {_cell(line)}" for line in pair.lines]
    if len(section.pairs) > pairs:
        lines.append(f"- ... {len(section.pairs) - pairs} more pairs in report.html")
    lines += [f"- {_cell(note)}" for note in section.notes]
    return [*lines, ""]


def _adaptive(report: Report) -> list[str]:
    nightly = report.metadata.nightly
    if nightly is None or nightly.adaptive is None:
        return []
    a = nightly.adaptive
    return ["### Adaptive night", "", f"{a.judged} of {a.questions} questions judged ({a.stopped}); "
            f"{a.units} of {a.units_full} judge scores.", "", *(f"- {_cell(d.text)}" for d in a.decisions), ""]  # fmt: skip


def summary_markdown(
    report: Report, *, fmt: SummaryFormat = "markdown", artifacts_url: str | None = None, max_chars: int = 60_000
) -> str:
    """The night's summary (module docstring), at most `max_chars` characters."""
    gate = report.metadata.nightly.regression if report.metadata.nightly is not None else None
    headline, notice = _headline(report, gate)
    questions = {q: s.question for q, s in (report.metadata.nightly.samples if report.metadata.nightly else {}).items()}
    links = []
    if artifacts_url:
        base = artifacts_url.rstrip("/")
        links = ["Artifacts: " + ", ".join(f"[{name}]({base}/{name})" for name in ARTIFACTS), ""]

    def render(worst: int, rows: int, verdicts: int, pairs: int) -> str:
        lines = [MARKER, f"## {headline}", ""]
        lines += _notice(notice, _notice_text(gate), fmt)
        shown = verdict_lines(report)
        lines += [f"- {_cell(v)}" for v in shown[:verdicts]]
        if len(shown) > verdicts:
            lines.append(f"- ... {len(shown) - verdicts} more in report.html")
        lines.append("")
        if gate is not None:
            lines += _drops(gate, worst, questions)
        lines += _sufficiency(report, pairs)
        lines += _means(report, rows)
        lines += _adaptive(report)
        lines += links
        return "\n".join(lines).rstrip("\n") + "\n"

    text = render(3, 50, 20, 20)
    for worst, rows, verdicts, pairs in ((1, 50, 20, 20), (0, 20, 10, 5), (0, 5, 5, 2), (0, 0, 3, 1), (0, 0, 1, 0)):
        if len(text) <= max_chars:
            break
        text = render(worst, rows, verdicts, pairs)
    return text if len(text) <= max_chars else _cut_between_rows(text, max_chars)


def _is_row(line: str) -> bool:
    return line.startswith("|")


def _cut_between_rows(text: str, max_chars: int) -> str:
    """`text` cut to `max_chars` at a line end, never inside a table row, saying how many rows were left out.

    Still too long after every shrink (many regressions, a huge verdict line): whole lines are kept while they
    fit. A table row that does not fit is left out whole, with every line after it; a table whose header fits
    but none of its rows is left out whole too (a header alone says nothing). A text line that does not fit is
    cut at a word, since a sentence cut short still reads where a row cut short puts its cells under the wrong
    header.
    """
    lines = text.rstrip("\n").split("\n")
    note_room = len("\n\n... cut to fit: 9999999 table rows and 9999999 other lines left out; see report.html\n")
    budget = max(0, max_chars - note_room)
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > budget:
            break
        kept.append(line)
        used += len(line) + 1
    while kept and _is_header(lines, len(kept) - 1):  # a header and separator without a row: no table
        kept.pop()
    whole = len(kept)
    left = lines[whole:]
    if left and not _is_row(left[0]) and budget - used > 40:  # the line that did not fit, cut at a word
        room = budget - used - 4
        part = left[0][:room]
        kept.append((part.rsplit(" ", 1)[0] if " " in part else part) + " ...")
        left = left[1:]
    rows_left = sum(1 for i, line in enumerate(left, start=len(lines) - len(left))
                    if _is_row(line) and not _is_header(lines, i))  # fmt: skip
    other_left = sum(1 for line in left if line.strip() and not _is_row(line))
    said = [f"{rows_left} table row{'s' if rows_left != 1 else ''}"] if rows_left else []
    if other_left:
        said.append(f"{other_left} other line{'s' if other_left != 1 else ''}")
    note = f"... cut to fit: {' and '.join(said) or 'the end of a line'} left out; see report.html"
    return "\n".join(kept).rstrip("\n") + "\n\n" + note + "\n"


def _is_header(lines: list[str], i: int) -> bool:
    """Whether line `i` is a table's header or its separator row (`|---|---:|`), not one of its rows."""
    if not 0 <= i < len(lines) or not _is_row(lines[i]):
        return False
    if set(lines[i]) <= set("|-: "):
        return True
    return i + 1 < len(lines) and _is_row(lines[i + 1]) and set(lines[i + 1]) <= set("|-: ")
