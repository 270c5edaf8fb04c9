"""The validity study of a night: its folder read and checked (`ragmetrics validity NIGHT`), or its results
assessed as it is written (the report's section), and the files the study adds to a folder.

What decides whether there is anything to study comes first and is said by name: a night with no
judged_samples.jsonl or no answer in it has no answers; a night whose runs hold no answer metric has no answer
quality. Both are InputErrors (exit 2), never an empty table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.schema import Report

if TYPE_CHECKING:
    from ragmetrics.validity import ValidityData, ValidityResult

__all__ = [
    "VALIDITY_KEY",
    "answered_questions",
    "attach_validity",
    "night_settings",
    "page_data",
    "stored_validity",
    "study_night",
    "validity_markdown_section",
    "validity_page",
    "write_validity",
]

VALIDITY_KEY = "validity"
ANSWERED_KEY = "validity_answered"
"""report.json's run -> questions with an answer, the study's filter for the page's plots."""
"""Where report.json keeps the night's study: metadata.extra["validity"]."""


def answered_questions(judged: Mapping[str, Mapping[str, RagSample]] | Mapping[str, Sequence[RagSample]]
                       ) -> dict[str, set[str]]:  # fmt: skip
    """run -> the questions whose sample has a non-empty answer."""
    out: dict[str, set[str]] = {}
    for run, samples in judged.items():
        items = samples.values() if isinstance(samples, Mapping) else samples
        out[run] = {s.id for s in items if isinstance(s.answer, str) and s.answer.strip()}
    return out


def night_settings(report: Report, answer_metric: str, **given: Any) -> Any:
    """The study's settings: the night's own test, correction, alpha and seed unless `given` overrides them."""
    from ragmetrics.validity import ValiditySettings

    s = report.settings
    chosen = {k: v for k, v in given.items() if v is not None}
    return ValiditySettings(
        answer_metric=answer_metric,
        samples=chosen.get("samples", 1000),
        confidence=chosen.get("confidence", s.confidence),
        seed=chosen.get("seed", s.seed if s.seed is not None else 42),
        alpha=chosen.get("alpha", s.alpha),
        test=chosen.get("test", s.test),
        correction=chosen.get("correction", s.correction),
        permutations=chosen.get("permutations", s.permutations or 10_000),
    )


def study_night(
    folder: Path,
    *,
    answer_metric: str | None = None,
    metrics: Sequence[str] | None = None,
    **settings: Any,
) -> tuple[Report, ValidityData, ValidityResult]:
    """Read a night's folder (report.json, judged_samples.jsonl) and run the study on it."""
    from ragmetrics.nightly.gate import load_baseline
    from ragmetrics.nightly.judged_samples import FILENAME, read_judged_samples
    from ragmetrics.validity import validity_data, validity_study

    report = load_baseline(folder / "report.json", what="night's report")
    samples = folder / FILENAME
    if not samples.exists():
        raise InputError(
            f"the night has no answers: no {FILENAME} beside report.json (a night writes it when its runs have "
            "answers to judge: a dataset with an `answer` column, a pipeline run, or a `generator:`)",
            source=str(samples),
        )
    answered = answered_questions(read_judged_samples(samples))
    if not any(answered.values()):
        raise InputError(
            "the night has no answers: no sample in it has a non-empty answer", source=str(samples)
        )
    data = validity_data(report, answered=answered, answer_metric=answer_metric, metrics=metrics)
    result = validity_study(data, night_settings(report, data.answer_metric, **settings))
    return report, data, result


