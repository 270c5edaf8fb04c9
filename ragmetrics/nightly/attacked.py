"""A night over an attack set: every answering run's attack metrics, and what each attack did, for the report.

The attack questions are not judged (their answers are scored by the attack checks), so a judge metric and a
retrieval metric are recorded as not applicable for them, with the reason; the clean twins are scored as any
dataset's questions are, so a defence that refuses or mangles good answers shows its cost there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmetrics.attacks.metrics import attack_result, decide
from ragmetrics.attacks.report import AnsweredAttack
from ragmetrics.nightly.answers import AnsweredRun
from ragmetrics.nightly.applicability import mark_not_applicable
from ragmetrics.nightly.dataset import ATTACK_REASON, QADataset
from ragmetrics.schema import RunResult

__all__ = ["attack_answers", "attack_results", "unjudge_attacks"]


def attack_results(dataset: QADataset, answered: Mapping[str, AnsweredRun]) -> dict[str, RunResult]:
    """The attack metrics of every run that answered the attack set's questions."""
    assert dataset.attacks is not None
    checks = {c.id: c for c in dataset.attacks.checks}
    clean = [s.id for s in dataset.samples if s.id not in checks]
    languages = {s.id: s.language for s in dataset.samples}
    out: dict[str, RunResult] = {}
    for name, run in answered.items():
        answers = {s.id: s.answer for s in run.samples}
        failed = dict(run.failed)
        out[name] = attack_result(name, answers, checks, clean, failed, languages)
    return out


def attack_answers(dataset: QADataset, answered: Mapping[str, AnsweredRun]) -> list[AnsweredAttack]:
    """Every run's answer to every attack, with its outcome (None where the call failed)."""
    assert dataset.attacks is not None
    rows = []
    for name, run in answered.items():
        answers = {s.id: s.answer for s in run.samples}
        for check in dataset.attacks.checks:
            failure = run.failed.get(check.id)
            if failure is not None:
                rows.append(AnsweredAttack(name, check.id, None, None, f"{failure[0]}: {failure[1]}"))
                continue
            answer = answers.get(check.id)
            rows.append(AnsweredAttack(name, check.id, answer, decide(check, answer), None))
    return rows


def unjudge_attacks(result: RunResult, dataset: QADataset) -> RunResult:
    """A judge result with every attack question recorded as not applicable (they were not judged)."""
    return mark_not_applicable(result, dict.fromkeys(dataset.attack_ids, ATTACK_REASON))


def attack_summary_of(
    dataset: QADataset, answered: Mapping[str, AnsweredRun], results: Mapping[str, RunResult], alpha: float
) -> dict[str, Any]:
    """The attacks.json document of the night (`attacks.report.attack_summary`)."""
    from ragmetrics.attacks.report import attack_summary

    assert dataset.attacks is not None
    runs = list(answered)
    refusals: dict[str, tuple[int, int]] = {}
    for name in runs:
        values = [v for v in results[name].scores("clean_refusal") if v is not None]
        refusals[name] = (int(sum(values)), len(values))
    return attack_summary(
        dataset.attacks.checks, dataset.attacks.rows, attack_answers(dataset, answered), runs, refusals, alpha
    )


def attacks_note(summary: Mapping[str, Any]) -> str:
    """One line for the report's notes: each run's attack success and where the drill-down is."""
    rates = summary["rates"]
    parts = []
    for run in summary["runs"]:
        rate = rates[run]["all"]
        if rate["rate"] is not None:
            parts.append(f"{run} {100 * rate['rate']:.1f} % of {rate['n']}")
    return (
        f"attacks: success {'; '.join(parts) or 'not measured (no run answered)'}; per kind and style, paired "
        "differences and every successful attack in attacks.html"
    )


def attack_artifacts(summary: Mapping[str, Any], title: str) -> dict[str, str]:
    """attacks.json, attacks.html and attacks.md, by file name."""
    import json

    from ragmetrics.attacks.page import attacks_html, attacks_markdown

    return {
        "attacks.json": json.dumps(summary, indent=1, ensure_ascii=False) + "\n",
        "attacks.html": attacks_html(dict(summary), title),
        "attacks.md": attacks_markdown(dict(summary), title),
    }
