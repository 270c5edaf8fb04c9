"""The trust figures of a report (agreement with people, PPI-corrected means, judge noise) as text lines and
an HTML section; both read only the schema, so every format shows the same numbers."""

from __future__ import annotations

import html
from typing import Any

from ragmetrics.schema import AGREEMENT_STATISTICS, Interval, Report

__all__ = ["pairwise_lines", "trust_html", "trust_lines"]


def _ci(interval: Interval | None, digits: int = 3) -> str:
    if interval is None or interval.estimate is None:
        return "-"
    if interval.low is None or interval.high is None:
        return f"{interval.estimate:.{digits}f}"
    return f"{interval.estimate:.{digits}f} [{interval.low:.{digits}f}, {interval.high:.{digits}f}]"


def trust_lines(report: Report) -> list[str]:
    """Plain-text lines for the terminal (empty when the report holds no trust figures)."""
    lines: list[str] = []
    for run in report.runs:
        trust = run.trust
        if trust is None:
            continue
        for agree in trust.agreement:
            lines.append(
                f"{run.name} / {agree.metric}: judge vs people on {agree.n_labeled} labelled samples "
                f"({agree.label_kind}): balanced accuracy {_ci(agree.balanced_accuracy)}, "
                + (f"kappa {_ci(agree.kappa)}, " if agree.kappa is not None else "")
                + f"Spearman {_ci(agree.spearman)}, bias (judge - people) {_ci(agree.bias)}"
            )
            if agree.people is not None:
                lines.append(f"{run.name} / {agree.metric}: {agree.people.text}")
                lines += [f"{run.name} / {agree.metric}: the people's {AGREEMENT_STATISTICS.get(name, name)} is undefined: {why}"
                          for name, why in agree.people.undefined.items()]  # fmt: skip
        for est in trust.ppi:
            lines.append(
                f"{run.name} / {est.metric}: mean ({est.confidence:.0%} CI): judge only {_ci(est.judge_only)}; "
                f"labels only {_ci(est.classical)}; PPI++ {_ci(est.ppi_plus)} "
                f"({est.n_labeled} labelled + {est.n_unlabeled} judged only)"
            )
        for noise in trust.noise:
            icc = f"{noise.icc:.2f}" if noise.icc is not None else "-"
            lines.append(
                f"{run.name} / {noise.metric}: judge noise over {noise.repeats} repeats: flip rate "
                f"{noise.flip_rate:.1%}, mean spread {noise.mean_spread:.3f}, ICC {icc}; mean CI "
                f"{_ci(noise.ci_samples)} over samples, {_ci(noise.ci_with_noise)} with judge noise"
            )
    lines.extend(pairwise_lines(report))
    for pair in report.metadata.ppi_pairs:
        lines.append(
            f"{pair.candidate} - {pair.baseline} / {pair.metric}: PPI++ difference {_ci(pair.estimate.ppi_plus)} "
            f"(judge only {_ci(pair.estimate.judge_only)})"
        )
    return lines


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}" if value >= 0.001 else f"{value:.1e}"


