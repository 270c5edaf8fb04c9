"""The drill-down's claim matrix: which claim, which chunk, which verdict, for one run's claim diagnostics.

The eleven diagnostics of a sample are read from one claim-by-chunk verdict, so the page shows that matrix
once per run (rows: the answer's claims, then the reference's; a column per retrieved chunk, its header
saying whether the chunk counted as relevant and what decided it) and then every diagnostic's value on one
line, instead of eleven copies of the same verdicts.
"""

from __future__ import annotations

from ragmetrics.render.html.cells import clip, esc, num
from ragmetrics.schema import JudgeDetail

__all__ = ["claim_block"]

YES, NO = "&#10003;", "&#10007;"


def claim_block(run: str, details: dict[str, JudgeDetail], values: dict[str, float | None]) -> str:
    """The matrix of `details` (the run's claim diagnostics for one sample) and each diagnostic's value."""
    first = next(iter(details.values()))
    evidence = first.claims
    assert evidence is not None  # callers pass claim details only
    source = (
        "qrels (human judgments)" if evidence.relevance_source == "qrels" else "entailing a reference claim"
    )
    weaker = (
        " Built by the local judge: embedding similarity stands in for entailment (the weaker variant)."
        if evidence.judge == "local"
        else ""
    )
    mark = "<br><span class='rel'>relevant</span>"
    head = "".join(
        f"<th title='chunk {k + 1}: {'relevant' if rel else 'not relevant'}'>C{k + 1}{mark if rel else ''}</th>"
        for k, rel in enumerate(evidence.relevant_chunks)
    )
    rows = []
    for verdict in first.verdicts:
        side = str(verdict.get("side", ""))
        entailing = {int(k) for k in verdict.get("chunks", []) if isinstance(k, int)}
        cells = "".join(
            f"<td class='hit'>{YES}</td>" if k in entailing else "<td class='miss'>&middot;</td>"
            for k in range(evidence.chunks)
        )
        other = YES if verdict.get("verdict") is True else NO
        rows.append(
            f"<tr class='{esc(side)}'><td class='l'>{esc(side)}</td>"
            f"<td class='l'>{esc(clip(str(verdict.get('claim', '')), 160))}</td><td>{other}</td>{cells}"
            f"<td class='l'>{esc(clip(str(verdict.get('reason', '')), 200))}</td></tr>"
        )
    scores = " &middot; ".join(f"<b>{esc(metric)}</b> {num(values.get(metric))}" for metric in details)
    return (
        f"<p><b>{esc(run)} / claim diagnostics</b>{' (cached)' if first.cached else ''}: "
        f"<span class='legend'>{YES} in a cell: the chunk entails the claim; the third column: the answer "
        f"entails the reference claim, or the reference the answer claim. Relevant chunks decided by "
        f"{source}.{weaker}</span></p>"
        "<div class='scroll'><table class='verdicts claims'><tr><th class='l'>side</th><th class='l'>claim</th>"
        f"<th>in the other answer</th>{head}<th class='l'>reason</th></tr>{''.join(rows)}</table></div>"
        f"<p class='diagnostics'>{scores}<br><span class='reason'>{esc(first.reason or '')}</span></p>"
    )
