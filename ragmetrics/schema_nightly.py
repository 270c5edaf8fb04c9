"""The nightly job's own record in a report (`ReportMetadata.nightly`): what data it read and where its
relevance grades came from, the samples' texts, what the night cost against its estimate, an adaptive night's
decisions, formatting checks, retrievers' time and the gate's verdict."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ragmetrics.schema_base import _Model
from ragmetrics.schema_comparison import PairComparison
from ragmetrics.schema_gate import GateResult
from ragmetrics.schema_run import JudgeInfo
from ragmetrics.schema_sufficiency import SufficiencySection
from ragmetrics.schema_utility import UtilityOrigin


class SkippedRow(_Model):
    """A dataset row left out under `on_invalid: skip`, with where and why."""

    row: int
    field: str | None = None
    column: str | None = None
    message: str


class SourceOnlyCheck(_Model):
    """The night's retrieval runs compared again on source-only qrels: each question's own source chunk (and
    byte-identical copies of it), no grade from a judge or person. Its verdict beside the pooled one says how
    far a retrieval verdict rests on the pool's grader (`nightly.source_only`)."""

    questions: int = Field(ge=0, description="questions with a source chunk, the ones compared here")
    metrics: list[str] = Field(description="the retrieval metrics compared on the source-only qrels")
    means: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="run -> metric -> mean on the source-only qrels"
    )
    comparisons: list[PairComparison] = Field(
        default_factory=list,
        description="every pair of runs on each metric, with the night's test, correction and alpha",
    )


class QrelsProvenance(_Model):
    """Where a dataset's relevance grades came from, and what that means for comparing runs on them."""

    source: str = Field(description="the test-set folder or dataset the qrels were read from")
    relevant: int = Field(ge=0, description="relevant grades (grade >= 1)")
    by_origin: dict[str, int] = Field(
        description="relevant grades per origin: 'source' (the chunk a question was written from), 'judge' "
        "(the pooling judge), 'person' (a review), or 'dataset' (the dataset's own, origin not recorded)"
    )
    pool_runs: list[str] = Field(
        default_factory=list, description="the runs whose top-k was pooled and judged"
    )
    pool_judge: dict[str, str | None] | None = Field(
        default=None, description="who graded the pool: backend, model, embedding_model"
    )
    shared_with_copies: int = Field(
        default=0, description="grades a chunk got because a copy of its text was graded (testset.duplicates)"
    )
    pool_members: list[dict[str, Any]] = Field(
        default_factory=list,
        description="what each pooled run was (testset.json pool.members): name, and for a reference retriever "
        "its kind, ranking settings and models",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="compared runs the qrels may favour: runs that were pooled, or that rank with the pooling "
        "judge's model",
    )
    favoured: list[str] = Field(
        default_factory=list, description="the compared runs the warnings name, in the order warned"
    )
    unchecked: list[str] = Field(
        default_factory=list,
        description="compared runs whose ranker ragmetrics did not build (a team's pipeline, a run file), so "
        "whether the pool favours them could not be checked",
    )
    source_only: SourceOnlyCheck | None = Field(
        default=None, description="the retrieval runs compared again on source-only qrels (pooled test sets)"
    )
    utility: UtilityOrigin | None = Field(default=None, description="utility qrels: their utility.json")

    def describe(self) -> str:
        """One line: the share of relevant grades from each origin, and who graded the pool."""
        made = f"; {self.utility.describe()}" if self.utility is not None else ""
        if not self.relevant:
            return f"qrels of {self.source}: no relevant grades{made}"
        names = {"source": "the questions' source chunks", "judge": "the pooling judge",
                 "person": "people", "dataset": "the dataset (origin not recorded)",
                 "utility": "utility judgments"}  # fmt: skip
        parts = [
            f"{count / self.relevant:.0%} from {names.get(origin, origin)}"
            + (f" ({_judge_name(self.pool_judge)})" if origin == "judge" and self.pool_judge else "")
            for origin, count in sorted(self.by_origin.items(), key=lambda kv: -kv[1])
            if count
        ]
        pooled = f"; pooled runs: {', '.join(self.pool_runs)}" if self.pool_runs else ""
        copies = (
            f"; {self.shared_with_copies} grades shared with copies of a chunk"
            if self.shared_with_copies
            else ""
        )
        return f"qrels of {self.source}: {self.relevant} relevant grades, {', '.join(parts)}{pooled}{copies}{made}"


def _judge_name(judge: dict[str, str | None]) -> str:
    model = judge.get("model") or "?"
    return f"{judge.get('backend') or '?'}: {model}"


class DatasetSummary(_Model):
    """What the nightly job read: enough to tell whether two reports scored the same data."""

    source: str
    rows_used: int
    rows_skipped: list[SkippedRow] = Field(default_factory=list)
    columns: dict[str, str] = Field(default_factory=dict, description="our field -> the dataset's column")
    ignored_columns: list[str] = Field(default_factory=list)
    generated_ids: bool = False
    qrels_queries: int = 0
    run_queries: int = 0
    passages: int | None = None
    fingerprint: str | None = None
    qrels: QrelsProvenance | None = Field(
        default=None, description="where the relevance grades came from (None: the dataset has none)"
    )


class SampleText(_Model):
    """A sample's texts, kept so the HTML drill-down can show what was judged."""

    question: str
    answer: str | None = None
    reference: str | None = None
    turn: int | None = Field(default=None, description="its turn, when it is a turn of a conversation")
    tool_calls: list[dict[str, Any]] | None = Field(
        default=None, description="the tools the system called ({name, args}), for agents"
    )