def write_validity(
    folder: Path, data: ValidityData, result: ValidityResult, *, plots: bool = True
) -> list[Path]:
    """validity.json, validity.md and (with matplotlib) plots/validity_tau.png and plots/validity_scatter.png;
    each written whole under a temporary name then renamed, so a killed run leaves no half file."""
    import os

    from ragmetrics.validity.section import validity_markdown

    texts = {
        "validity.json": result.model_dump_json(indent=2),
        "validity.md": "\n".join(validity_markdown(result, heading="#")),
    }
    images: dict[str, Any] = {}
    if plots:
        from ragmetrics.errors import ConfigError
        from ragmetrics.validity.plots import scatter_plot, tau_chart

        try:
            images = {"plots/validity_tau.png": tau_chart(result),
                      "plots/validity_scatter.png": scatter_plot(data, result)}  # fmt: skip
        except ConfigError as exc:  # matplotlib missing: the text is still written
            texts["validity.md"] += f"\n- plots skipped: {exc}\n"
    written = []
    for name, text in texts.items():
        temp = folder / f".{name}.partial"
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, folder / name)
        written.append(folder / name)
    if images:
        (folder / "plots").mkdir(exist_ok=True)
    for name, figure in images.items():
        temp = folder / f"{name}.partial"
        figure.savefig(temp, format="png")
        os.replace(temp, folder / name)
        written.append(folder / name)
    return written


def attach_validity(
    report: Report, judged: Mapping[str, Sequence[RagSample]], notes: list[str], *, samples: int = 1000
) -> None:
    """Tonight's study into report.json (metadata.extra["validity"]) when the night has answers with an answer
    quality in at least 2 runs; otherwise nothing (`ragmetrics validity` says why, naming what is missing)."""
    from ragmetrics.validity import validity_data, validity_study

    answered = answered_questions(judged)
    try:
        data = validity_data(report, answered=answered)
    except InputError as exc:  # said, never silent: the night has no study and the reader learns why
        notes.append(f"validity: not studied: {exc}")
        return
    result = validity_study(data, night_settings(report, data.answer_metric, samples=samples))
    report.metadata.extra[VALIDITY_KEY] = result.model_dump(mode="json")
    # The page's scatter plot is drawn later from report.json alone: it must leave out the same answer values
    # (those without an answer behind them) as the study did, so the answered questions travel with it.
    report.metadata.extra[ANSWERED_KEY] = {run: sorted(ids) for run, ids in answered.items()}
    notes.append(f"validity: {result.verdict.text}")


def stored_validity(report: Report) -> ValidityResult | None:
    """The study report.json holds, or None."""
    from ragmetrics.validity import ValidityResult

    stored = report.metadata.extra.get(VALIDITY_KEY)
    return ValidityResult.model_validate(stored) if isinstance(stored, dict) else None


def validity_markdown_section(report: Report) -> list[str]:
    """report.md's section ([] without a study)."""
    from ragmetrics.validity.section import validity_markdown

    result = stored_validity(report)
    return validity_markdown(result) if result is not None else []


def page_data(report: Report, result: ValidityResult) -> ValidityData:
    """The study's matrices rebuilt from report.json for the page's plots: the same metrics, answer metric and
    filter (the answered questions the night stored) as the study, so a plot shows the points its tau is of."""
    from ragmetrics.validity import validity_data

    stored = report.metadata.extra.get(ANSWERED_KEY)
    answered = {run: set(ids) for run, ids in stored.items()} if isinstance(stored, dict) else None
    return validity_data(report, answered=answered, answer_metric=result.settings.answer_metric,
                         metrics=[m.metric for m in result.metrics])  # fmt: skip


def validity_page(report: Report, plots: bool) -> tuple[list[str], list[Any]]:
    """report.html's section and its two plots (`PagePlot`s; none without matplotlib or with `plots` off)."""
    from ragmetrics.errors import ConfigError
    from ragmetrics.render.html.plots import PagePlot, _png
    from ragmetrics.validity.plots import scatter_plot, tau_chart
    from ragmetrics.validity.section import validity_html

    result = stored_validity(report)
    if result is None:
        return [], []
    images: list[Any] = []
    if plots:
        data = page_data(report, result)
        try:
            images = [
                PagePlot("which metric tracks the answers: per-query tau with its interval", _png(tau_chart(result))),
                PagePlot(f"each metric against {result.settings.answer_metric}", _png(scatter_plot(data, result)),
                         wide=True),
            ]  # fmt: skip
        except ConfigError:
            images = []  # the other plots' note already says matplotlib is missing
    return [validity_html(result)], images
