"""Rubric metrics: a team's own criterion, judged by the LLM judge on the scale or checklist the team declares.

Why declared rather than written as a prompt file: what "good" means is the team's (the refund window stated,
the tone right, the answer a category of their own), and peers force it onto a 1-5 scale, overwrite it, or
cache verdicts that outlive an edit. A rubric is data: the criterion, the sample fields (or dataset columns)
it reads, and either a scale (binary; ordinal levels with their labels and scores; categories with a score
each) or a checklist of yes/no checks combined as all, any or a weighted share. From it come:

- the prompt (`prompt()`), built from `prompts/_rubric.yaml` and the definition, numbered like every prompt,
  with the team's anchor examples as few-shot pairs (the copied-example guard applies to them);
- the verdict model, strict: a scale's rating can only be one of its levels, a checklist needs one verdict
  per check;
- the prompt's version, a hash of all it sends, so editing a rubric re-asks its verdicts and nothing else;
- the score (`outcome()`), the sampled level's score or, where the server returns log-probabilities, the
  probability-weighted score over the levels (G-Eval), with what was used said in the detail.

The definition is checked when it loads: levels and scores, anchors whose inputs and ratings fit the rubric,
reasons long enough for the copy guard to recognise them. `labelled` items (never shown to the judge) are what
`ragmetrics check-metric` measures agreement on.
"""

from __future__ import annotations

import builtins
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from ragmetrics.errors import ConfigError, JudgeError
from ragmetrics.judge import formulas
from ragmetrics.judge.custom import _Definition
from ragmetrics.judge.prompts import (
    Example,
    GeneratedPrompt,
    InputValue,
    RubricTexts,
    content_version,
)
from ragmetrics.judge.registry import JudgeMetricSpec
from ragmetrics.judge.verdicts import ChecklistVerdicts, Verdict, strict_json_schema
from ragmetrics.schema import JudgeDetail

__all__ = [
    "BinaryScale",
    "CategoricalScale",
    "Check",
    "Checklist",
    "Level",
    "OrdinalScale",
    "RubricMetric",
    "RubricProbe",
]

