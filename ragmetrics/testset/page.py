"""testset.html: what a test set holds and how it was made, for the people who review it.

One self-contained page (no script, no external resource): the counts, coverage of the corpus's topic
groups, question kinds and languages, every filter with its count and examples, the qrels' origins, the
pool, the review by people when there is one, and the questions themselves. Every text from the corpus or the
generator is HTML-escaped. Wide tables sit in a box that says it scrolls sideways, so nothing is cut off on a
phone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ragmetrics.testset.settings import TestItem

__all__ = ["render_page"]

MAX_QUESTIONS = 500

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1c1e21;background:#fafafa}
main{max-width:1200px;margin:0 auto;padding:16px}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ddd}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{background:#fff;border:1px solid #ddd;border-radius:6px;
padding:8px 12px;min-width:120px;flex:1 1 120px}.card b{display:block;font-size:1.4em}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;background:#fff;border:1px solid #ddd;border-radius:6px}
.hint{font-size:.8em;color:#666;margin:2px 0 4px}
table{border-collapse:collapse;width:100%}th,td{padding:4px 8px;border-bottom:1px solid #eee;text-align:left;
vertical-align:top}th{background:#f0f2f5;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.q td:nth-child(4),.q td:nth-child(5){min-width:16em;max-width:36em;overflow-wrap:anywhere}
code{font-size:.9em;overflow-wrap:anywhere}.muted{color:#666}.bar{background:#4c78a8;height:8px;border-radius:2px}
@media (max-width:600px){main{padding:8px}.card{min-width:90px}}
"""


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, numeric: set[int] | None = None, cls: str = ""
) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    hint = (
        '<p class="hint">Wide table: on a narrow screen it scrolls sideways.</p>' if len(headers) > 3 else ""
    )
    return f'{hint}<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


SOURCE_CHARS = 400
"""How much of a question's source chunk the page shows beside it."""


