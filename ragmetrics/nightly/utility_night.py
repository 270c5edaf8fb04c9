"""A night's utility judgments (`utility_qrels:`): built for its runs, written to its folder, and every ranked
run scored on them; or, with `utility_qrels.folder`, read from a folder built before (nothing sent).

Where the grades came from (utility.json's generator, metric, time, k and runs) is said in the night's notes
as every qrels provenance is said (`QrelsProvenance.describe`), and kept in each run's report.json
(`metadata.extra.utility_qrels.qrels`). A built folder's runs that put passages the build never pooled in their
top k are named, as a pooled test set names the runs its pool may favour.

The questions and references are the dataset's; the passages' texts are `dataset.passages`. The result is one
`RunResult` per run whose metrics are named `utility:<metric>` (`utility:ndcg@10`, `utility:udcg@10`), so they
are compared, tested and reported like every other metric of the night, and the folder `utility/` of the
night holds the qrels, the probabilities of abstaining, every pair's answer and the manifest (the format of
`ragmetrics utility`, ragmetrics.utility.result).

udcg reads the probabilities of abstaining where the generator gave them (a pair without one adds nothing but
counts, the reference code's rule); without any, udcg uses u = 1, and a note says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError
from ragmetrics.nightly.applicability import mark_missing
from ragmetrics.nightly.config_night import NightlyConfig
from ragmetrics.nightly.qa_dataset import QADataset
from ragmetrics.retrieval.run import Run
from ragmetrics.schema import QrelsProvenance, RunResult
from ragmetrics.utility.result import UtilityJudgments

__all__ = ["METRIC_PREFIX", "UtilityNight", "utility_for_night"]

METRIC_PREFIX = "utility:"  # UtilityQrelsConfig.report_metrics names them so too
FOLDER = "utility"


@dataclass
class UtilityNight:
    """The night's utility judgments, the runs' scores on them, and the files for the night's folder."""

    judgments: UtilityJudgments
    results: dict[str, RunResult]
    texts: dict[str, str] = field(default_factory=dict)


def _generator(config: NightlyConfig, search: list[Path]) -> Any:
    from ragmetrics.utility.generators import ExtractiveGenerator
    from ragmetrics.utility.openai_generator import OpenAIGenerator

    section = config.utility_qrels
    assert section is not None
    if section.generator == "extractive":
        return ExtractiveGenerator()
    if section.generator == "openai":
        assert section.openai is not None
        return OpenAIGenerator(**section.openai.model_dump())
    if config.generator is None:
        raise ConfigError("utility_qrels.generator is 'night' but the config has no `generator:` section")
    from ragmetrics.nightly.utility_generator import target_generator

    return target_generator(config.generator, search, cost_per_call=section.cost_per_call)


def _renamed(result: RunResult) -> RunResult:
    """`result` with every metric named `utility:<metric>`."""
    rename = {m: f"{METRIC_PREFIX}{m}" for m in result.metadata.metrics}
    meta = result.metadata.model_copy(deep=True)
    meta.metrics = [rename[m] for m in result.metadata.metrics]
    meta.metric_settings = {rename.get(k, k): v for k, v in result.metadata.metric_settings.items()}
    out = result.model_copy(
        update={
            "per_query": {
                q: {rename.get(m, m): v for m, v in s.items()} for q, s in result.per_query.items()
            },
            "aggregate": {rename.get(m, m): v for m, v in result.aggregate.items()},
            "failures": [
                f.model_copy(update={"metric": rename.get(f.metric, f.metric)}) for f in result.failures
            ],
            "not_applicable": [
                n.model_copy(update={"metric": rename.get(n.metric, n.metric)}) for n in result.not_applicable
            ],
            "metadata": meta,
        }
    )
    return out


