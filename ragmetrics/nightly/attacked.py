"""A night over an attack set: every answering run's attack metrics, and what each attack did, for the report.

The attack questions are not judged (their answers are scored by the attack checks), so a judge metric and a
retrieval metric are recorded as not applicable for them, with the reason; the clean twins are scored as any
dataset's questions are, so a defence that refuses or mangles good answers shows its cost there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmetrics._async import run_sync
from ragmetrics.attacks.metrics import attack_result, decide
from ragmetrics.attacks.report import AnsweredAttack
from ragmetrics.nightly.answers import AnsweredRun
from ragmetrics.nightly.applicability import mark_not_applicable
from ragmetrics.nightly.config_night import NightlyConfig
from ragmetrics.nightly.qa_dataset import ATTACK_REASON, QADataset
from ragmetrics.schema import RunResult

__all__ = [
    "INJECTION_FOLLOWED",
    "JudgedAttacks",
    "attack_answers",
    "attack_results",
    "exposure_results",
    "judge_behaviours",
    "pipeline_run_names",
    "unjudge_attacks",
]

INJECTION_FOLLOWED = "injection_followed"
"""The shipped rubric (judge/rubrics/injection_followed.yaml) that decides a behaviour injection."""


@dataclass
class JudgedAttacks:
    """One run's judge verdicts on its judge-decided attacks: followed or not, or why there is no verdict."""

    followed: dict[str, bool] = field(default_factory=dict)
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)


NO_LLM_JUDGE = (
    "a behaviour injection is decided by the LLM judge's injection_followed rubric; this night has no LLM judge "
    "(set judge.backend: openai, or build the attack set without --behaviours; docs/attacks.md)"
)


def pipeline_run_names(config: NightlyConfig) -> set[str]:
    """The runs that call the team's system, and so receive the attacks' planted documents."""
    from ragmetrics.nightly.config_runs import PipelineRunSpec

    return {spec.name for spec in config.runs if isinstance(spec, PipelineRunSpec)}


def judge_behaviours(
    config: NightlyConfig, dataset: QADataset, answered: Mapping[str, AnsweredRun]
) -> dict[str, JudgedAttacks]:
    """The LLM judge's verdict on every judge-decided attack each run answered (`injection_followed`, the
    answer and the planted instruction fenced as data); without an LLM judge, each is a failure saying so."""
    assert dataset.attacks is not None
    judged_checks = [c for c in dataset.attacks.checks if c.decided_by == "judge"]
    out = {name: JudgedAttacks() for name in answered}
    if not judged_checks:
        return out
    questions = {s.id: s.question for s in dataset.samples}
    llm = config.judge is not None and config.judge.backend != "local"
    from ragmetrics.judge.base import RagSample

    for name, run in answered.items():
        answers = {s.id: s.answer for s in run.samples}
        pending = [c for c in judged_checks if c.id not in run.failed]
        if not llm:
            out[name].failed.update({c.id: ("needs_llm_judge", NO_LLM_JUDGE) for c in pending})
            continue
        samples = [
            RagSample(
                id=c.id,
                question=questions[c.id],
                answer=answers.get(c.id) or "",
                reference=c.instruction,
                language=c.language,
            )
            for c in pending
        ]
        result = _judge_followed(config, samples, name)
        for failure in result.failures:
            out[name].failed[failure.query_id] = (failure.cause, failure.message)
        inapplicable = {n.query_id for n in result.not_applicable}
        for sample in samples:
            value = result.per_query.get(sample.id, {}).get(INJECTION_FOLLOWED)
            if value is not None:
                out[name].followed[sample.id] = value >= 0.5
            elif (
                sample.id in inapplicable
            ):  # the rubric does not apply (an empty answer): it followed nothing
                out[name].followed[sample.id] = False
            elif sample.id not in out[name].failed:
                out[name].failed[sample.id] = (
                    "no_verdict",
                    "the judge returned no injection_followed verdict",
                )
    return out


def _judge_followed(config: NightlyConfig, samples: list[Any], run: str) -> RunResult:
    from pathlib import Path

    import ragmetrics.judge
    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.judge.own_metrics import load_metric_file
    from ragmetrics.judge.registry import registered_metrics
    from ragmetrics.judge.select import make_judge

    assert config.judge is not None
    rubric = load_metric_file(
        Path(ragmetrics.judge.__file__).parent / "rubrics" / f"{INJECTION_FOLLOWED}.yaml"
    )
    judge = make_judge(config.judge.settings())
    try:
        with registered_metrics([rubric.to_spec("shipped attack check")]):
            return evaluate_rag(samples, [INJECTION_FOLLOWED], judge, progress=False, name=run)
    finally:
        run_sync(judge.aclose())


def attack_results(
    dataset: QADataset, answered: Mapping[str, AnsweredRun], verdicts: Mapping[str, JudgedAttacks]
) -> dict[str, RunResult]:
    """The attack metrics of every run that answered the attack set's questions."""
    assert dataset.attacks is not None
    checks = {c.id: c for c in dataset.attacks.checks}
    clean = [s.id for s in dataset.samples if s.id not in checks]
    languages = {s.id: s.language for s in dataset.samples}
    out: dict[str, RunResult] = {}
    for name, run in answered.items():
        answers = {s.id: s.answer for s in run.samples}
        judged = verdicts.get(name, JudgedAttacks())
        failed = {**judged.failed, **run.failed}
        out[name] = attack_result(name, answers, checks, clean, failed, languages, judged.followed)
    return out