SAMPLE_TEXT_FIELDS = ("question", "answer", "reference", "contexts")
_COLUMN = r"^[a-z_][a-z0-9_]{0,63}$"
MIN_ANCHOR_REASON_CHARS = 12
"""An anchor's reason at least this long: shorter texts are too common for the copied-example guard."""
MAX_LEVELS = 9
"""Ordinal levels are rated by number 1..9, one token each, so log-probabilities can weight them."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Level(_Strict):
    """One level of an ordinal scale, or one category: its label, its score, what it means."""

    label: str = Field(min_length=1, max_length=60, description="the level's or category's name")
    score: float = Field(description="its value in the metric")
    description: str = Field(default="", max_length=1_000, description="what a sample at this level is like")


class BinaryScale(_Strict):
    """Yes or no: does the sample meet the criterion?"""

    type: Literal["binary"]
    yes: float = Field(default=1.0, description="the score of 'yes'")
    no: float = Field(default=0.0, description="the score of 'no'")
    weighting: Literal["probability", "sampled"] = Field(
        default="probability", description="probability: P(yes)-weighted where the server returns logprobs"
    )

    @model_validator(mode="after")
    def _distinct(self) -> BinaryScale:
        if self.yes == self.no:
            raise ValueError("yes and no must score differently")
        return self

    @property
    def ratings(self) -> tuple[str, ...]:
        return ("yes", "no")

    def scores(self) -> dict[str, float]:
        return {"yes": self.yes, "no": self.no}

    def label(self, rating: str) -> str:
        return rating

    def rating_rule(self) -> str:
        return '"yes" or "no"'

    def describe(self) -> str:
        return '- "yes": the sample meets the criterion\n- "no": it does not'


def _distinct_labels(levels: Sequence[Level], what: str) -> None:
    labels = [level.label.casefold() for level in levels]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{what} labels must be distinct (ignoring case)")


class OrdinalScale(_Strict):
    """Ordered levels, lowest first, each with a label and a score; the judge rates by level number."""

    type: Literal["ordinal"]
    levels: list[Level] = Field(min_length=2, max_length=MAX_LEVELS, description="lowest first")
    weighting: Literal["probability", "sampled"] = Field(
        default="probability",
        description="probability: the expected score over the levels where the server returns logprobs (G-Eval)",
    )

    @model_validator(mode="after")
    def _ordered(self) -> OrdinalScale:
        _distinct_labels(self.levels, "level")
        scores = [level.score for level in self.levels]
        if any(b <= a for a, b in itertools.pairwise(scores)):
            raise ValueError(f"level scores must increase from the first level to the last; got {scores}")
        return self

    @property
    def ratings(self) -> tuple[str, ...]:
        return tuple(str(n) for n in range(1, len(self.levels) + 1))

    def scores(self) -> dict[str, float]:
        return {str(n): level.score for n, level in enumerate(self.levels, start=1)}

    def label(self, rating: str) -> str:
        return self.levels[int(rating) - 1].label

    def rating_for(self, label: str) -> str:
        for n, level in enumerate(self.levels, start=1):
            if level.label.casefold() == label.casefold():
                return str(n)
        raise ValueError(f"{label!r} is not a level; levels: {', '.join(lv.label for lv in self.levels)}")

    def rating_rule(self) -> str:
        return f"the number of one level, 1 to {len(self.levels)}"

    def describe(self) -> str:
        return "\n".join(
            f"- {n} = {level.label}" + (f": {level.description}" if level.description else "")
            for n, level in enumerate(self.levels, start=1)
        )


class CategoricalScale(_Strict):
    """Unordered categories, each with a score (an answered / refused / off-topic split, say)."""

    type: Literal["categorical"]
    categories: list[Level] = Field(min_length=2, max_length=30)
    weighting: Literal["sampled"] = Field(
        default="sampled", description="categories are not ordered: the chosen category's score"
    )

    @model_validator(mode="after")
    def _distinct(self) -> CategoricalScale:
        _distinct_labels(self.categories, "category")
        return self

    @property
    def ratings(self) -> tuple[str, ...]:
        return tuple(c.label for c in self.categories)

    def scores(self) -> dict[str, float]:
        return {c.label: c.score for c in self.categories}

    def label(self, rating: str) -> str:
        return rating

    def rating_for(self, label: str) -> str:
        for c in self.categories:
            if c.label.casefold() == label.casefold():
                return c.label
        raise ValueError(f"{label!r} is not a category; categories: {', '.join(self.ratings)}")

    def rating_rule(self) -> str:
        return "the name of one category, exactly as written: " + ", ".join(
            json.dumps(r) for r in self.ratings
        )

    def describe(self) -> str:
        return "\n".join(
            f"- {json.dumps(c.label, ensure_ascii=False)}" + (f": {c.description}" if c.description else "")
            for c in self.categories
        )


Scale = Annotated[BinaryScale | OrdinalScale | CategoricalScale, Field(discriminator="type")]


class Check(_Strict):
    """One yes/no check of a checklist."""

    id: str = Field(pattern=_COLUMN, description="the check's name in results (lowercase, _)")
    check: str = Field(min_length=1, max_length=1_000, description="what the judge checks")
    weight: float = Field(default=1.0, gt=0, description="its weight in weighted_share")


class Checklist(_Strict):
    combine: Literal["all", "any", "weighted_share"] = Field(
        default="weighted_share", description="all met, any met, or the met checks' share of the weights"
    )
    checks: list[Check] = Field(min_length=1, max_length=30)

    @model_validator(mode="after")
    def _distinct(self) -> Checklist:
        ids = [c.id for c in self.checks]
        if len(set(ids)) != len(ids):
            raise ValueError("check ids must be distinct")
        return self


class LabelledItem(_Strict):
    """A sample and the label a person gave it: the rating (scale) or each check's outcome (checklist)."""

    inputs: dict[str, str | list[str]] = Field(description="a value for every field the rubric reads")
    rating: str | bool | int | None = Field(
        default=None, description="scale: the level's label, the category, or yes/no"
    )
    checks: dict[str, bool] | None = Field(default=None, description="checklist: check id -> met")