def utility_for_night(
    config: NightlyConfig,
    dataset: QADataset,
    runs: dict[str, Run | None],
    notes: list[str],
    *,
    output_dir: Path | None,
    search: list[Path],
    judge: Any = None,
) -> UtilityNight | None:
    """Build the night's utility judgments and score the runs on them (module docstring); None without the
    section. Configuration that cannot work (no passages, an unknown run) is a ConfigError before any call."""
    section = config.utility_qrels
    if section is None:
        return None
    from ragmetrics.retrieval.evaluate import evaluate
    from ragmetrics.retrieval.utilities import AbstentionProbabilities

    if dataset.passages is None and section.folder is None:
        raise ConfigError(
            "utility_qrels needs the passages' texts: set dataset.passages (JSONL of {id, text})"
        )
    names = section.runs if section.runs is not None else [n for n, r in runs.items() if r is not None]
    unknown = [n for n in names if n not in runs]
    if unknown:
        raise ConfigError(
            f"utility_qrels.runs: no run named {', '.join(map(repr, unknown))}; have {list(runs)}"
        )
    ranked = {n: runs[n] for n in names if runs[n] is not None}
    if not ranked:
        notes.append("utility qrels not built: no run has a ranking")
        return None
    if section.folder is not None:
        judgments, provenance = _read_built(section.folder, dataset, notes)
        texts: dict[str, str] = {}  # the folder stays where it is; the night names it
        where = str(section.folder)
    else:
        judgments = _build(config, dataset, ranked, search=search, output_dir=output_dir, judge=judge)
        provenance = _provenance_of(judgments)
        texts = {f"{FOLDER}/{name}": text for name, text in judgments.texts().items()}
        where = FOLDER
        _build_note(judgments, section.metric, notes)
    notes.append(provenance.describe())  # where the `utility:` metrics' grades came from, as for any qrels
    if section.folder is not None:
        _unpooled_notes(judgments, ranked, section.k, notes)
    grades = judgments.grades()
    if not grades:
        notes.append("utility qrels: no pair was graded, so no run is scored on them")
        return UtilityNight(judgments, {}, texts)
    metrics = section.scored_metrics(config.retrieval.metrics)
    probabilities = judgments.abstention()
    utilities = (
        AbstentionProbabilities.from_dict(probabilities.by_query, source="utility", missing="skip")
        if probabilities is not None
        else None
    )
    if utilities is None and any(m.startswith("udcg") for m in metrics):
        notes.append("utility qrels: the generator gave no probabilities of abstaining, so udcg uses u = 1")
    lacking = judgments.counts()["without_p_abstain"]
    if utilities is not None and lacking and any(m.startswith("udcg") for m in metrics):
        # some answers have a probability (cached from a server that gave them), others not (a refusal since)
        why = ", ".join(f"{reason}: {count}" for reason, count in sorted(lacking.items()))
        notes.append(
            f"utility qrels: {sum(lacking.values())} pairs answered without a probability of abstaining ({why}), "
            "beside pairs with one: each adds nothing to udcg's sum but counts in its n (the reference code's rule)"
        )
    qrels = judgments.qrels()
    results = {}
    for name, run in ranked.items():
        assert run is not None
        result = _renamed(evaluate(qrels, run, metrics, name=name, utilities=utilities))
        _not_applicable_without_reference(result, run, set(judgments.skipped_questions))
        if section.folder is not None:  # a folder built for other questions holds no grade for some
            _not_applicable_unjudged(result, run, judgments, section.folder)
        ungraded = _ungraded_in_top(judgments, run, section.k)
        if ungraded:
            mark_missing(result, ungraded)
            notes.append(
                f"utility qrels: run {name!r}: {len(ungraded)} questions have a pooled passage without a grade "
                "(its generator call failed or the budget ran out): their utility: scores are failures, not 0"
            )
        # where the `utility:` metrics' qrels came from, as report.json carries it for every run
        result.metadata.extra["utility_qrels"] = {
            **judgments.provenance,
            "folder": where,
            "counts": judgments.counts(),
            "with_p_abstain": utilities is not None,
            "qrels": provenance.model_dump(mode="json"),
        }
        results[name] = result
    return UtilityNight(judgments, results, texts)