def render_page(
    data: dict[str, Any], items: Sequence[TestItem], sources: Mapping[str, str] | None = None
) -> str:
    """The page for a test set's summary (`output.summary`) and its items; `sources` (chunk id -> text), when
    given, puts each question beside the text it was written from, so a reader can judge it."""
    sources = sources or {}
    cov = data.get("coverage", {})
    chunks = data.get("chunks", {})
    cards = [
        ("questions", data.get("questions", 0)),
        ("answerable", data.get("answerable", 0)),
        ("chunks in corpus", chunks.get("total", 0)),
        ("worth asking about", chunks.get("eligible", 0)),
        ("topic groups covered", f"{cov.get('groups_with_questions', 0)} / {cov.get('groups', 0)}"),
        ("relevant per question", data.get("qrels", {}).get("relevant_per_question", 0)),
    ]
    parts = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>Test set: {_e(data.get('corpus', ''))}</title><style>{_CSS}</style></head><body><main>",
        f"<h1>Test set from {_e(data.get('corpus', ''))}</h1>",
        f'<p class="muted">generator: {_e(data.get("generator"))}; judge: {_e(data.get("judge"))}; seed '
        f"{_e(data.get('settings', {}).get('seed'))}; ragmetrics {_e(data.get('ragmetrics'))}; built in "
        f"{_e(data.get('seconds'))} s</p>",
        '<div class="cards">'
        + "".join(f'<div class="card"><b>{_e(v)}</b>{_e(k)}</div>' for k, v in cards)
        + "</div>",
    ]
    for note in data.get("notes") or []:
        parts.append(f'<p class="muted">Note: {_e(note)}</p>')
    parts.append("<h2>Coverage of the corpus</h2>")
    parts.append(
        f"<p>{_e(cov.get('groups_with_questions', 0))} of {_e(cov.get('groups', 0))} topic groups have questions; "
        f"they hold {100 * float(cov.get('share_of_chunks_in_covered_groups', 0)):.1f}% of the chunks worth asking "
        f"about. Largest gap between a group's share of the questions and its share of the corpus: "
        f"{100 * float(cov.get('largest_share_gap', 0)):.1f} points.</p>"
    )
    total_q = max(1, sum(int(g.get("questions", 0)) for g in data.get("groups", [])))
    group_rows = [
        [
            _e(g["group"]),
            _e(", ".join(g.get("terms", []))),
            _e(g["chunks"]),
            f"{100 * g['share']:.1f}%",
            _e(g["questions"]),
            f"{100 * g['questions'] / total_q:.1f}%",
        ]
        for g in sorted(data.get("groups", []), key=lambda g: -g["chunks"])
    ]
    parts.append(
        _table(
            ["group", "terms", "chunks", "share of corpus", "questions", "share of questions"],
            group_rows,
            numeric={0, 2, 3, 4, 5},
        )
    )
    skipped = chunks.get("skipped", {})
    if skipped:
        parts.append("<h2>Chunks not asked about</h2>")
        parts.append(_table(["reason", "chunks"], [[_e(k), _e(v)] for k, v in skipped.items()], numeric={1}))
        examples = chunks.get("skipped_examples", [])[:10]
        if examples:
            parts.append(
                _table(
                    ["chunk", "line", "reason", "why"],
                    [
                        [f"<code>{_e(x['id'])}</code>", _e(x["line"]), _e(x["reason"]), _e(x["detail"])]
                        for x in examples
                    ],
                    numeric={1},
                )
            )
    parts.append("<h2>Question kinds and languages</h2>")
    shares = data.get("settings", {}).get("kinds", {})
    total_share = sum(shares.values()) or 1
    parts.append(
        _table(
            ["kind", "questions", "configured share"],
            [
                [_e(k), _e(v), f"{100 * shares.get(k, 0) / total_share:.0f}%"]
                for k, v in data.get("kinds", {}).items()
            ],
            numeric={1, 2},
        )
    )
    parts.append(
        _table(
            ["language", "questions"],
            [[_e(k), _e(v)] for k, v in data.get("languages", {}).items()],
            numeric={1},
        )
    )
    parts.append("<h2>Filters</h2>")
    parts.append(f"<p>{_e(data.get('drafts', 0))} drafts; each filter below left some out.</p>")
    filter_rows = []
    for name, entry in data.get("filters", {}).items():
        example = "<br>".join(
            f'{_e(x["question"])} <span class="muted">({_e(x["why"])})</span>'
            for x in entry.get("examples", [])[:3]
        )
        filter_rows.append(
            [_e(name), _e(entry.get("count", 0)), example or '<span class="muted">none</span>']
        )
    parts.append(_table(["filter", "left out", "examples"], filter_rows, numeric={1}))
    qrels = data.get("qrels", {})
    parts.append("<h2>Qrels</h2>")
    origins = qrels.get("relevant_by_origin", {})
    parts.append(
        f"<p>{_e(qrels.get('grades', 0))} grades; relevant ones by origin: "
        + ", ".join(f"{_e(k)} {_e(v)}" for k, v in origins.items())
        + ".</p>"
    )
    pool = data.get("pool")
    if pool:
        parts.append(
            f"<p>Pool: top {_e(pool.get('depth'))} of {_e(', '.join(pool.get('runs', [])))}; {_e(pool.get('pairs'))} "
            f"pairs, {_e(pool.get('graded'))} graded by the judge, {_e(pool.get('relevant_added'))} relevant chunks "
            f"added, {_e(pool.get('failures'))} failed"
            + (
                f"; {_e(pool.get('empty_chunks_skipped'))} empty chunks skipped, as in drafting"
                if pool.get("empty_chunks_skipped")
                else ""
            )
            + ".</p>"
        )
    review = data.get("review")
    if review:
        parts.append("<h2>Review by people</h2>")
        parts.append(_table(["", "value"], [[_e(k), _e(v)] for k, v in review.items()], numeric={1}))
    parts.append("<h2>Questions</h2>")
    shown = list(items)[:MAX_QUESTIONS]
    if len(items) > MAX_QUESTIONS:
        parts.append(
            f'<p class="muted">The first {MAX_QUESTIONS} of {len(items)}; all are in questions.jsonl.</p>'
        )
    rows = [
        [
            f"<code>{_e(i.id)}</code>",
            _e(i.kind),
            _e(i.language),
            _e(i.question),
            _e(i.reference),
            "<br>".join(f"<code>{_e(d)}</code> {_e(_clip(sources[d]))}" for d in i.source_ids if d in sources)
            or '<span class="muted">-</span>',
            "<br>".join(
                f"<code>{_e(d)}</code> {_e(g)}"
                for d, g in zip(i.relevant_ids or [], i.relevant_grades or [], strict=True)
            )
            or '<span class="muted">none (unanswerable)</span>',
        ]
        for i in shown
    ]
    parts.append(
        _table(
            ["id", "kind", "lang", "question", "reference", "source chunk", "qrels (chunk grade)"],
            rows,
            cls="q",
        )
    )
    parts.append("</main></body></html>\n")
    return "".join(parts)


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SOURCE_CHARS else flat[:SOURCE_CHARS].rsplit(" ", 1)[0] + " ..."
