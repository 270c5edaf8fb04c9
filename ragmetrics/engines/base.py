"""The engine seam: what the nightly pipeline asks of whoever computes scores, and the in-process engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ragmetrics._async import run_sync
from ragmetrics.judge.base import Judge, RagSample
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.options import QuerySet
from ragmetrics.schema import JudgeInfo, RunResult

__all__ = ["Engine", "JudgeSession", "LocalEngine", "make_engine"]


class JudgeSession(Protocol):
    """One judge (one cache, one usage count) over several runs' samples."""

    def score(
        self, samples: Sequence[RagSample], metrics: Sequence[str], *, name: str, progress: bool
    ) -> RunResult: ...

    def info(self) -> JudgeInfo: ...

    def close(self) -> None: ...


class Engine(Protocol):
    """Computes retrieval scores and judge verdicts; results are identical whichever engine computes them."""

    name: str

    def score_retrieval(
        self,
        qrels: Any,
        run: Any,
        metrics: Sequence[str],
        *,
        query_set: QuerySet,
        name: str,
        lengths: Any = None,
        straddle: str = "exclude",
    ) -> RunResult: ...

    def judge_session(self, settings: JudgeSettings) -> JudgeSession: ...

    def close(self) -> None: ...


class InProcessJudgeSession:
    """A judge scoring in this process: the local engine's session, and each member of a cascade."""

    def __init__(self, judge: Judge) -> None:
        self._judge = judge

    def score(
        self, samples: Sequence[RagSample], metrics: Sequence[str], *, name: str, progress: bool
    ) -> RunResult:
        from ragmetrics.judge.evaluate import evaluate_rag

        return evaluate_rag(samples, metrics, self._judge, name=name, progress=progress)

    def info(self) -> JudgeInfo:
        return self._judge.info()

    def close(self) -> None:
        run_sync(self._judge.aclose())


class _LocalJudgeSession(InProcessJudgeSession):
    def __init__(self, settings: JudgeSettings) -> None:
        from ragmetrics.judge.select import make_judge

        super().__init__(make_judge(settings))


class LocalEngine:
    """Everything in this process: the kernels on one core, the judge's requests from one event loop."""

    name = "local"

    def score_retrieval(
        self,
        qrels: Any,
        run: Any,
        metrics: Sequence[str],
        *,
        query_set: QuerySet,
        name: str,
        lengths: Any = None,
        straddle: str = "exclude",
    ) -> RunResult:
        from ragmetrics.retrieval.evaluate import evaluate

        return evaluate(
            qrels, run, metrics, query_set=query_set, name=name, lengths=lengths, straddle=straddle
        )

    def judge_session(self, settings: JudgeSettings) -> JudgeSession:
        return _LocalJudgeSession(settings)

    def close(self) -> None:
        return None


def make_engine(kind: str, **options: Any) -> Engine:
    """The engine a config names: 'local', or 'ray' with the Ray options (address, workers, ...)."""
    if kind == "local":
        return LocalEngine()
    if kind == "ray":
        from ragmetrics.engines.ray import RayEngine

        return RayEngine(**options)
    raise ValueError(f"unknown engine {kind!r}; choose 'local' or 'ray'")