class WorkFigures(_Model):
    """Requests, tokens, dollars and seconds of one night, estimated before it or counted after it."""

    pipeline_calls: int = 0
    generator_calls: int = 0
    judge_calls: int = Field(default=0, description="chat requests of the LLM judge")
    embedding_calls: int = Field(default=0, description="embedding requests of the LLM judge")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_tokens: int = 0
    cost_usd: float | None = Field(default=None, description="None: no price table in the config")
    cost_usd_batch: float | None = Field(
        default=None, description="the judge's chat requests at batch prices instead (judge.batch)"
    )
    judge_units: int = Field(default=0, description="(sample, metric) pairs judged")
    cached_verdicts: int = 0
    chunks_embedded: int | None = Field(
        default=None,
        description="chunks the reference retrievers sent to the embedding model (their persisted index had no "
        "vector for them: 0 on a night over chunks embedded before); None: not counted (no index_dir)",
    )
    seconds: dict[str, float] = Field(
        default_factory=dict,
        description="stage -> seconds: 'pipeline' and 'generator' (their calls only; ~0 when every output came "
        "from the cache), 'retriever index' (building the retrievers' indexes), 'retrieval' (their searches), "
        "'judge'",
    )

    @property
    def calls(self) -> int:
        return self.pipeline_calls + self.generator_calls + self.judge_calls + self.embedding_calls


class NightWork(_Model):
    """What the night was estimated to cost before it ran, what it cost, and how the estimate was made."""

    estimate: WorkFigures
    actual: WorkFigures | None = None
    assumptions: list[str] = Field(default_factory=list)


class AdaptiveDecision(_Model):
    """One decision of an adaptive night and where it stands (comparison.adaptive)."""

    kind: Literal["pair", "gate", "precision"]
    metric: str
    run: str
    other: str | None = None
    threshold: float = 0.0
    verdict: str = "unsettled"
    settled_at: int | None = Field(default=None, description="questions judged when it was settled")
    n: int = Field(default=0, description="questions it was last updated on")
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    signal_weight: float | None = Field(
        default=None, description="the free signal's weight (lambda) at the end"
    )
    signal_correlation: float | None = Field(
        default=None, description="correlation of the judged values with the free signal's"
    )
    text: str = ""


class AdaptiveSummary(_Model):
    """What an adaptive night judged and decided, and what it spent against a full night."""

    questions: int = Field(description="questions the full night would judge")
    judged: int = Field(description="questions judged before every decision was settled (or the budget)")
    stopped: Literal["settled", "budget", "all_judged"]
    alpha: float
    batch_size: int
    seed: int
    decisions: list[AdaptiveDecision] = Field(default_factory=list)
    units: int = Field(default=0, description="(question, run, metric) scores judged")
    units_full: int = Field(default=0, description="(question, run, metric) scores a full night would judge")
    calls: int = 0
    calls_full_estimate: int | None = Field(
        default=None, description="judge requests a full night would make, at tonight's rate per question"
    )
    cost_usd: float | None = None
    not_judged: list[str] = Field(default_factory=list, description="question ids left unjudged")
    signal: str | None = Field(default=None, description="the free signal used as a control variate")
    target: Literal["population", "questions"] = Field(
        default="population", description="what pair and gate decisions are about"
    )


class FormattingCheck(_Model):
    """A judge metric re-scored on some of the night's answers with only their formatting changed
    (`judge.text.formatting` holds the rule): whether the metric moved with the formatting."""

    metric: str
    checked: int = Field(description="answers re-scored (all-or-nothing scores, a fixed sample per run)")
    changed: int = Field(description="answers whose score moved when only their formatting did")
    by_perturbation: dict[str, int] = Field(
        default_factory=dict, description="perturbation -> answers it moved"
    )
    depends: bool = Field(description="the metric depends on formatting on this night's data")
    text: str


class RetrieverSeconds(_Model):
    """Where a reference retriever's time went in a night: its index, built once, and each question's search.

    Apart from the pipeline's and generator's calls: building a dense index embeds the whole corpus, which is a
    cost of the night, not of any question; each question's search (and rerank) is part of its latency_s."""

    index_s: float = Field(description="seconds building the index (tokenising, embedding the passages)")
    search_s: dict[str, float] = Field(
        default_factory=dict, description="query id -> seconds its retrieval and rerank took"
    )
    embedded: int | None = Field(
        default=None, description="chunks it sent to the embedding model (None: not counted, no index_dir)"
    )
    reused: int | None = Field(
        default=None, description="chunk vectors or indexes it read from the persisted index instead"
    )


class NightlyRun(_Model):
    """The nightly job's own record: which config, what data, who judged, what failed, how long, the gate."""

    name: str
    dataset: DatasetSummary
    judge: JudgeInfo | None = None
    failures: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="run -> metric -> number of failed scores"
    )
    samples: dict[str, SampleText] = Field(default_factory=dict)
    timings_s: dict[str, float] = Field(default_factory=dict)
    regression: GateResult | None = None
    work: NightWork | None = Field(
        default=None, description="calls, tokens, cost and time: estimate and actual"
    )
    incomplete: list[str] = Field(
        default_factory=list,
        description="run/metric pairs whose failed share exceeded max_failure_rate: the night is incomplete",
    )
    adaptive: AdaptiveSummary | None = Field(
        default=None, description="an adaptive night's decisions, and what it judged and spent"
    )
    formatting: list[FormattingCheck] = Field(
        default_factory=list,
        description="judge metrics with a significant difference, re-scored with only the answers' formatting "
        "changed: a metric that moves is not declared different in the verdict",
    )
    retrievers: dict[str, RetrieverSeconds] = Field(
        default_factory=dict,
        description="retriever run -> its index building and per-question search seconds",
    )
    sufficiency: SufficiencySection | None = Field(
        default=None,
        description="the sufficient-context breakdown of each run with context_sufficiency, and of each pair",
    )