def _build(
    config: NightlyConfig,
    dataset: QADataset,
    ranked: dict[str, Run | None],
    *,
    search: list[Path],
    output_dir: Path | None,
    judge: Any,
) -> UtilityJudgments:
    """The night's own utility judgments, asked of the section's generator (cached, budgeted)."""
    from ragmetrics.judge.cache import VerdictCache
    from ragmetrics.utility.build import Budget, UtilityQuestion, build_utility

    section = config.utility_qrels
    assert section is not None and dataset.passages is not None
    questions = {s.id: UtilityQuestion(s.id, s.question, s.reference) for s in dataset.samples}
    passages = {pid: p.text for pid, p in dataset.passages.items()}
    cache_path = section.cache or (output_dir or config.output.dir) / "utility_cache.sqlite"
    cache = VerdictCache(cache_path)
    try:
        return build_utility(
            questions, passages, [r for r in ranked.values() if r is not None], _generator(config, search),
            k=section.k, metric=section.metric, judge=judge, cache=cache,
            budget=Budget(section.max_requests, section.max_cost), max_grade=section.max_grade,
            concurrency=section.concurrency, retries=section.retries,
        )  # fmt: skip
    finally:
        cache.close()


def _build_note(judgments: UtilityJudgments, metric: str, notes: list[str]) -> None:
    counts = judgments.counts()
    notes.append(
        f"utility qrels ({metric}, generator {judgments.provenance['generator'].get('kind')}): "
        f"{counts['scored']} of {counts['pairs']} pooled pairs graded, {counts['relevant']} relevant, "
        f"{counts['requests']} generator requests, {counts['cached']} cached"
        + (f"; failed: {counts['failed']}" if counts["failed"] else "")
        + (
            f"; {counts['skipped_questions']} questions without a reference skipped ({counts['skipped_pairs']} pairs)"
            if counts["skipped_questions"]
            else ""
        )
    )
    if judgments.provenance.get("logprobs_refused"):
        notes.append(
            f"utility qrels: {judgments.provenance['logprobs_refused']} "
            f"({counts['without_p_abstain'].get('logprobs_refused', 0)} pairs without a probability)"
        )


def _provenance_of(judgments: UtilityJudgments) -> QrelsProvenance:
    """The provenance of the night's own build, read from the manifest it writes as a folder's would be."""
    from ragmetrics.nightly.qrels_provenance import utility_provenance
    from ragmetrics.utility.manifest import parse_utility_manifest

    manifest = parse_utility_manifest(judgments.manifest(), Path(FOLDER) / "utility.json")
    return utility_provenance(manifest, f"{FOLDER}/utility.qrels")


def _read_built(
    folder: Path, dataset: QADataset, notes: list[str]
) -> tuple[UtilityJudgments, QrelsProvenance]:
    """A utility folder built before (`utility_qrels.folder`): its judgments and provenance, utility.json
    checked field by field and against its qrels; a question the dataset lacks is an error naming it."""
    from ragmetrics.errors import InputError
    from ragmetrics.nightly.qrels_provenance import utility_provenance
    from ragmetrics.utility.manifest import read_utility_manifest
    from ragmetrics.utility.result import read_folder

    built = read_folder(folder)  # an InputError naming the file and field when damaged or mismatched
    manifest = read_utility_manifest(folder / "utility.json")
    known = set(dataset.query_ids)
    for judgment in built.judgments:
        if judgment.query_id not in known:
            raise InputError(
                f"question {judgment.query_id!r} is not in the night's dataset ({dataset.source}): these "
                "utility judgments were built for other questions",
                source=str(folder / "judgments.jsonl"),
                field="query_id",
            )
    skipped = built.manifest.get("skipped_questions")
    judgments = UtilityJudgments(
        judgments=list(built.judgments),
        provenance=dict(built.manifest.get("provenance") or {}),
        skipped_questions=list(skipped.get("ids") or []) if isinstance(skipped, dict) else [],
        skipped_pairs=int((built.manifest.get("counts") or {}).get("skipped_pairs") or 0),
    )
    notes.append(
        f"utility qrels read from {folder} (nothing sent): {manifest.scored} graded pairs, "
        f"{manifest.relevant} relevant"
    )
    return judgments, utility_provenance(manifest, str(manifest.qrels_path))