class Anchor(LabelledItem):
    """An anchor example, shown to the judge: a labelled item with the reason a good verdict would give."""

    reason: str | None = Field(default=None, description="scale: the reason for the rating")
    reasons: dict[str, str] | None = Field(default=None, description="checklist: check id -> reason")


class RubricProbe(_Strict):
    """What to read log-probabilities for: the key of the rating in the answer and its allowed values."""

    key: str
    values: tuple[str, ...]


class RubricMetric(_Definition):
    """A team's criterion judged by the LLM judge (see the module docstring)."""

    type: Literal["rubric"]
    question: str = Field(min_length=1, max_length=4_000, description="the criterion: what the judge answers")
    reads: list[str] = Field(
        default_factory=lambda: ["question", "answer"],
        min_length=1,
        description="sample fields (question, answer, reference, contexts) or dataset columns the judge sees",
    )
    scale: Scale | None = Field(default=None, description="binary, ordinal or categorical (or a checklist)")
    checklist: Checklist | None = Field(default=None, description="yes/no checks instead of a scale")
    higher_is_better: bool = True
    examples: list[Anchor] = Field(
        default_factory=list, max_length=8, description="anchor examples shown to the judge"
    )
    labelled: list[LabelledItem] = Field(
        default_factory=list, description="labelled samples for check-metric, never shown to the judge"
    )
    labelled_file: Path | None = Field(
        default=None, description="more labelled samples: a JSONL file, one item per line"
    )

    @field_validator("reads")
    @classmethod
    def _readable(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("a field is listed twice")
        for name in v:
            if name in ("context_ids", "relevant_ids", "id", "language"):
                raise ValueError(f"{name!r} is not text a judge can read; read question, answer, reference, "
                                 "contexts or a dataset column")  # fmt: skip
            if name not in SAMPLE_TEXT_FIELDS and not _is_column(name):
                raise ValueError(f"{name!r} is neither a sample field nor a column name (lowercase, _)")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> RubricMetric:
        if (self.scale is None) == (self.checklist is None):
            raise ValueError("give exactly one of 'scale' or 'checklist'")
        for i, anchor in enumerate(self.examples):
            where = f"examples[{i}]"
            self.check_item(anchor, where)
            if self.scale is not None:
                if anchor.reason is None or len(anchor.reason.strip()) < MIN_ANCHOR_REASON_CHARS:
                    raise ValueError(f"{where}: needs a reason of at least {MIN_ANCHOR_REASON_CHARS} characters "
                                     "(what a good verdict would say; it lets a copied example be caught)")  # fmt: skip
                if anchor.reasons is not None:
                    raise ValueError(f"{where}: 'reasons' is for a checklist; give 'reason'")
            else:
                assert self.checklist is not None
                ids = [c.id for c in self.checklist.checks]
                given = anchor.reasons or {}
                short = [i for i in ids if len(given.get(i, "").strip()) < MIN_ANCHOR_REASON_CHARS]
                if set(given) - set(ids) or short:
                    raise ValueError(f"{where}: 'reasons' needs a reason of at least {MIN_ANCHOR_REASON_CHARS} "
                                     f"characters for every check ({', '.join(ids)}) and no others")  # fmt: skip
                if anchor.reason is not None:
                    raise ValueError(f"{where}: 'reason' is for a scale; give 'reasons' per check")
        for i, item in enumerate(self.labelled):
            self.check_item(item, f"labelled[{i}]")
        return self

    def check_item(self, item: LabelledItem, where: str) -> None:
        """An item's inputs are exactly what the rubric reads, with text (a list for contexts), and its
        label fits the scale or the checklist."""
        missing = [f for f in self.reads if f not in item.inputs]
        extra = [f for f in item.inputs if f not in self.reads]
        if missing or extra:
            raise ValueError(f"{where}: inputs must give exactly {', '.join(self.reads)}"
                             + (f"; missing {', '.join(missing)}" if missing else "")
                             + (f"; not read by the rubric: {', '.join(extra)}" if extra else ""))  # fmt: skip
        for name, value in item.inputs.items():
            if (name == "contexts") != isinstance(value, list):
                need = "a list of texts" if name == "contexts" else "a text"
                raise ValueError(f"{where}: inputs.{name} must be {need}")
        if self.scale is not None:
            if item.rating is None or item.checks is not None:
                raise ValueError(f"{where}: a scale rubric's item needs 'rating' (and no 'checks')")
            self.rating_of(item.rating, where)
        else:
            assert self.checklist is not None
            ids = {c.id for c in self.checklist.checks}
            if item.checks is None or item.rating is not None or set(item.checks) != ids:
                raise ValueError(f"{where}: a checklist rubric's item needs 'checks' with every check id "
                                 f"({', '.join(sorted(ids))}) true or false")  # fmt: skip

    def rating_of(self, label: str | bool | int, where: str = "label") -> str:
        """The rating the judge writes for a person's label: 'yes'/'no' (also true/false), a level's number
        (its label or number), a category's name."""
        scale = self.scale
        assert scale is not None
        if isinstance(scale, BinaryScale):
            if isinstance(label, bool):
                return "yes" if label else "no"
            if isinstance(label, str) and label.casefold() in ("yes", "no"):
                return label.casefold()
            raise ValueError(f"{where}: rating must be yes or no, got {label!r}")
        ordinal = isinstance(scale, OrdinalScale)
        if (
            ordinal
            and isinstance(label, int)
            and not isinstance(label, bool)
            and 1 <= label <= len(scale.ratings)
        ):
            return str(label)
        if isinstance(label, str):
            try:
                return scale.rating_for(label)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
        kind = f"a level's label or its number 1..{len(scale.ratings)}" if ordinal else "a category's name"
        raise ValueError(f"{where}: rating must be {kind}, got {label!r}")

    # -- what the judge sees ---------------------------------------------------------------------------------

    def required_fields(self) -> tuple[str, ...]:
        return tuple(f for f in self.reads if f in SAMPLE_TEXT_FIELDS)

    def columns(self) -> tuple[str, ...]:
        return tuple(f for f in self.reads if f not in SAMPLE_TEXT_FIELDS)

    @property
    def verdict_model(self) -> builtins.type[Verdict]:
        """The strict model a verdict must validate against: a rating among the scale's, or the checks."""
        if self.scale is None:
            return ChecklistVerdicts
        ratings: tuple[str | int, ...] = tuple(self.scale.ratings)
        if isinstance(self.scale, OrdinalScale):
            ratings = tuple(int(r) for r in ratings)  # the judge writes a level's number
        return _rating_model(self.name, ratings)

    def probe(self) -> RubricProbe | None:
        """The rating's key and values when the score is probability-weighted, else None."""
        if self.scale is None or self.scale.weighting != "probability":
            return None
        return RubricProbe(key="rating", values=tuple(self.scale.ratings))

    def _system(self, texts: RubricTexts) -> str:
        head = f"# rubric:{self.name}\n"
        if self.scale is not None:
            intro = texts.scale.format(rating_rule=self.scale.rating_rule()).rstrip("\n")
            body = f"Criterion: {self.question.strip()}\n\nScale:\n{self.scale.describe()}"
        else:
            assert self.checklist is not None
            intro = texts.checklist.rstrip("\n")
            checks = "\n".join(
                f"{n}. {c.check.strip()}" for n, c in enumerate(self.checklist.checks, start=1)
            )
            body = f"Criterion: {self.question.strip()}\n\nChecks:\n{checks}"
        return f"{head}{intro}\n\n{body}\n"

    def _input_template(self) -> tuple[str, dict[str, str]]:
        blocks: list[str] = []
        lists: dict[str, str] = {}
        for name in self.reads:
            if name == "contexts":
                blocks.append('<contexts count="{contexts_count}">\n{contexts}\n</contexts>')
                lists["contexts"] = '<chunk id="{n}">\n{text}\n</chunk>'
            else:
                blocks.append(f"<{name}>\n{{{name}}}\n</{name}>")
        return "\n".join(blocks) + "\n", lists

    def _example_output(self, anchor: Anchor) -> dict[str, Any]:
        if self.scale is not None:
            assert anchor.rating is not None and anchor.reason is not None
            rating: Any = self.rating_of(anchor.rating)
            if isinstance(self.scale, OrdinalScale):
                rating = int(rating)
            return {"reason": anchor.reason.strip(), "rating": rating}
        assert self.checklist is not None and anchor.checks is not None and anchor.reasons is not None
        return {
            "checks": [
                {"check": n, "reason": anchor.reasons[c.id].strip(), "met": anchor.checks[c.id]}
                for n, c in enumerate(self.checklist.checks, start=1)
            ]
        }

    def prompt(self, texts: RubricTexts, *, leave_out: int | None = None) -> GeneratedPrompt:
        """The rubric's prompt; `leave_out` drops one anchor (check-metric judging that anchor itself)."""
        template, lists = self._input_template()
        examples = tuple(
            Example(values=dict(a.inputs), output=self._example_output(a))
            for i, a in enumerate(self.examples)
            if i != leave_out
        )
        system = self._system(texts)
        model = self.verdict_model
        version = content_version(
            texts.version, system, template, lists, [(e.values, e.output) for e in examples],
            strict_json_schema(model),
        )  # fmt: skip
        prompt = GeneratedPrompt(
            name=f"rubric:{self.name}",
            schema_name=model.__name__,
            system=system,
            input_template=template,
            list_templates=lists,
            examples=examples,
            count_of=None,
            version=version,
            source=f"rubric metric {self.name!r}",
            verdict_type=model,
            fixed_count=len(self.checklist.checks) if self.checklist is not None else None,
        )
        for i, example in enumerate(examples):  # rendering checked now, not on the first verdict
            try:
                prompt.render_input(example.values)
            except (ValueError, TypeError) as exc:
                raise ConfigError(f"rubric metric {self.name!r}: examples[{i}]: {exc}") from None
        return prompt

    def values(self, sample: Any) -> dict[str, InputValue]:
        """What the judge sees of `sample`: each read field's text, contexts as a list; a dataset column the
        sample lacks is a missing field (per sample, with its name), never an empty block."""
        values: dict[str, InputValue] = {}
        for name in self.reads:
            if name == "contexts":
                values[name] = list(sample.context_list)
            elif name in SAMPLE_TEXT_FIELDS:
                values[name] = str(getattr(sample, name) or "")
            else:
                extra = sample.extra or {}
                value = extra.get(name)
                if value is None or str(value).strip() == "":
                    raise JudgeError(
                        f"sample {sample.id!r} has no value in column {name!r} (read by rubric {self.name!r})",
                        cause="missing_field",
                    )
                values[name] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return values

    # -- the score -------------------------------------------------------------------------------------------

    def value_range(self) -> tuple[float, float]:
        if self.scale is None:
            return (0.0, 1.0)
        scores = list(self.scale.scores().values())
        return (min(scores), max(scores))

    def outcome(
        self,
        verdict: Verdict,
        probabilities: Mapping[str, float] | None,
        *,
        cached: bool,
        why_sampled: str = "",
    ) -> tuple[float, JudgeDetail]:
        """The metric's value and detail from a validated verdict (and the rating's probabilities, if any)."""
        if self.scale is None:
            assert self.checklist is not None and isinstance(verdict, ChecklistVerdicts)
            ordered = verdict.ordered()
            met = [c.met for c in ordered]
            value = formulas.checklist_score(
                met, [c.weight for c in self.checklist.checks], self.checklist.combine
            )
            verdicts: list[dict[str, Any]] = [
                {"check": c.id, "verdict": j.met, "reason": j.reason, "weight": c.weight}
                for c, j in zip(self.checklist.checks, ordered, strict=True)
            ]
            reason = f"{sum(met)} of {len(met)} checks met ({self.checklist.combine})"
            return value, JudgeDetail(verdicts=verdicts, reason=reason, cached=cached)
        scale = self.scale
        said: Any = verdict  # the generated model: reason and rating
        rating = str(said.rating)
        scores = scale.scores()
        sampled = formulas.rating_score(rating, scores)
        item: dict[str, Any] = {"rating": scale.label(rating), "reason": said.reason}
        kept = {k: p for k, p in (probabilities or {}).items() if k in scores and p > 0}
        if kept:
            total = sum(kept.values())
            item["probabilities"] = {scale.label(k): round(p / total, 6) for k, p in kept.items()}
            # each level's score beside its probability: how sure the judge is of a side of a threshold (a
            # cascade's confidence, `cascade.confidence`) is the probability of the levels on that side
            item["scores"] = {scale.label(k): s for k, s in scores.items()}
            value = formulas.probability_weighted_score(kept, scores)
            how = f"probability-weighted over the levels (sampled: {scale.label(rating)!r} = {sampled:g})"
        else:
            value = sampled
            how = f"rated {scale.label(rating)!r}" + (f" ({why_sampled})" if why_sampled else "")
        item["weighting"] = "probability" if kept else "sampled"
        detail = JudgeDetail(verdicts=[item], reason=f"{how}: {said.reason}"[:500], cached=cached)
        return value, detail

    # -- the registry ----------------------------------------------------------------------------------------

    def to_spec(self, origin: str, search: Sequence[Path] = ()) -> JudgeMetricSpec:
        if self.scale is not None:
            kind = {"binary": "answer (yes/no)", "ordinal": "level", "categorical": "category"}[
                self.scale.type
            ]
            formula = f"the score of the {kind} the judge chose: " + ", ".join(
                f"{self.scale.label(r)} = {s:g}" for r, s in self.scale.scores().items()
            )
            if self.scale.weighting == "probability":
                formula += "; weighted by the judge's probability of each where the server returns logprobs"
        else:
            assert self.checklist is not None
            formula = (
                {
                    "all": "1 when every check is met, else 0",
                    "any": "1 when any check is met, else 0",
                    "weighted_share": "weight of the met checks / weight of all checks",
                }[self.checklist.combine]
                + " (checks: "
                + ", ".join(c.id for c in self.checklist.checks)
                + ")"
            )
        return JudgeMetricSpec(
            name=self.name,
            description=self.description or self.question[:200],
            formula_in_words=formula,
            citation=f"rubric defined in {origin}",
            required=tuple(self.required_fields()),  # type: ignore[arg-type]
            plan="rubric",
            score=formulas.checklist_score if self.scale is None else formulas.rating_score,
            verdict_models=(),
            prompts=(f"rubric:{self.name}",),
            local_variant="not applicable: the local judge compares embeddings and cannot read a criterion",
            value_range=self.value_range(),
            higher_is_better=self.higher_is_better,
            origin=origin,
            rubric=self,
        )


def _is_column(name: str) -> bool:
    return re.fullmatch(_COLUMN, name) is not None


@lru_cache(maxsize=256)
def _rating_model(name: str, ratings: tuple[str | int, ...]) -> type[Verdict]:
    """A verdict model whose rating can only be one of `ratings` (built once per rubric and scale; kept out
    of the definition so the definition still pickles for Ray workers)."""
    rating_type: Any = Literal[ratings]
    model: type[Verdict] = create_model(
        f"Rubric_{name}", __base__=Verdict, reason=(str, ...), rating=(rating_type, ...)
    )
    return model
