"""The LLM judge: RAGAS-style context and answer metrics over any OpenAI-compatible endpoint.

Every verdict comes from a prompt file, is validated against its pydantic model, and is cached under a key of
everything that determines it before it is used, so an interrupted run resumes where it stopped and a repeated
run makes no calls. Scores come from the formulas shared with the local judge (`judge.formulas`).

A unit that fails in a way asking again would likely repeat (invalid output after every repair, a refused
request, a timeout) is recorded in the cache under the same key; `JudgeSettings.retry_failed` decides whether a
rerun pays for it again ('always'), reports the recorded failure without a call ('never'), or retries once
the failure is old enough ('12h'). Either way the result says so: no rerun pays twice without being told.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ragmetrics.errors import FailureCause, JudgeError
from ragmetrics.judge import formulas
from ragmetrics.judge.backends._dispatch import Handler, PlanDispatch
from ragmetrics.judge.base import Embedder, MetricOutcome, RagSample, target_statements
from ragmetrics.judge.cache import VerdictCache, cache_key
from ragmetrics.judge.claim_outcome import JudgedClaim, claim_inputs, claim_outcome
from ragmetrics.judge.formulas import is_noncommittal
from ragmetrics.judge.openai.breaker import BreakerOpen
from ragmetrics.judge.openai.budget import RequestBudget
from ragmetrics.judge.openai.client import JudgeClient, RetryPolicy, dump_verdict, public_url
from ragmetrics.judge.openai.embeddings import OpenAIEmbedder
from ragmetrics.judge.openai.output import MODES, ResponseMode
from ragmetrics.judge.openai.usage import CallUsage, token_usage
from ragmetrics.judge.prompts import (
    RENDERING,
    GeneratedPrompt,
    InputValue,
    Prompt,
    PromptLibrary,
    default_library,
)
from ragmetrics.judge.registry import JudgeMetricSpec, Plan, judge_metric_names, spec
from ragmetrics.judge.rubric import RubricMetric, RubricProbe
from ragmetrics.judge.settings import JudgeSettings, retry_failed_delay_s
from ragmetrics.judge.text.language import language_name
from ragmetrics.judge.text.sentences import split_sentences, split_statements
from ragmetrics.judge.verdicts import (
    ChunkVerdicts,
    ClaimVerdicts,
    CorrectnessVerdicts,
    GeneratedQuestions,
    GradedRelevance,
    SentenceVerdicts,
    SingleChunkVerdict,
    StatementJudgement,
    StatementVerdicts,
    SufficiencyVerdict,
    SupportJudgement,
    SupportVerdicts,
    Verdict,
)
from ragmetrics.schema import JudgeDetail, JudgeInfo, TokenUsage

BACKEND = "openai"
BATCH_UNITS_IN_FLIGHT = 100_000
RECORDED_CAUSES: frozenset[FailureCause] = frozenset({"invalid_output", "bad_request", "timeout"})
"""Failure causes recorded in the cache for `retry_failed`: those a second identical request would likely
repeat. Rate limits, connection errors, auth and server faults are about the endpoint, not the unit, and
are always tried again."""


PROBABILITIES_READ = 2
"""How a rating's probabilities are read from the server's logprobs, in the key of a verdict stored with them:
2 stores none when the server gave no alternative to the sampled token (1 stored a certain 1.0 for it, which a
cascade would route on), so verdicts read the old way are asked again rather than trusted."""


class _CachedModeMemory:
    """The response mode an endpoint+model accepted, kept in the verdict cache's meta table."""

    def __init__(self, cache: VerdictCache, base_url: str | None, model: str) -> None:
        self._cache = cache
        self._name = f"response_mode|{public_url(base_url) or 'https://api.openai.com/v1'}|{model}"

    def recall(self) -> ResponseMode | None:
        value = self._cache.meta(self._name)
        for mode in MODES:
            if value == mode:
                return mode
        return None

    def remember(self, mode: ResponseMode) -> None:
        self._cache.set_meta(self._name, mode)


@dataclass(frozen=True)
class Judged:
    """A validated verdict, the probabilities of its probed rating (None: not asked or not given), and
    whether it came from the cache."""

    verdict: Verdict
    probabilities: dict[str, float] | None
    cached: bool