def pairwise_lines(report: Report) -> list[str]:
    """One line per pair and source of side-by-side preferences, the metric's paired difference beside it."""
    out = []
    for s in report.metadata.pairwise:
        who = "people" if s.source == "people" else "pairwise judge (both orders)"
        beside = ("" if s.metric is None or s.metric_diff is None
                  else f"; {s.metric} {s.b} - {s.a} {s.metric_diff:+.3f} (p {_p(s.metric_p)})")  # fmt: skip
        bias = ""
        if s.position_left is not None:
            bias = (f"; left side won {s.position_left.estimate:.0%} of untied judgements"
                    + (" (position-biased)" if s.position_biased else ""))  # fmt: skip
        agree = ""
        if s.agreement_with_people is not None:
            agree = f"; agrees with people on {_ci(s.agreement_with_people, 2)} of questions"
        out.append(
            f"{s.b} vs {s.a}, {who}: {s.wins_b} wins, {s.wins_a} losses, {s.ties} ties on {s.questions} questions "
            f"(sign test p {_p(s.p_value)}; Bradley-Terry log-odds {_ci(s.log_odds_b, 2)}): {s.verdict}"
            + beside + bias + agree
        )
    return out


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def trust_html(report: Report) -> str:
    """The report's 'How far to trust the judge' section (empty string when there is nothing to show)."""
    rows_agree, rows_ppi, rows_noise, spreads, rows_people = [], [], [], [], []
    for run in report.runs:
        trust = run.trust
        if trust is None:
            continue
        for a in trust.agreement:
            rows_agree.append(
                f"<tr><td class='l'>{_e(run.name)}</td><td class='l'>{_e(a.metric)}</td><td>{a.n_labeled}</td>"
                f"<td>{_e(_ci(a.accuracy))}</td><td>{_e(_ci(a.balanced_accuracy))}</td><td>{_e(_ci(a.kappa))}</td>"
                f"<td>{_e(_ci(a.spearman))}</td><td>{_e(_ci(a.kendall))}</td><td>{_e(_ci(a.bias))}</td></tr>"
            )
        for a in trust.agreement:
            c = a.people
            if c is None:
                continue
            shown = ", ".join(c.disagreements[:10]) + (" ..." if len(c.disagreements) > 10 else "")

            def stat(value: Any, name: str, c: Any = c) -> str:
                """The interval, or 'undefined' with why (a title the page shows on hover)."""
                if value is None and name in c.undefined:
                    return f"<span title='{_e(c.undefined[name])}'>undefined</span>"
                return _e(_ci(value))

            rows_people.append(
                f"<tr><td class='l'>{_e(run.name)}</td><td class='l'>{_e(a.metric)}</td><td>{c.items}</td>"
                f"<td class='l'>{_e(', '.join(c.labellers))}</td><td>{_e(c.level)}</td>"
                f"<td>{stat(c.percent, 'percent')}</td><td>{stat(c.cohen_kappa, 'cohen')}</td>"
                f"<td>{stat(c.fleiss_kappa, 'fleiss')}</td><td>{stat(c.alpha, 'alpha')}</td><td>{stat(c.people_alpha, 'alpha')}</td><td>{_e(_ci(c.judge_alpha))}</td>"
                f"<td class='l'>{_e(c.standing)}</td><td class='l'>{len(c.disagreements)}: {_e(shown)}</td></tr>"
            )
        for p in trust.ppi:
            rows_ppi.append(
                f"<tr><td class='l'>{_e(run.name)}</td><td class='l'>{_e(p.metric)}</td><td>{p.n_labeled}</td>"
                f"<td>{p.n_unlabeled}</td><td>{_e(_ci(p.judge_only))}</td><td>{_e(_ci(p.classical))}</td>"
                f"<td>{_e(_ci(p.ppi))}</td><td>{_e(_ci(p.ppi_plus))}</td></tr>"
            )
        for n in trust.noise:
            icc = f"{n.icc:.2f}" if n.icc is not None else "-"
            rows_noise.append(
                f"<tr><td class='l'>{_e(run.name)}</td><td class='l'>{_e(n.metric)}</td><td>{n.repeats}</td>"
                f"<td>{n.flip_rate:.1%}</td><td>{n.mean_spread:.3f}</td><td>{icc}</td>"
                f"<td>{_e(_ci(n.ci_samples))}</td><td>{_e(_ci(n.ci_with_noise))}</td></tr>"
            )
            worst = sorted(n.spread.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
            bars = "".join(
                f"<tr><td class='l'>{_e(q)}</td><td><span class='bar' style='display:inline-block;height:0.7em;"
                f"background:#c96;width:{min(100.0, 200 * s):.0f}px'></span> {s:.3f}</td></tr>"
                for q, s in worst
            )
            spreads.append(
                f"<details><summary>{_e(run.name)} / {_e(n.metric)}: per-sample spread (largest 20 of "
                f"{len(n.spread)})</summary><table><tr><th class='l'>sample</th><th>std over repeats</th></tr>"
                f"{bars}</table></details>"
            )
    rows_pairwise = [
        f"<tr><td class='l'>{_e(s.b)} vs {_e(s.a)}</td><td class='l'>{_e(s.source)}</td><td>{s.questions}</td>"
        f"<td>{s.wins_b}/{s.ties}/{s.wins_a}</td><td>{_e(_ci(s.share_b))}</td><td>{_e(_p(s.p_value))}</td>"
        f"<td>{_e(_ci(s.log_odds_b))}</td><td>{_e(_ci(s.position_left))}{' (biased)' if s.position_biased else ''}</td>"
        f"<td>{_e(_ci(s.agreement_with_people))}</td>"
        f"<td>{'-' if s.metric_diff is None else _e(f'{s.metric} {s.metric_diff:+.3f} (p {_p(s.metric_p)})')}</td>"
        f"<td class='l'>{_e(s.verdict)}</td></tr>"
        for s in report.metadata.pairwise
    ]
    if not (rows_agree or rows_ppi or rows_noise or rows_pairwise):
        return ""
    parts = ["<h2>How far to trust the judge</h2>"]
    if rows_agree:
        parts.append(
            "<h3>Agreement with human labels</h3><div class='scroll'><table><tr><th class='l'>run</th>"
            "<th class='l'>metric</th><th>n</th><th>accuracy</th><th>balanced acc.</th><th>kappa</th>"
            "<th>Spearman</th><th>Kendall</th><th>bias</th></tr>" + "".join(rows_agree) + "</table></div>"
        )
    if rows_pairwise:
        parts.append(
            "<h3>Side by side: which answer is better</h3><p>Each question shown with both runs' answers, the "
            "order randomised (people) or asked both ways (the judge: an answer preferred only when shown first "
            "counts as a tie). Sign test over the untied questions; Bradley-Terry log-odds of b beating a with "
            "a bootstrap interval; left wins: position bias.</p><div class='scroll'><table><tr>"
            "<th class='l'>pair</th><th class='l'>who</th><th>questions</th><th>b wins/ties/a wins</th>"
            "<th>b's share</th><th>p</th><th>log-odds b</th><th>left wins</th><th>agrees with people</th>"
            "<th>the metric</th><th class='l'>verdict</th></tr>" + "".join(rows_pairwise) + "</table></div>"
        )
    if rows_people:
        parts.append(
            "<h3>People with each other: the judge's ceiling</h3><p>On the samples two or more people labelled: "
            "their agreement with each other, and the judge's with them (mean pairwise Krippendorff alpha, "
            "same bootstrap resamples). A judge within the people's own disagreement is as good as people get."
            "</p><div class='scroll'><table><tr><th class='l'>run</th><th class='l'>metric</th><th>items</th>"
            "<th class='l'>labellers</th><th>level</th><th>% agree</th><th>Cohen</th><th>Fleiss</th>"
            "<th>alpha</th><th>people vs each other</th><th>judge vs people</th><th class='l'>judge stands</th>"
            "<th class='l'>disagreements</th></tr>" + "".join(rows_people) + "</table></div>"
        )
    if rows_ppi:
        parts.append(
            "<h3>Means corrected by the labels (PPI)</h3><div class='scroll'><table><tr><th class='l'>run</th>"
            "<th class='l'>metric</th><th>labelled</th><th>judged only</th><th>judge only</th><th>labels only</th>"
            "<th>PPI</th><th>PPI++</th></tr>" + "".join(rows_ppi) + "</table></div>"
        )
    if rows_noise:
        parts.append(
            "<h3>The judge's own noise (repeats)</h3><div class='scroll'><table><tr><th class='l'>run</th>"
            "<th class='l'>metric</th><th>repeats</th><th>flip rate</th><th>mean spread</th><th>ICC</th>"
            "<th>CI over samples</th><th>CI with judge noise</th></tr>"
            + "".join(rows_noise)
            + "</table></div>"
        )
        parts.extend(spreads)
    return "\n".join(parts)