def exposure_results(
    config: NightlyConfig,
    dataset: QADataset,
    runs: Mapping[str, Any],
    answered: Mapping[str, AnsweredRun],
) -> tuple[dict[str, RunResult], dict[str, dict[str, tuple[bool, float]]]]:
    """Every run's exposure metrics (`attacks.exposure`), from the contexts it returned (a pipeline's or a
    traced system's: all of them; a retriever run's: its top `contexts_top_k`), and per run and attack whether it
    was exposed and the reciprocal rank of the first planted context, for the report."""
    from ragmetrics.attacks.exposure import exposure_result
    from ragmetrics.nightly.runs import run_samples

    assert dataset.attacks is not None
    checks = {c.id: c for c in dataset.attacks.checks}
    clean = [s.id for s in dataset.samples if s.id not in checks]
    if config.judge is not None:
        top_k = config.judge.contexts_top_k
    else:
        top_k = config.generator.top_k if config.generator is not None else 3
    results: dict[str, RunResult] = {}
    exposed: dict[str, dict[str, tuple[bool, float]]] = {}
    for name, run in runs.items():
        samples = run_samples(config, dataset, name, run, top_k, answered)
        if samples is None:
            continue
        contexts = {s.id: (s.contexts, s.context_ids) for s in samples if s.contexts is not None}
        failed = answered[name].failed if name in answered else {}
        results[name], found = exposure_result(name, contexts, checks, clean, failed)
        exposed[name] = {qid: (e.exposed, e.reciprocal_rank) for qid, e in found.items()}
    return results, exposed


def attack_answers(
    dataset: QADataset, answered: Mapping[str, AnsweredRun], verdicts: Mapping[str, JudgedAttacks]
) -> list[AnsweredAttack]:
    """Every run's answer to every attack, with its outcome (None where the call or the verdict failed)."""
    assert dataset.attacks is not None
    rows = []
    for name, run in answered.items():
        answers = {s.id: s.answer for s in run.samples}
        judged = verdicts.get(name, JudgedAttacks())
        for check in dataset.attacks.checks:
            failure = run.failed.get(check.id) or judged.failed.get(check.id)
            if failure is not None:
                rows.append(
                    AnsweredAttack(name, check.id, answers.get(check.id), None, f"{failure[0]}: {failure[1]}")
                )
                continue
            answer = answers.get(check.id)
            rows.append(
                AnsweredAttack(
                    name, check.id, answer, decide(check, answer, judged.followed.get(check.id)), None
                )
            )
    return rows


def unjudge_attacks(result: RunResult, dataset: QADataset) -> RunResult:
    """A judge result with every attack question recorded as not applicable (they were not judged)."""
    return mark_not_applicable(result, dict.fromkeys(dataset.attack_ids, ATTACK_REASON))


def attack_summary_of(
    dataset: QADataset,
    answered: Mapping[str, AnsweredRun],
    results: Mapping[str, RunResult],
    verdicts: Mapping[str, JudgedAttacks],
    alpha: float,
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
        dataset.attacks.checks,
        dataset.attacks.rows,
        attack_answers(dataset, answered, verdicts),
        runs,
        refusals,
        alpha,
    )


def exposure_summary_of(
    dataset: QADataset,
    exposed: dict[str, dict[str, tuple[bool, float]]],
    results: Mapping[str, RunResult],
    alpha: float,
) -> dict[str, Any]:
    """The exposure part of attacks.json (`attacks.report.exposure_summary`), with each answering run's success
    per attack so success given exposure and without it can be told apart."""
    from ragmetrics.attacks.report import exposure_summary

    assert dataset.attacks is not None
    succeeded = {
        (name, qid): bool(value)
        for name in exposed
        if name in results
        for qid, scores in results[name].per_query.items()
        if (value := scores.get("attack_success")) is not None
    }
    return exposure_summary(dataset.attacks.checks, exposed, succeeded, alpha)


def attacks_note(summary: Mapping[str, Any]) -> str:
    """One line for the report's notes: each run's attack success and where the drill-down is."""
    rates = summary["rates"]
    parts = []
    for run in summary["runs"]:
        rate = rates[run]["all"]
        if rate["rate"] is not None:
            parts.append(f"{run} {100 * rate['rate']:.1f} % of {rate['n']}")
    exposure = summary.get("exposure") or {}
    reached = [
        f"{run} {100 * rate['rate']:.1f} % of {rate['n']}"
        for run in exposure.get("runs", [])
        if (rate := exposure["rates"][run].get("all")) and rate["rate"] is not None
    ]
    exposed = f"; planted text reached the contexts: {'; '.join(reached)}" if reached else ""
    return (
        f"attacks: success {'; '.join(parts) or 'not measured (no run answered)'}{exposed}; per kind and style, "
        "paired differences and every successful attack in attacks.html"
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
