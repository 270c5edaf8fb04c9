"""Before anyone trusts a rubric metric: its labelled samples through the configured judge, and how often the
judge's rating is the person's (`ragmetrics check-metric FILE`).

The items are the rubric's `labelled` samples and those of its `labelled_file` (never shown to the judge),
and its anchor examples, each judged with that anchor left out of the prompt (an anchor judged with itself
among the examples would be answered from the example). A scale is compared on the rating the judge wrote
(exact agreement and Cohen's kappa; quadratic-weighted kappa and agreement within one level for ordinal
scales); a checklist check by check. An item the judge could not rate is listed with its cause and left out
of the agreement, never counted as a disagreement or an agreement.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmetrics._jsonl import numbered_jsonl
from ragmetrics.errors import ConfigError, InputError, JudgeError, NotApplicable
from ragmetrics.judge.backends.llm import LLMJudge
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.rubric import LabelledItem, OrdinalScale, RubricMetric
from ragmetrics.trust.agreement import cohen_kappa

__all__ = ["CheckedItem", "MetricCheck", "check_metric", "labelled_items"]


@dataclass(frozen=True)
class CheckedItem:
    """One labelled sample: where it came from, the person's label, the judge's, and the judge's reason."""

    source: str
    human: Any
    judge: Any | None
    value: float | None
    reason: str
    failure: str | None = None


@dataclass
class MetricCheck:
    """The judge's agreement with the labels, with the items it rests on."""

    metric: str
    kind: str
    items: list[CheckedItem]
    agreement: dict[str, float] = field(default_factory=dict)
    per_check: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def rated(self) -> list[CheckedItem]:
        return [i for i in self.items if i.failure is None]

    def summary(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "kind": self.kind,
            "items": len(self.items),
            "rated": len(self.rated),
            "agreement": self.agreement,
            "per_check": self.per_check,
            "disagreements": [i.__dict__ for i in self.rated if i.human != i.judge],
            "failures": [i.__dict__ for i in self.items if i.failure is not None],
        }


def labelled_items(rubric: RubricMetric) -> list[tuple[str, LabelledItem]]:
    """The rubric's labelled samples: inline ones, then its labelled file's, each checked like an anchor."""
    items = [(f"labelled[{i}]", item) for i, item in enumerate(rubric.labelled)]
    if rubric.labelled_file is None:
        return items
    path = rubric.labelled_file
    if not path.is_file():
        raise ConfigError(f"rubric {rubric.name!r}: labelled_file {path} does not exist")
    for line_no, data in numbered_jsonl(path):
        try:
            item = LabelledItem.model_validate(data)
            rubric.check_item(item, "item")
        except ValueError as exc:  # pydantic's ValidationError included
            raise InputError(f"not a labelled item for rubric {rubric.name!r}: {exc}", source=str(path),
                             line=line_no) from None  # fmt: skip
        items.append((f"{path.name}:{line_no}", item))
    return items