def _unpooled_notes(
    judgments: UtilityJudgments, ranked: dict[str, Run | None], k: int, notes: list[str]
) -> None:
    """A run of the night whose top k holds passages the folder's build never pooled: those count as not
    relevant, so the comparison may favour the runs that were pooled; say so per run, as for a pooled test set."""
    from ragmetrics.utility.build import pool_pairs

    judged = {(j.query_id, j.doc_id) for j in judgments.judgments}
    questions = {j.query_id for j in judgments.judgments}
    skipped = set(judgments.skipped_questions)
    pooled_from = ", ".join(map(str, judgments.provenance.get("runs") or [])) or "?"
    for name, run in ranked.items():
        assert run is not None
        unjudged = [q for q in run.to_dict() if q not in questions and q not in skipped]
        if unjudged:  # _not_applicable_unjudged marks their scores
            notes.append(
                f"! utility qrels: run {name!r}: {len(unjudged)} of its questions have no utility judgment in the "
                f"folder (built for other questions): their utility: scores are not applicable, left out of the "
                f"mean (e.g. {', '.join(unjudged[:3])})"
            )
        outside = [p for p in pool_pairs([run], k) if p not in judged and p[0] in questions]
        if outside:
            notes.append(
                f"! utility qrels: run {name!r}: {len(outside)} passages in its top {k} were not pooled by the "
                f"build (runs {pooled_from}): they count as not relevant, which may favour the pooled runs"
            )


def _not_applicable_unjudged(result: RunResult, run: Run, judgments: UtilityJudgments, folder: Path) -> None:
    """Each question `run` ranks that a folder built before holds no judgment for (nor skipped for want of a
    reference) gets its `utility:` scores as not applicable, with the reason: its grades are unknown, not 0,
    and no entry would leave it out of the mean unsaid (or stop the comparisons)."""
    questions = {j.query_id for j in judgments.judgments} | set(judgments.skipped_questions)
    reason = f"no utility judgment for the question in {folder} (built for other questions)"
    _mark_not_applicable(result, [q for q in run.to_dict() if q not in questions], reason)


def _not_applicable_without_reference(result: RunResult, run: Run, skipped: set[str]) -> None:
    """Each question `run` ranks whose reference is missing gets its `utility:` scores as not applicable, with
    the reason (no entry at all would leave the question out of the night unsaid, and the comparisons refuse
    a run with a question missing a metric)."""
    reason = "no reference answer: utility qrels skip the question"
    _mark_not_applicable(result, [q for q in run.to_dict() if q in skipped], reason)


def _mark_not_applicable(result: RunResult, questions: list[str], reason: str) -> None:
    """`questions` (those `result` has no scores for) get every metric as not applicable, with `reason`."""
    from ragmetrics.schema import NotApplicableScore

    for qid in questions:
        if qid in result.per_query:
            continue
        result.per_query[qid] = dict.fromkeys(result.metadata.metrics)
        result.not_applicable.extend(
            NotApplicableScore(query_id=qid, metric=m, reason=reason) for m in result.metadata.metrics
        )
    result.metadata.num_queries = len(result.per_query)
    result.recompute_aggregate()