def _probabilities_valid(probabilities: Any, probe: RubricProbe | None) -> bool:
    return (
        probe is not None
        and isinstance(probabilities, dict)
        and bool(probabilities)
        and all(k in probe.values and isinstance(p, float) and 0 < p <= 1 for k, p in probabilities.items())
    )


_USAGE_FIELDS = frozenset(CallUsage().as_dict())


class LLMJudge(PlanDispatch):
    """Judge protocol over an OpenAI-compatible chat endpoint (plus `/v1/embeddings` for answer relevancy)."""

    def __init__(
        self,
        settings: JudgeSettings | None = None,
        *,
        embedder: Embedder | None = None,
        prompts: PromptLibrary | None = None,
        retry: RetryPolicy | None = None,
        cache: VerdictCache | None = None,
        identity: Mapping[str, Any] | None = None,
        budget: RequestBudget | None = None,
    ) -> None:
        self.settings = settings or JudgeSettings()
        # A panel member's identity (endpoint and model, `panel_config.identity`) joins its cache keys, so two
        # members never share a verdict; a judge alone keeps the keys it always had.
        self.identity = dict(identity) if identity is not None else None
        self.prompts = prompts or default_library()
        self.cache = cache or VerdictCache(self.settings.cache_path, enabled=self.settings.use_cache)
        memory = _CachedModeMemory(self.cache, self.settings.base_url, self.settings.model)
        # `budget`: a cap shared with other judges (a cascade's, a panel's), beside this judge's max_requests
        self.client = JudgeClient(
            self.settings, prompts=self.prompts, retry=retry, mode_memory=memory, budget=budget
        )
        self.embedder: Embedder = embedder or make_embedder(self.settings, self.client, self.cache, retry)
        self._retry_after_s = retry_failed_delay_s(self.settings.retry_failed)
        self._failures = 0
        self._rubric_prompts: dict[tuple[int, int | None], tuple[RubricMetric, GeneratedPrompt]] = {}
        self._asking: dict[str, asyncio.Future[Judged]] = {}
        self.cached_usage = CallUsage()  # recorded usage of the verdicts read from the cache

    @property
    def backend(self) -> str:
        return BACKEND

    @property
    def preferred_units_in_flight(self) -> int:
        """Enough units to keep every HTTP slot busy while others parse and validate, and no more; with
        judge.batch, every unit at once (each waits on its batch, not on a connection)."""
        return BATCH_UNITS_IN_FLIGHT if self.settings.batch is not None else 2 * self.settings.max_concurrency

    def supported_metrics(self) -> tuple[str, ...]:
        return judge_metric_names()

    def info(self) -> JudgeInfo:
        s = self.settings
        mode, mode_source = self.client.response_mode_report()
        return JudgeInfo(
            backend=BACKEND,
            model=s.model,
            base_url=public_url(s.base_url),
            embedding_model=self.embedder.name,
            temperature=s.temperature,
            seed=s.seed,
            prompt_versions=self._prompt_versions(),
            settings={
                "context_precision_mode": s.context_precision_mode,
                "answer_relevancy_questions": s.answer_relevancy_questions,
                "noncommittal_rule": s.noncommittal_rule,
                "answer_in_input_language": s.answer_in_input_language,
                "response_mode": mode,
                "response_mode_source": mode_source,
                "max_concurrency": s.max_concurrency,
                "concurrency": self.client.transport.concurrency(),
                "timeout_s": s.timeout_s,
                "max_retries": s.max_retries,
                "max_repairs": s.max_repairs,
                "max_tokens": s.max_tokens if s.max_tokens is not None else "auto",
                "retry_failed": s.retry_failed,
            },
            cache=self.cache.stats(),
            usage=self.client.token_usage(),
            failures=self._failures,
        )

    def _prompt_versions(self) -> dict[str, str]:
        """Every prompt file's version, and those of the rubric metrics registered for this run: a changed
        rubric shows as a changed prompt version, like an edited prompt file."""
        versions = self.prompts.versions()
        for name in judge_metric_names():
            metric = spec(name)
            if metric.plan == "rubric":
                prompt = self.rubric_prompt(metric.rubric)
                versions[prompt.name] = prompt.version
                versions["_rubric"] = self.prompts.rubric.version
        return versions

    async def aclose(self) -> None:
        await self.client.aclose()
        close_embedder = getattr(self.embedder, "aclose", None)
        if close_embedder is not None:
            await close_embedder()
        self.cache.close()

    # -- verdicts --------------------------------------------------------------------------------------------

    def _key(self, prompt: Prompt, values: Mapping[str, InputValue], probe: RubricProbe | None = None) -> str:
        parts: dict[str, Any] = {
            "backend": BACKEND,
            "kind": "verdict",
            "model": self.settings.model,
            "prompt": prompt.name,
            "prompt_version": prompt.version,
            "shared_version": self.prompts.shared.version,
            "rendering": RENDERING,
            "sampling": {"temperature": self.settings.temperature, "seed": self.settings.seed},
            "answer_in_input_language": self.settings.answer_in_input_language,
            "inputs": {k: list(v) if isinstance(v, list | tuple) else v for k, v in values.items()},
        }
        if probe is not None:  # a verdict with its rating's probabilities is another request than one without
            parts["probabilities_of"] = [probe.key, list(probe.values)]
            parts["probabilities_read"] = PROBABILITIES_READ
        identity = getattr(self, "identity", None)  # a planning judge (dry run) has none
        if identity is not None:
            parts["judge"] = identity
        return cache_key(parts)

    def request_key(self, prompt_name: str, values: Mapping[str, InputValue]) -> str:
        """The cache key a `verdict(prompt_name, values)` call reads and writes (for dry runs)."""
        return self._key(self.prompts.get(prompt_name), values)

    async def verdict(self, prompt_name: str, values: Mapping[str, InputValue]) -> tuple[Verdict, bool]:
        """The validated verdict of one prompt on `values` and whether it came from the cache."""
        judged = await self.judged(self.prompts.get(prompt_name), values)
        return judged.verdict, judged.cached

    async def judged(
        self, prompt: Prompt, values: Mapping[str, InputValue], probe: RubricProbe | None = None
    ) -> Judged:
        """The validated verdict of `prompt` on `values`, from the cache or the server; with `probe`, also the
        probabilities the server gave each allowed value of the probed key (None when it gave none)."""
        key = self._key(prompt, values, probe)
        stored = self.stored(key, prompt, values, probe)
        if stored is not None:
            return stored
        asking = self._asking.get(key)
        if asking is not None:
            # Another unit is asking the very same question (the claim diagnostics of one sample share one
            # verdict): wait for its answer instead of paying for the request twice. Shielded, so a waiter
            # that is cancelled does not cancel the request the others wait for.
            shared = await asyncio.shield(asking)
            return Judged(shared.verdict, shared.probabilities, True)
        answer: asyncio.Future[Judged] = asyncio.get_running_loop().create_future()
        answer.add_done_callback(_retrieve)
        self._asking[key] = answer
        try:
            judged = await self._ask(key, prompt, values, probe)
        except asyncio.CancelledError:
            answer.cancel()
            raise
        except BaseException as exc:
            answer.set_exception(exc)
            raise
        else:
            answer.set_result(judged)
            return judged
        finally:
            self._asking.pop(key, None)

    async def _ask(
        self, key: str, prompt: Prompt, values: Mapping[str, InputValue], probe: RubricProbe | None
    ) -> Judged:
        """The server's verdict under `key`, cached when valid, its failure recorded when a retry would repeat it."""
        self.raise_if_recorded(key)
        try:
            completion = await self.client.complete(
                prompt, values, answer_in_input_language=self.settings.answer_in_input_language, probe=probe
            )
        except JudgeError as exc:
            if exc.cause in RECORDED_CAUSES and not isinstance(exc, BreakerOpen):
                self.cache.put_failure(key, prompt.name, exc.cause, str(exc))
            raise
        value: Any = dump_verdict(completion.verdict)
        if probe is not None:
            value = {"verdict": value, "probabilities": completion.probabilities}
        self.cache.put(key, prompt.name, value, completion.usage.as_dict())
        return Judged(completion.verdict, completion.probabilities, False)

    def stored(
        self, key: str, prompt: Prompt, values: Mapping[str, InputValue], probe: RubricProbe | None
    ) -> Judged | None:
        """The cached verdict under `key` if it still validates (an invalid one is discarded, never used)."""
        cached = self.cache.get(key)
        if cached is None:
            return None
        stored = cached.value
        probabilities = None
        if probe is not None and isinstance(stored, dict) and set(stored) == {"verdict", "probabilities"}:
            stored, probabilities = stored["verdict"], stored["probabilities"]
        try:
            verdict = prompt.model.model_validate(stored, context=prompt.validation_context(values))
            if probabilities is not None and not _probabilities_valid(probabilities, probe):
                raise ValueError("stored probabilities are not a distribution over the rating's values")
        except ValueError:  # pydantic's ValidationError included
            self.cache.discard_hit()
            return None
        known = {k: int(v) for k, v in cached.usage.items() if k in _USAGE_FIELDS}
        self.cached_usage.add(CallUsage(**known))
        return Judged(verdict, probabilities, True)

    def verdicts_usage(self) -> TokenUsage:
        """What the verdicts this judge gave cost, asked now or read from the cache (their recorded usage):
        the bill of judging these units with this judge, the same on a rerun that sends nothing."""
        total = CallUsage()
        total.add(self.client.usage)
        total.add(self.cached_usage)
        factor = self.settings.batch.price_factor if self.settings.batch is not None else 1.0
        return token_usage(total, self.settings.price_per_million_tokens, batch_factor=factor)

    def raise_if_recorded(self, key: str) -> None:
        """JudgeError when `key` failed before and `retry_failed` says not to ask again yet."""
        recorded = self.cache.failure(key)
        if recorded is None:
            return
        age_s = time.time() - recorded.created
        if age_s < self._retry_after_s:
            self.cache.failure_hits += 1
            when = datetime.fromtimestamp(recorded.created, UTC).strftime("%Y-%m-%d %H:%M UTC")
            raise JudgeError(
                f"{recorded.message} [recorded failure from {when}, {recorded.attempts} attempt(s); not "
                f"retried: retry_failed={self.settings.retry_failed!r}]",
                cause=_known_cause(recorded.cause),
            )
        self.cache.failure_retries += 1

    # -- metrics ---------------------------------------------------------------------------------------------

    def handlers(self) -> dict[Plan, Handler]:
        return {
            "chunk_usefulness": self._chunk_usefulness,
            "statement_attribution": self._statement_attribution,
            "sentence_relevance": self._sentence_relevance,
            "graded_relevance": self._graded_relevance,
            "question_generation": self._question_generation,
            "embedding_similarity": self._embedding_similarity,
            "statement_classification": self._statement_classification,
            "rubric": self._rubric,
            "claim_entailment": self._claim_entailment,
            "context_sufficiency": self._context_sufficiency,
        }

    def rubric_prompt(self, rubric: RubricMetric, *, leave_out: int | None = None) -> GeneratedPrompt:
        """A rubric metric's prompt over this judge's rubric texts (built once per rubric)."""
        # Keyed by the definition object, kept alive in the value so its id is never reused; per sample this
        # is a dict lookup, not a dump of the definition.
        key = (id(rubric), leave_out)
        held = self._rubric_prompts.get(key)
        if held is None or held[0] is not rubric:
            held = self._rubric_prompts[key] = (
                rubric,
                self.prompts.adjust(rubric.prompt(self.prompts.rubric, leave_out=leave_out)),
            )
        return held[1]

    async def _rubric(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        rubric: RubricMetric = spec.rubric
        return await self.rubric_outcome(rubric, sample, self.rubric_prompt(rubric))

    async def rubric_outcome(self, rubric: RubricMetric, sample: RagSample, prompt: Prompt) -> MetricOutcome:
        """A rubric's verdict on `sample` through `prompt` and its score (check-metric passes a prompt
        without the anchor it is judging)."""
        probe = rubric.probe()
        judged = await self.judged(prompt, rubric.values(sample), probe)
        why = ""
        if probe is not None and judged.probabilities is None:
            why = (
                "the server returned no log-probabilities usable for it (none, or only the sampled token's with no "
                "alternative): the sampled level's score"
            )
        value, detail = rubric.outcome(
            judged.verdict, judged.probabilities, cached=judged.cached, why_sampled=why
        )
        return MetricOutcome(value=value, detail=detail)

    async def _similarity(self, sample: RagSample) -> float:
        vectors = await self.embedder.embed([str(sample.answer).strip(), str(sample.reference).strip()])
        return formulas.answer_similarity_score(vectors[0].tolist(), vectors[1].tolist())

    async def _embedding_similarity(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        value = await self._similarity(sample)
        detail = JudgeDetail(
            verdicts=[{"cosine": round(value, 6), "reason": "cosine of the answer and reference embeddings"}],
            reason=f"embedding similarity of answer and reference = {value:.4f} ({self.embedder.name})",
        )
        return MetricOutcome(value=value, detail=detail)

    async def _statement_classification(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        answer_statements = split_statements(str(sample.answer), sample.language)
        reference_statements = split_statements(str(sample.reference), sample.language)
        if not reference_statements:
            raise JudgeError(
                f"sample {sample.id!r}: the reference contains no statements", cause="missing_field"
            )
        cached = True
        tp, fp, fn = 0, 0, len(reference_statements)
        verdicts: list[dict[str, Any]] = []
        if answer_statements:
            values: dict[str, InputValue] = {
                "question": sample.question,
                "answer_statements": answer_statements,
                "reference_statements": reference_statements,
            }
            verdict, cached = await self.verdict(spec.prompts[0], values)
            assert isinstance(verdict, CorrectnessVerdicts)
            tp, fp, fn = verdict.counts()
            answer_sorted = sorted(verdict.answer_statements, key=lambda j: j.statement)
            reference_sorted = sorted(verdict.reference_statements, key=lambda j: j.statement)
            verdicts += [
                {"side": "answer", "statement": t, "verdict": j.in_reference, "class": "TP" if j.in_reference else "FP",
                 "reason": j.reason}
                for t, j in zip(answer_statements, answer_sorted, strict=True)
            ]  # fmt: skip
            verdicts += [
                {"side": "reference", "statement": t, "verdict": j.in_answer, "class": None if j.in_answer else "FN",
                 "reason": j.reason}
                for t, j in zip(reference_statements, reference_sorted, strict=True)
            ]  # fmt: skip
        similarity = await self._similarity(sample)
        weights = self.settings.answer_correctness_weights
        value = spec.score(tp, fp, fn, similarity, weights)
        reason = (
            f"TP {tp}, FP {fp}, FN {fn}: F1 {formulas.statement_f1(tp, fp, fn):.4f}; similarity {similarity:.4f}; "
            f"weights {weights[0]:g}/{weights[1]:g}"
        )
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason, cached=cached))

    async def _claim_entailment(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """One verdict per sample for every claim diagnostic: the eleven metrics share its cache key, and
        concurrent units asking for it share one request (`judged`)."""
        inputs = claim_inputs(sample)
        answer: list[JudgedClaim] = []
        reference = [JudgedClaim(False, [], "the answer makes no claim") for _ in inputs.reference_claims]
        cached = True
        if inputs.needs_verdict:
            values: dict[str, InputValue] = {
                "question": sample.question,
                "chunks": sample.context_list,
                "reference": str(sample.reference),
                "answer": str(sample.answer or ""),
                "answer_claims": inputs.answer_claims,
                "reference_claims": inputs.reference_claims,
            }
            verdict, cached = await self.verdict(spec.prompts[0], values)
            assert isinstance(verdict, ClaimVerdicts)
            answer_sorted, reference_sorted = verdict.ordered()
            answer = [
                JudgedClaim(j.in_reference, [k - 1 for k in sorted(j.chunks)], j.reason)
                for j in answer_sorted
            ]
            reference = [JudgedClaim(j.in_answer, [k - 1 for k in sorted(j.chunks)], j.reason) for j in reference_sorted]  # fmt: skip
        return claim_outcome(spec, sample, inputs, answer, reference, cached=cached, judge="llm")

    async def _chunk_usefulness(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        target_field = str(spec.target)
        target = str(getattr(sample, target_field))
        per_sample_prompt, per_chunk_prompt = spec.prompts
        judgements: list[tuple[bool, str]]
        if self.settings.context_precision_mode == "per_sample":
            values: dict[str, InputValue] = {
                "question": sample.question,
                target_field: target,
                "chunks": sample.context_list,
            }
            verdict, cached = await self.verdict(per_sample_prompt, values)
            assert isinstance(verdict, ChunkVerdicts)
            judgements = [(v.useful, v.reason) for v in verdict.ordered()]
        else:
            # Every chunk runs to its end even when one fails, so each verdict that can be had is cached
            # and a rerun asks only for the chunks that failed.
            outcomes = await asyncio.gather(
                *(
                    self.verdict(
                        per_chunk_prompt, {"question": sample.question, target_field: target, "chunk": chunk}
                    )
                    for chunk in sample.context_list
                ),
                return_exceptions=True,
            )
            judgements = []
            cached = True
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    raise outcome
                single, was_cached = outcome
                assert isinstance(single, SingleChunkVerdict)
                judgements.append((single.useful, single.reason))
                cached = cached and was_cached
        verdicts: list[dict[str, Any]] = [
            {"chunk": k, "verdict": useful, "reason": reason} for k, (useful, reason) in enumerate(judgements)
        ]
        useful_count = sum(1 for useful, _ in judgements if useful)
        return MetricOutcome(
            value=spec.score([useful for useful, _ in judgements]),
            detail=JudgeDetail(
                verdicts=verdicts,
                reason=f"{useful_count} of {len(judgements)} chunks useful for the {target_field}",
                cached=cached,
            ),
        )

    async def _statement_attribution(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        target_field = str(spec.target)
        statements = target_statements(spec, sample)
        values: dict[str, InputValue] = {
            "question": sample.question,
            "chunks": sample.context_list,
            target_field: str(getattr(sample, target_field)),
            "statements": statements,
        }
        verdict, cached = await self.verdict(spec.prompts[0], values)
        assert isinstance(verdict, StatementVerdicts | SupportVerdicts)
        ordered: list[StatementJudgement | SupportJudgement] = list(verdict.ordered())
        flags = [bool(getattr(j, spec.verdict_flag)) for j in ordered]
        verdicts: list[dict[str, Any]] = []
        for text, judgement, flag in zip(statements, ordered, flags, strict=True):
            item: dict[str, Any] = {"statement": text, "verdict": flag, "reason": judgement.reason}
            if isinstance(judgement, SupportJudgement) and judgement.chunk:
                item["chunk"] = (
                    judgement.chunk - 1
                )  # 0-based like every index in results; reports print from 1
            verdicts.append(item)
        hits = sum(flags)
        how = "supported by" if spec.verdict_flag == "supported" else "attributed to"
        return MetricOutcome(
            value=spec.score(flags),
            detail=JudgeDetail(
                verdicts=verdicts,
                reason=f"{hits} of {len(verdicts)} {target_field} statements {how} the contexts",
                cached=cached,
            ),
        )

    async def _graded_relevance(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """One graded call per context; the value is the best grade / 3 (with one context, that passage's)."""
        results = await asyncio.gather(
            *(
                self.verdict(spec.prompts[0], {"question": sample.question, "passage": c})
                for c in sample.context_list
            )
        )
        verdicts: list[dict[str, Any]] = []
        for k, (verdict, _cached) in enumerate(results):
            assert isinstance(verdict, GradedRelevance)
            verdicts.append({"chunk": k, "grade": verdict.grade, "reason": verdict.reason})
        best = max(verdicts, key=lambda v: v["grade"])
        return MetricOutcome(
            value=spec.score(best["grade"]),
            detail=JudgeDetail(
                verdicts=verdicts,
                reason=f"best grade {best['grade']} of 3 (chunk {best['chunk'] + 1}): {best['reason']}",
                cached=all(cached for _, cached in results),
            ),
        )

    async def _context_sufficiency(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """One call with every context, numbered: sufficiency is a property of the contexts together (a
        multi-hop answer joins facts from several), so they are never judged one by one."""
        verdict, cached = await self.verdict(
            spec.prompts[0], {"question": sample.question, "contexts": list(sample.context_list)}
        )
        assert isinstance(verdict, SufficiencyVerdict)
        said = "sufficient" if verdict.sufficient else "insufficient"
        return MetricOutcome(
            value=spec.score(verdict.sufficient),
            detail=JudgeDetail(
                verdicts=[{"sufficient": verdict.sufficient, "reason": verdict.reason}],
                reason=f"context {said}: {verdict.reason}",
                cached=cached,
            ),
        )

    async def _sentence_relevance(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        located = [
            (k, s) for k, ctx in enumerate(sample.context_list) for s in split_sentences(ctx, sample.language)
        ]
        if not located:
            raise JudgeError(
                f"sample {sample.id!r}: the contexts contain no sentences", cause="missing_field"
            )
        values: dict[str, InputValue] = {"question": sample.question, "sentences": [s for _, s in located]}
        verdict, cached = await self.verdict(spec.prompts[0], values)
        assert isinstance(verdict, SentenceVerdicts)
        ordered = verdict.ordered()
        verdicts: list[dict[str, Any]] = [
            {"chunk": k, "sentence": s, "verdict": v.relevant, "reason": v.reason}
            for (k, s), v in zip(located, ordered, strict=True)
        ]
        hits = sum(1 for v in ordered if v.relevant)
        return MetricOutcome(
            value=spec.score([v.relevant for v in ordered]),
            detail=JudgeDetail(
                verdicts=verdicts,
                reason=f"{hits} of {len(verdicts)} context sentences relevant to the question",
                cached=cached,
            ),
        )

    async def _question_generation(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        n = self.settings.answer_relevancy_questions
        verdict, cached = await self.verdict(
            spec.prompts[0],
            {
                "answer": str(sample.answer),
                "n_questions": n,
                "language": language_name(sample.question_language),
            },
        )
        assert isinstance(verdict, GeneratedQuestions)
        texts = [sample.question, *(q.question for q in verdict.questions)]
        vectors = await self.embedder.embed(texts)
        q_vec, gen_vecs = vectors[0], vectors[1:]
        sims = (gen_vecs @ q_vec).astype(np.float64).tolist()
        flags = [q.noncommittal for q in verdict.questions]
        rule = self.settings.noncommittal_rule
        raw = spec.score(q_vec.tolist(), gen_vecs.tolist(), flags, rule=rule)
        # A negative mean cosine (questions unrelated to the asked one) counts as 0, keeping scores in [0, 1].
        value = min(1.0, max(0.0, raw))
        verdicts: list[dict[str, Any]] = [
            {"question": q.question, "noncommittal": q.noncommittal, "cosine": round(sim, 6)}
            for q, sim in zip(verdict.questions, sims, strict=True)
        ]
        if is_noncommittal(flags, rule):
            reason = f"answer judged noncommittal (rule '{rule}'): score 0"
        elif raw < 0:
            reason = f"mean cosine of the question with {len(verdicts)} generated questions is {raw:.4f}, counted as 0"
        else:
            reason = f"mean cosine of the question with {len(verdicts)} generated questions"
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason, cached=cached))


def _retrieve(answer: asyncio.Future[Judged]) -> None:
    """Mark a shared answer's exception as seen: the unit that asked raises it itself, so asyncio must not
    also log it as never retrieved when no other unit was waiting."""
    if not answer.cancelled():
        answer.exception()


def _known_cause(cause: str) -> FailureCause:
    """A recorded cause as the closed set takes it (a cache written by a newer version may hold others)."""
    for known in RECORDED_CAUSES:
        if cause == known:
            return known
    return "invalid_output"


def make_embedder(
    settings: JudgeSettings, client: JudgeClient, cache: VerdictCache, retry: RetryPolicy | None = None
) -> Embedder:
    """The embedder `settings.embeddings` asks for: the judge's own endpoint by default, the built-in local
    model, or a second OpenAI-compatible endpoint with its own base_url, model and key variable. The second
    endpoint's requests are the judge's too: counted with its chat client's (its `max_requests`, the night's
    shared budget, its usage and cost), or a budget would bound only half of what the night sends."""
    chosen = settings.embeddings
    if chosen is None:
        return OpenAIEmbedder(client, cache=cache)
    if chosen.backend == "local":
        from ragmetrics.embeddings.minilm import MiniLMEmbedder
        from ragmetrics.judge.embedding_store import StoredEmbedder

        return StoredEmbedder(MiniLMEmbedder(), cache, backend="local")
    model = chosen.model or settings.embedding_model
    if chosen.base_url is None and chosen.api_key_env is None:
        return OpenAIEmbedder(client, model, cache=cache, pooling=chosen.pooling)
    own = settings.model_copy(
        update={
            "base_url": chosen.base_url if chosen.base_url is not None else settings.base_url,
            "api_key_env": chosen.api_key_env or settings.api_key_env,
            "embedding_model": model,
        }
    )
    second = JudgeClient(own, prompts=client.prompts, retry=retry, counted_with=client)
    return OpenAIEmbedder(second, model, cache=cache, pooling=chosen.pooling, owns_client=True)