def _sample(rubric: RubricMetric, item: LabelledItem, source: str) -> RagSample:
    inputs = item.inputs
    columns = {k: v for k, v in inputs.items() if k in rubric.columns()}
    question = inputs.get("question")
    return RagSample(
        id=source,
        question=question if isinstance(question, str) and question.strip() else "(not read by this rubric)",
        answer=_text(inputs.get("answer")),
        reference=_text(inputs.get("reference")),
        contexts=list(inputs["contexts"]) if isinstance(inputs.get("contexts"), list) else None,
        extra=columns or None,
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _human(rubric: RubricMetric, item: LabelledItem) -> Any:
    if rubric.scale is not None:
        assert item.rating is not None
        return rubric.scale.label(rubric.rating_of(item.rating))
    return dict(item.checks or {})


def _judged(rubric: RubricMetric, verdicts: list[dict[str, Any]]) -> Any:
    if rubric.scale is not None:
        return verdicts[0]["rating"]
    return {v["check"]: v["verdict"] for v in verdicts}


async def check_metric(rubric: RubricMetric, judge: LLMJudge) -> MetricCheck:
    """Judge every labelled item and anchor (left out of its own prompt) and measure agreement."""
    todo: list[tuple[str, LabelledItem, int | None]] = [(s, item, None) for s, item in labelled_items(rubric)]
    todo += [(f"examples[{i}] (left out of the prompt)", a, i) for i, a in enumerate(rubric.examples)]
    if not todo:
        raise ConfigError(
            f"rubric {rubric.name!r} has no labelled samples: add 'labelled' items or a 'labelled_file' "
            "(or anchor 'examples') to check it against"
        )
    checked: list[CheckedItem] = []
    for source, item, leave_out in todo:
        human = _human(rubric, item)
        prompt = judge.rubric_prompt(rubric, leave_out=leave_out)
        try:
            outcome = await judge.rubric_outcome(rubric, _sample(rubric, item, source), prompt)
        except (JudgeError, NotApplicable) as exc:
            cause = getattr(exc, "cause", "not_applicable")
            checked.append(CheckedItem(source, human, None, None, "", failure=f"{cause}: {exc}"))
            continue
        detail = outcome.detail
        checked.append(
            CheckedItem(source, human, _judged(rubric, detail.verdicts), outcome.value, detail.reason or "")
        )
    result = MetricCheck(rubric.name, _kind(rubric), checked)
    _measure(rubric, result)
    return result


def _kind(rubric: RubricMetric) -> str:
    if rubric.scale is not None:
        return rubric.scale.type
    assert rubric.checklist is not None
    return f"checklist ({rubric.checklist.combine})"


def _measure(rubric: RubricMetric, result: MetricCheck) -> None:
    rated = result.rated
    if not rated:
        return
    if rubric.scale is not None:
        labels = [rubric.scale.label(r) for r in rubric.scale.ratings]
        humans: list[Any] = [i.human for i in rated]
        judged: list[Any] = [i.judge for i in rated]
        result.agreement["exact"] = sum(h == j for h, j in zip(humans, judged, strict=True)) / len(rated)
        if isinstance(rubric.scale, OrdinalScale):
            position = {label: n for n, label in enumerate(labels)}
            near = sum(abs(position[h] - position[j]) <= 1 for h, j in zip(humans, judged, strict=True))
            result.agreement["within_one_level"] = near / len(rated)
            result.agreement["kappa_quadratic"] = cohen_kappa(humans, judged, labels, weights="quadratic")
        else:
            result.agreement["kappa"] = cohen_kappa(humans, judged, labels)
        return
    assert rubric.checklist is not None
    decisions = 0
    agreed = 0
    for check in rubric.checklist.checks:
        humans_c = [bool(i.human[check.id]) for i in rated]
        judged_c = [bool((i.judge or {})[check.id]) for i in rated]
        same = sum(h == j for h, j in zip(humans_c, judged_c, strict=True))
        decisions += len(rated)
        agreed += same
        result.per_check[check.id] = {
            "agreement": same / len(rated),
            "kappa": cohen_kappa(humans_c, judged_c, [False, True]),
        }
    result.agreement["check_decisions"] = agreed / decisions
    result.agreement["all_checks_same"] = sum(i.human == i.judge for i in rated) / len(rated)


def format_check(result: MetricCheck, rubric: RubricMetric, judge_line: str) -> str:
    """The check as the terminal shows it: what was judged, agreement, then each disagreement and failure."""
    lines = [
        f"rubric {rubric.name!r} ({result.kind}) judged by {judge_line}",
        f"items: {len(result.items)} ({len(result.rated)} rated, {len(result.items) - len(result.rated)} failed)",
    ]
    if result.agreement:
        names = {
            "exact": "exact agreement",
            "within_one_level": "within one level",
            "kappa": "Cohen's kappa",
            "kappa_quadratic": "quadratic-weighted kappa",
            "check_decisions": "check decisions agreed",
            "all_checks_same": "items with every check agreed",
        }
        lines.append("agreement: " + ", ".join(f"{names[k]} {v:.3f}" for k, v in result.agreement.items()))
    for check_id, figures in result.per_check.items():
        lines.append(
            f"  check {check_id}: agreement {figures['agreement']:.3f}, kappa {figures['kappa']:.3f}"
        )
    disagreements = [i for i in result.rated if i.human != i.judge]
    if disagreements:
        lines.append(f"disagreements ({len(disagreements)}):")
        for item in disagreements:
            lines.append(
                f"  {item.source}: person {_show(item.human)}, judge {_show(item.judge)}: {item.reason[:160]}"
            )
    for item in result.items:
        if item.failure is not None:
            lines.append(f"  {item.source}: not rated: {item.failure[:200]}")
    if len(result.rated) < 20:
        lines.append(
            f"note: {len(result.rated)} rated items are few; agreement figures from under 20 items move a lot "
            "with each item (add labelled samples before relying on it)"
        )
    return "\n".join(lines)


def _show(label: Any) -> str:
    if isinstance(label, dict):
        return "{" + ", ".join(f"{k}: {'yes' if v else 'no'}" for k, v in label.items()) + "}"
    return json.dumps(label, ensure_ascii=False)


def write_check(result: MetricCheck, path: Path) -> None:
    path.write_text(json.dumps(result.summary(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