def _ungraded_in_top(judgments: UtilityJudgments, run: Run, k: int) -> dict[str, tuple[str, str]]:
    """question -> (cause, message) where a passage in `run`'s top `k` was pooled but got no grade. A metric
    would read that passage as unjudged, i.e. not relevant: a failed call would become a 0, so the question's
    utility scores for this run fail with the pair's cause instead."""
    from ragmetrics.utility.build import pool_pairs

    failed = {
        (j.query_id, j.doc_id): j for j in judgments.judgments if j.grade is None and j.cause is not None
    }
    if not failed:
        return {}
    out: dict[str, tuple[str, str]] = {}
    for pair in pool_pairs([run], k):
        judgment = failed.get(pair)
        if judgment is not None and pair[0] not in out:
            out[pair[0]] = (
                judgment.cause or "internal_error",
                f"utility qrels: passage {pair[1]!r} in the top {k} has no grade ({judgment.cause}: "
                f"{judgment.message})",
            )
    return out


def add_utility_scores(
    config: NightlyConfig,
    dataset: QADataset,
    runs: dict[str, Run | None],
    results: dict[str, RunResult],
    notes: list[str],
    texts: dict[str, str],
    *,
    output_dir: Path | None,
    search: list[Path],
) -> None:
    """The pipeline's seam: `utility_for_night`, its scores merged into `results` and its files into `texts`
    (the night folder's extra files). answer_correctness is scored by the night's judge (else the default)."""
    if config.utility_qrels is None:
        return
    judge = None
    if config.utility_qrels.metric == "answer_correctness":
        from ragmetrics.judge.select import make_judge

        judge = make_judge(config.judge.settings() if config.judge is not None else None)
    night = utility_for_night(config, dataset, runs, notes, output_dir=output_dir, search=search, judge=judge)
    if night is None:
        return
    texts.update(night.texts)
    for name, result in night.results.items():
        results[name] = results[name].merge(result) if name in results else result


def utility_plan_notes(
    config: NightlyConfig,
    dataset: QADataset,
    runs: dict[str, Run | None],
    *,
    output_dir: Path | None,
    search: list[Path],
) -> list[str]:
    """The dry run's line for `utility_qrels:`: pairs, cached, requests to send, their cost bound, what the budget
    pays for, questions skipped; nothing is called and no cache is created."""
    section = config.utility_qrels
    if section is not None and section.folder is not None:
        return [f"utility qrels: read from {section.folder}, nothing to send"]
    if section is None or dataset.passages is None:
        return (
            [] if section is None else ["utility_qrels: dataset.passages is not set: the night will refuse"]
        )
    from ragmetrics.judge.cache import VerdictCache
    from ragmetrics.utility.build import Budget, UtilityQuestion, plan_utility

    names = section.runs if section.runs is not None else [n for n, r in runs.items() if r is not None]
    ranked = [r for n in names if (r := runs.get(n)) is not None]
    if not ranked:
        return []
    questions = {s.id: UtilityQuestion(s.id, s.question, s.reference) for s in dataset.samples}
    passages = {pid: p.text for pid, p in dataset.passages.items()}
    path = section.cache or (output_dir or config.output.dir) / "utility_cache.sqlite"
    cache = VerdictCache(path) if path.exists() else None
    try:
        plan = plan_utility(
            questions, passages, ranked, _generator(config, search), k=section.k, cache=cache,
            budget=Budget(section.max_requests, section.max_cost),
        )  # fmt: skip
    finally:
        if cache is not None:
            cache.close()
    return [
        f"utility qrels: {plan.pairs} pooled pairs, {plan.cached} cached, {plan.requests} generator requests to "
        f"send{' at most (one a server refusing logprobs may refuse)' if plan.refused_request else ''} "
        f"(cost at most {plan.cost_bound:.4f} USD); the budget pays for {plan.within_budget}; "
        f"{len(plan.skipped_questions)} questions without a reference skipped ({plan.skipped_pairs} pairs)"
    ]
